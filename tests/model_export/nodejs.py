"""Running a browser module's code under Node from a unit test (shared by the compact-weight tests)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_script(template: str, module: str, args: list[str], tmp_path: Path) -> dict:
    """Runs ``template`` (an ES module with one ``%s`` for the URL of ``site_src/runtime/<module>``)
    with ``args`` and returns the JSON it prints; fails the test when Node is missing or the
    script fails."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (make test installs it with npm)")
    script = tmp_path / f"{Path(module).stem}.mjs"
    script.write_text(template % (ROOT / "site_src" / "runtime" / module).as_uri())
    result = subprocess.run([node, str(script), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
