"""The demos test suite also passes inside Pyodide, on the wheel the site serves.

tests/pyodide/run.mjs starts Pyodide in Node with the built site's lock file, NumPy
wheel and demos wheel (the very files a reader's browser loads), installs pytest from
pure-Python wheels, and runs each demos module's test file there. Checks that need
PyTorch or transformers skip themselves inside Pyodide; every file must still run
tests there.
"""

import re
import subprocess
from pathlib import Path

import pytest
from site_under_test import SITE

ROOT = Path(__file__).resolve().parents[2]
WHEELS = ROOT / "build" / "cache" / "pyodide-wheels"
MODULES = sorted(p.stem for p in (ROOT / "demos").glob("*.py") if not p.stem.startswith("_"))
# Private modules with a test file of their own run there too: demos._isolation's guarantees
# matter most in Pyodide, where one interpreter serves every widget of a page.
PRIVATE = sorted(p.stem[1:] for p in (ROOT / "demos").glob("_*.py") if (ROOT / "tests" / "demos" / f"test_{p.stem[1:]}.py").exists())


def test_every_demos_module_has_a_test_file():
    missing = [m for m in MODULES if not (ROOT / "tests" / "demos" / f"test_{m}.py").exists()]
    assert not missing, f"demos modules without tests/demos/test_<module>.py: {missing}"


def test_demos_tests_pass_in_pyodide():
    """One Pyodide session runs every demos test file; each must pass tests there."""
    if not any(WHEELS.glob("pytest-*.whl")):
        pytest.fail("pytest wheels for Pyodide are missing: run `make test` (target pyodide-wheels)")
    files = [str(ROOT / "tests" / "demos" / f"test_{m}.py") for m in MODULES + PRIVATE]
    result = subprocess.run(
        ["node", "tests/pyodide/run.mjs", str(SITE / "assets" / "vendor" / "pyodide"), str(WHEELS), *files, "--", "-v", "--tb=short"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    out = result.stdout + result.stderr
    tail = "\n".join(out.strip().splitlines()[-40:])
    assert result.returncode == 0, tail
    assert "NumPy 2.0.2" in out, tail  # it really ran on Pyodide's NumPy
    for module in MODULES + PRIVATE:
        passed = len(re.findall(rf"tests/demos/test_{module}\.py::\S+ PASSED", out))
        assert passed > 0, f"test_{module}.py ran no passing test inside Pyodide\n{tail}"
