"""Fixtures of the demos tests (they also run inside Pyodide, where PyTorch is missing)."""

import pytest


@pytest.fixture(scope="module")
def torch():
    """PyTorch, the reference the demos are checked against; the test is skipped without it."""
    return pytest.importorskip("torch")
