"""The probe contract the node tests feed to probe-feeds.js (``fixtures/probe_contract.json``)
is the one the exporter writes into every manifest (``model_export.probes.probe_contract``)."""

from __future__ import annotations

import make_probe_fixture as maker


def test_the_fixture_is_the_exporters_contract():
    assert maker.FIXTURE_PATH.read_text(encoding="utf-8") == maker.dumps(), "run .venv/bin/python tests/js/make_probe_fixture.py"
