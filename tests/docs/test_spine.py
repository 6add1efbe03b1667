"""The spine, "The Transformer, in the order it runs", is joined to the rest of the book.

Read from the pages themselves, so a new stage page or a new concept link is checked
without editing this file:

* every stage page (`docs/pipeline/<digit>*.md`, in file-name order, which is the order it
  runs) has a "Go deeper" section that links the previous and the next stage (the overview
  before the first and after the last) and at least one concept page outside `docs/pipeline/`;
* every concept page a stage links there links back to that stage page;
* every stage page says what its tensors mean, not only their shapes;
* the rest of the book links into the spine: the home page, "How to read this book", and
  at least `MIN_PAGES_LINKING_IN` pages outside `docs/pipeline/` in all.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PIPELINE = DOCS / "pipeline"
STAGES = sorted(p.name for p in PIPELINE.glob("[0-9]*.md"))
OVERVIEW = "pipeline/index.md"
MIN_PAGES_LINKING_IN = 25
MUST_LINK_IN = ["index.md", "start/how-to-read.md"]
LINK = re.compile(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def text(page: str) -> str:
    return FENCE.sub("", (DOCS / page).read_text(encoding="utf-8"))


def links(page: str, markdown: str | None = None) -> set[str]:
    """The pages (relative to docs/) that `page`'s Markdown links to."""
    base = PurePosixPath(page).parent
    found = set()
    for target in LINK.findall(text(page) if markdown is None else markdown):
        parts = []
        for part in (base / target).parts:
            if part == "..":
                parts.pop()
            elif part != ".":
                parts.append(part)
        found.add("/".join(parts))
    return found


def go_deeper(page: str) -> str:
    match = re.search(r"^## Go deeper\n(.*?)(?=^## |\Z)", text(page), re.S | re.M)
    assert match, f"{page} has no '## Go deeper' section"
    return match.group(1)


def neighbours(i: int) -> tuple[str, str]:
    previous = f"pipeline/{STAGES[i - 1]}" if i > 0 else OVERVIEW
    following = f"pipeline/{STAGES[i + 1]}" if i + 1 < len(STAGES) else OVERVIEW
    return previous, following


def concepts(stage: str) -> list[str]:
    return sorted(p for p in links(f"pipeline/{stage}", go_deeper(f"pipeline/{stage}")) if not p.startswith("pipeline/"))


def test_the_spine_has_its_stages():
    assert len(STAGES) == 13 and STAGES[0].startswith("01") and STAGES[-1].startswith("08")


@pytest.mark.parametrize("i", range(len(STAGES)), ids=STAGES)
def test_stage_links_its_neighbours_and_a_concept_page(i):
    page = f"pipeline/{STAGES[i]}"
    linked = links(page, go_deeper(page))
    previous, following = neighbours(i)
    assert previous in linked, f"{page}: 'Go deeper' does not link the previous stage {previous}"
    assert following in linked, f"{page}: 'Go deeper' does not link the next stage {following}"
    assert concepts(STAGES[i]), f"{page}: 'Go deeper' links no concept page outside docs/pipeline/"
    for concept in concepts(STAGES[i]):
        assert (DOCS / concept).is_file(), f"{page}: links {concept}, which does not exist"


BACKLINKS = [(stage, concept) for stage in STAGES for concept in concepts(stage)]


@pytest.mark.parametrize("stage, concept", BACKLINKS, ids=[f"{c}->{s}" for s, c in BACKLINKS])
def test_concept_page_links_back_to_its_stage(stage, concept):
    assert f"pipeline/{stage}" in links(concept), f"{concept} is linked from stage {stage} but does not link back to it"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_says_what_its_tensors_mean(stage):
    match = re.search(r"\*\*What the numbers mean\.\*\*(.*?)\n\n", text(f"pipeline/{stage}"), re.S)
    assert match, f"pipeline/{stage} has no 'What the numbers mean' paragraph"
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", match.group(1).strip()) if s]
    assert 2 <= len(sentences) <= 5, f"pipeline/{stage}: {len(sentences)} sentences"


def test_the_book_links_into_the_spine():
    outside = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if PIPELINE not in p.parents]
    linking = sorted(p for p in outside if any(target.startswith("pipeline/") for target in links(p)))
    for page in MUST_LINK_IN:
        assert page in linking, f"{page} does not link into docs/pipeline/"
    assert len(linking) >= MIN_PAGES_LINKING_IN, f"only {len(linking)} pages outside docs/pipeline/ link into it: {linking}"
