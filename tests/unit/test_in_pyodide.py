"""The demos test suite also passes inside Pyodide, on the wheel the site serves.

tests/pyodide/run.mjs starts Pyodide in Node with the built site's lock file, NumPy
wheel and demos wheel (the very files a reader's browser loads), installs pytest from
pure-Python wheels, and runs each demos module's test file there. Checks that need
PyTorch or transformers skip themselves inside Pyodide; every file must still run
tests there.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("TX_SITE", ROOT / "site"))
WHEELS = ROOT / "build" / "cache" / "pyodide-wheels"
MODULES = sorted(p.stem for p in (ROOT / "demos").glob("*.py") if not p.stem.startswith("_"))


def test_every_demos_module_has_a_test_file():
    missing = [m for m in MODULES if not (ROOT / "tests" / "unit" / f"test_{m}.py").exists()]
    assert not missing, f"demos modules without tests/unit/test_<module>.py: {missing}"


@pytest.mark.parametrize("module", MODULES)
def test_module_tests_pass_in_pyodide(module):
    test_file = ROOT / "tests" / "unit" / f"test_{module}.py"
    if not test_file.exists():
        pytest.fail(f"{test_file.name} is missing")
    if not any(WHEELS.glob("pytest-*.whl")):
        pytest.fail("pytest wheels for Pyodide are missing: run `make test` (target pyodide-wheels)")
    result = subprocess.run(
        ["node", "tests/pyodide/run.mjs", str(SITE / "assets" / "vendor" / "pyodide"), str(WHEELS),
         str(test_file), "--", "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
    assert result.returncode == 0, tail
    assert "NumPy 2.0.2" in result.stdout, tail  # it really ran on Pyodide's NumPy
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed and int(passed.group(1)) > 0, tail
