"""The book's sources are ones a reader can open: papers on the References page, cited inline.

`docs/reference/references.md` lists every paper the pages take a result or number from, one
paragraph per entry with a stable anchor (`{: #vaswani2017 }`) and a link to the paper. The
pages cite them as `[Vaswani et al., 2017](../reference/references.md#vaswani2017)`. Checked here:

* every entry is well formed (authors, year, bold title, italic venue, an https link) and its
  anchor is unique;
* every citation on a page names an existing entry, and every entry is cited somewhere;
* a citation's visible year is the entry's year;
* no page refers the reader to a document they cannot open ("the lecture", "the transcript",
  "the seed's", "the source's", "the course material");
* no page makes an undated time-sensitive claim ("recent models", "most current", "today's models").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCES = DOCS / "reference" / "references.md"

ENTRY = re.compile(
    r"^(?P<authors>.+?) \((?P<year>\d{4})\)\. \*\*(?P<title>.+?)\*\*\. \*(?P<venue>.+?)\*\. "
    r"<a href=\"(?P<url>https://[^\"]+)\">[^<]+</a>\n\{: #(?P<key>[a-z]+\d{4}) \}$",
    re.M,
)
CITATION = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<path>(?:\.\./)*reference/references\.md)#(?P<key>[^)\s]+)\)")

# The papers the issue asks the References page to list.
REQUIRED = [
    "vaswani2017",
    "radford2018",
    "radford2019",
    "brown2020",
    "devlin2019",
    "raffel2020",
    "peters2018",
    "mikolov2013",
    "bahdanau2015",
    "sennrich2016",
    "ba2016",
    "hendrycks2016",
    "he2016",
    "xiong2020",
    "zhang2019",
    "su2021",
    "press2022",
    "shaw2018",
    "kaplan2020",
    "hoffmann2022",
    "shazeer2017",
    "fedus2022",
    "lepikhin2021",
    "dai2024",
    "shazeer2019",
    "ainslie2023",
    "dao2022",
    "beltagy2020",
    "child2019",
    "touvron2023",
    "holtzman2020",
    "fan2018",
    "wei2022",
    "wang2023",
    "hinton2015",
    "pope2022",
    "kwon2023",
    "press2017",
    "hochreiter1997",
]

# Phrases that send the reader to a document outside the book: (pattern, why).
UNREADABLE = [
    (r"\blectur(?:e|es|er)\b", "a lecture the reader cannot open"),
    (r"\btranscript\b", "a transcript the reader cannot open"),
    (r"\bthe seed's\b", "a source document"),
    (r"\bthe sources?'s?\b(?! (?:sentence|token|text of the translation|language|side|positions?|document)\b)", "the source documents"),
    (r"\bcourse material\b", "the course material"),
    (r"\bthis course (?:follows|draws on)\b", "the course's sources"),
]
# Where a phrase is meant in another sense: page -> patterns allowed there.
ALLOWED = {
    "embed-in-your-course.md": {r"\blectur(?:e|es|er)\b"},  # the reader's own lecture notes
    "attention/seq2seq.md": {UNREADABLE[3][0]},  # the source sentence of a translation
    "attention/three-kinds.md": {UNREADABLE[3][0]},
    "attention/matrix-form.md": {UNREADABLE[3][0]},
    "families/overview.md": {UNREADABLE[3][0]},
    "families/encoder-decoder.md": {UNREADABLE[3][0]},
    "families/gpt3-data.md": {UNREADABLE[3][0]},  # a source of training data
    "families/llama.md": {UNREADABLE[3][0]},
}


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p != REFERENCES)


def entries() -> dict[str, dict]:
    text = REFERENCES.read_text(encoding="utf-8")
    found = {}
    for match in ENTRY.finditer(text):
        assert match["key"] not in found, f"duplicate anchor {match['key']}"
        found[match["key"]] = match.groupdict()
    return found


def citations() -> list[tuple[str, str, str, str]]:
    """(page, link path, anchor, visible text) for every citation of the References page."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in CITATION.finditer(text):
            out.append((page.relative_to(DOCS).as_posix(), match["path"], match["key"], match["text"]))
    return out


