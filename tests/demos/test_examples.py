"""Every Examples section in the demos' docstrings runs and prints what it says (doctest), so the
documentation (docs/reference/demos.md renders it) cannot drift from the code."""

import doctest
import importlib
import pkgutil

import pytest

import demos

MODULES = sorted(m.name for m in pkgutil.iter_modules(demos.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    module = importlib.import_module(f"demos.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in demos.{name} fail"
