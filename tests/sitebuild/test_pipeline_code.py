"""The code on the pipeline pages is the code in model_export/gpt2.py, included at build time."""

import html
import re
from pathlib import Path

import pytest
from site_under_test import SITE

from sitebuild import pipeline_hook as hook

ROOT = Path(__file__).resolve().parents[2]


PAGES = sorted((ROOT / "docs" / "pipeline").glob("*.md"))
STAGES = [p for p in PAGES if p.name != "index.md"]


def markers(page):
    return list(hook.MARKER.finditer(page.read_text(encoding="utf-8")))


def source_lines(snippet):
    return (ROOT / snippet.path).read_text(encoding="utf-8").splitlines()[snippet.first - 1 : snippet.last]


def test_every_stage_page_shows_code():
    assert len(STAGES) == 13
    for page in STAGES:
        assert markers(page), f"{page.name} has no code marker"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_snippets_are_the_source_lines(page):
    for m in markers(page):
        snippet = hook.extract_snippet(m["path"], m["name"], m["start"], m["end"])
        original = source_lines(snippet)
        shown = snippet.text.split("\n")
        indent = min(len(line) - len(line.lstrip()) for line in original if line.strip())
        assert shown == [line[indent:] for line in original]
        if m["start"]:
            assert m["start"] in original[0] and m["end"] in original[-1]
        block = hook.render_snippet(snippet)
        assert f"lines {snippet.first}–{snippet.last}" in block or f"line {snippet.first}" in block
        assert snippet.text in block


def test_expanded_page_has_no_marker_left():
    for page in PAGES:
        text = hook.expand_code_markers(page.read_text(encoding="utf-8"))
        assert "<!-- code:" not in text


def test_whole_definition_and_decorators():
    snippet = hook.extract_snippet("model_export/gpt2.py", "GPT2.from_hf")
    assert snippet.text.startswith("@classmethod\ndef from_hf(")
    assert source_lines(snippet)[0].strip() == "@classmethod"


@pytest.mark.parametrize(
    "args, message",
    [
        (("model_export/gpt2.py", "NoSuchClass"), "no definition"),
        (("model_export/gpt2.py", "GPT2.forward", "this text is not there", "x"), "contains"),
        (("model_export/gpt2.py", "GPT2.forward", "tok_emb =", None), "both"),
        (("model_export/missing.py", "GPT2"), "does not exist"),
    ],
)
def test_bad_markers_stop_the_build(args, message):
    with pytest.raises(ValueError, match=message):
        hook.extract_snippet(*args)


def code_text(page_html):
    """The text of every highlighted code cell of a built page."""
    cells = re.findall(r'<td class="code">(.*?)</td>', page_html, re.S) or re.findall(r"<code>(.*?)</code>", page_html, re.S)
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells)


@pytest.mark.skipif(not (SITE / "pipeline" / "index.html").is_file(), reason="no built site with the pipeline pages")
@pytest.mark.parametrize("page", STAGES, ids=lambda p: p.name)
def test_rendered_pages_show_the_source(page):
    built = SITE / "pipeline" / page.stem / "index.html"
    text = code_text(built.read_text(encoding="utf-8"))
    for m in markers(page):
        snippet = hook.extract_snippet(m["path"], m["name"], m["start"], m["end"])
        for line in snippet.text.split("\n"):
            assert line.strip() in text, f"{page.name}: {line!r} not rendered"
