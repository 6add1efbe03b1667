"""``model_export.corpus``: the book's prose as the book's model reads it."""

from __future__ import annotations

import pytest

from model_export import corpus

CASES = [
    # (Markdown, the prose kept)
    ("# Title\n\nSee [the paper](x.md#a) and `code`.\n", "Title\n\nSee the paper and code."),
    ("Text.\n\n```python\nx = 1\n```\n\nMore.", "Text.\n\nMore."),
    ("Before\n\n$$\nQK^T\n$$\n\nafter $d_k$ here.", "Before\n\nafter $d_k$ here."),
    ('<tx-induction length="20"></tx-induction>\n\nThe widget draws.', "The widget draws."),
    ('!!! note "What to expect"\n    **With random weights**, no head.', "What to expect With random weights, no head."),
    ("| a | b |\n| --- | --- |\n| one | two |", "a b one two"),
    ("- first item\n- second item", "first item second item"),
    ("---\ntitle: x\n---\nBody text.", "Body text."),
    ("![figure](f.svg)\n\nWords[^1] { .cls }\n\n<!-- hidden -->", "Words"),
    ("~~~\nfenced\n~~~\n\n12 34\n\nok go", "ok go"),
]


@pytest.mark.parametrize(("markdown", "prose"), CASES)
def test_extract_prose_keeps_what_a_reader_reads(markdown, prose):
    assert corpus.extract_prose(markdown) == prose


def test_pages_hold_out_every_eighth_page_and_round_trip(tmp_path):
    docs = tmp_path / "docs"
    for i in range(17):
        (docs / f"part{i % 3}").mkdir(parents=True, exist_ok=True)
        (docs / f"part{i % 3}" / f"page{i:02d}.md").write_text(f"# Page {i}\n\nSome prose here.\n")
    (docs / "empty.md").write_text("```\ncode only\n```\n")
    pages = corpus.read_pages(docs)
    assert [p.path for p in pages] == sorted(p.path for p in pages) and len(pages) == 17
    assert [i for i, p in enumerate(pages) if p.held_out] == [7, 15]
    corpus.save_pages(pages, tmp_path / "a.json.gz")
    corpus.save_pages(pages, tmp_path / "b.json.gz")
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    assert corpus.load_pages(tmp_path / "a.json.gz") == pages
    assert corpus.pages_hash(pages) != corpus.pages_hash(pages[1:])
