"""The greedy runs the node tests replay through speculative.js
(``fixtures/speculative_cases.json``) are the ones ``model_export.speculative`` makes now."""

from __future__ import annotations

import make_speculative_fixture as maker


def test_the_fixture_is_the_references_runs():
    assert maker.FIXTURE_PATH.read_text(encoding="utf-8") == maker.dumps(), "run .venv/bin/python tests/js/make_speculative_fixture.py"
