"""The texts the node tests run through grammar.js (``fixtures/grammar_cases.json``) carry the
labels Outlines' expression for each schema gives them now."""

from __future__ import annotations

import make_grammar_fixture as maker


def test_the_fixture_is_outlines_labels():
    assert maker.FIXTURE_PATH.read_text(encoding="utf-8") == maker.dumps(), "run .venv/bin/python tests/js/make_grammar_fixture.py"