def test_every_entry_is_well_formed():
    text = REFERENCES.read_text(encoding="utf-8")
    paragraphs = [p for p in text.split("\n\n") if p.startswith(tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")) and "{: #" in p]
    found = entries()
    assert len(paragraphs) == len(found), "an entry does not match the expected form"
    assert len(found) >= 40
    for key, entry in found.items():
        assert key.endswith(entry["year"]), f"{key}: the anchor's year is not the entry's {entry['year']}"
        assert entry["authors"].split(",")[0].split()[-1].lower().replace("-", "")[:4] in key.replace("-", "") or key in {
            "deepseek2024",
            "llama2024",
            "kimi2025",
            "gemma2024",
            "gemini2024",
        }, key


@pytest.mark.parametrize("key", REQUIRED)
def test_the_required_papers_are_listed(key):
    assert key in entries()


def test_every_citation_resolves_and_every_entry_is_cited():
    found = entries()
    cited = citations()
    broken = [f"{page}: #{key}" for page, _, key, _ in cited if key not in found]
    assert not broken, "citations of missing entries:\n" + "\n".join(broken)
    uncited = sorted(set(found) - {key for _, _, key, _ in cited})
    assert not uncited, f"entries no page cites: {uncited}"


def test_citation_paths_are_relative_to_the_page():
    for page, path, key, _ in citations():
        depth = page.count("/")
        assert path == "../" * depth + "reference/references.md", f"{page}: {path}#{key}"


def test_a_citation_shows_the_entry_year():
    found = entries()
    # A link whose text carries no year (such as "references") is not a citation of one paper.
    wrong = [
        f"{page}: [{text}] -> {key}" for page, _, key, text in citations() if key in found and re.search(r"\d{4}", text) and found[key]["year"] not in text
    ]
    assert not wrong, "\n".join(wrong)


def test_no_page_points_to_a_document_the_reader_cannot_open():
    hits = []
    for page in pages():
        name = page.relative_to(DOCS).as_posix()
        text = page.read_text(encoding="utf-8")
        for pattern, why in UNREADABLE:
            if pattern in ALLOWED.get(name, set()):
                continue
            for match in re.finditer(pattern, text, re.I):
                line = text.count("\n", 0, match.start()) + 1
                hits.append(f"{name}:{line}: {match.group(0)!r} ({why})")
    assert not hits, "\n".join(hits)


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("The lecture this course follows says so.", True),
        ("As the transcript puts it.", True),
        ("In the seed's running example.", True),
        ("The source's summary row.", True),
        ("The random seed is fixed.", False),
        ("The source sentence is read in full.", False),
        ("The open-source code.", False),
    ],
)
def test_the_phrase_check_itself(text, caught):
    assert any(re.search(pattern, text, re.I) for pattern, _ in UNREADABLE) == caught


# Time-sensitive wording that needs a date ("as of October 2026", "in 2024", "released from 2023
# to 2026"): a page that says "recent models" or "today's" without one ages silently.
UNDATED = re.compile(
    r"\b(?:most current|current (?:large )?(?:language )?models|recent (?:large |open |MoE )*(?:models|designs|ones|LLMs)"
    r"|today's (?:models|assistants|large)|nowadays|these days)\b",
    re.I,
)


def test_time_sensitive_claims_are_dated():
    hits = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in UNDATED.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            hits.append(f"{page.relative_to(DOCS).as_posix()}:{line}: {match.group(0)!r}")
    assert not hits, "undated time-sensitive claims:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("RoPE, which most recent models use.", True),
        ("the method most current large language models use", True),
        ("Recent ones use hundreds of experts.", True),
        ("most large open models released from 2023 to 2026 use", False),
        ("the most recent tokens", False),
    ],
)
def test_the_date_check_itself(text, caught):
    assert bool(UNDATED.search(text)) == caught
