"""Writes ``tests/js/fixtures/probe_contract.json``: the inspect graphs' probe contract as the
manifest carries it (``model_export.probes.probe_contract``), which ``tests/js/interpret.test.js``
feeds to ``site_src/runtime/probe-feeds.js``. ``test_probe_fixture.py`` checks it is current.

Run: ``.venv/bin/python tests/js/make_probe_fixture.py``
"""

from __future__ import annotations

import json
from pathlib import Path

from model_export.probes import probe_contract

FIXTURE_PATH = Path(__file__).resolve().parent / "fixtures" / "probe_contract.json"


def dumps() -> str:
    return json.dumps(probe_contract(), indent=1) + "\n"


def main() -> None:
    FIXTURE_PATH.write_text(dumps(), encoding="utf-8")
    print(f"probe contract -> {FIXTURE_PATH}")


if __name__ == "__main__":
    main()
