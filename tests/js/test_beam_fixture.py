"""The beam searches the node tests replay through beam.js (``fixtures/beam_cases.json``) are
the ones ``model_export.beam`` runs now."""

from __future__ import annotations

import make_beam_fixture as maker


def test_the_fixture_is_the_references_searches():
    assert maker.FIXTURE_PATH.read_text(encoding="utf-8") == maker.dumps(), "run .venv/bin/python tests/js/make_beam_fixture.py"
