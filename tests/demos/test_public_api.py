"""Every public function of every demos module has a docstring.

The widgets call these functions by name (`callDemo(module, fn, kwargs)`, any name not
starting with `_`), and the reference page (`docs/reference/demos.md`) shows their
docstrings, so none may go undocumented.
"""

import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "demos").glob("*.py") if not p.stem.startswith("_"))


def public_functions(module):
    """The functions `module` defines itself whose names do not start with `_`."""
    return {name: f for name, f in vars(module).items() if not name.startswith("_") and inspect.isfunction(f) and f.__module__ == module.__name__}


@pytest.mark.parametrize("name", MODULES)
def test_public_functions_are_documented(name):
    module = importlib.import_module(f"demos.{name}")
    functions = public_functions(module)
    assert functions, f"demos.{name} defines no public function"
    undocumented = [fn for fn, f in functions.items() if not inspect.getdoc(f)]
    assert not undocumented, f"demos.{name}: no docstring on {undocumented}"


def test_every_module_is_on_the_reference_page():
    page = (ROOT / "docs" / "reference" / "demos.md").read_text(encoding="utf-8")
    missing = [name for name in MODULES if f"::: demos.{name}\n" not in page + "\n"]
    assert not missing, f"docs/reference/demos.md renders no API for {missing}"
