"""Checks the demos tests share: what a demo may hand to JavaScript, and float64 agreement."""

from __future__ import annotations

import numpy as np

TOL = 1e-12  # float64 throughout, so agreement should be to rounding error
SCALARS = (float, int, bool, str)  # what Pyodide turns into plain JavaScript values
NUMBERS = (float, int, bool)


def assert_plain(value, leaves: tuple[type, ...] = SCALARS, allow_none: bool = False) -> None:
    """Fail if anything but dicts with str keys, lists and ``leaves`` (a NumPy scalar or array
    above all) hides in a nested return value."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str
            assert_plain(v, leaves, allow_none)
    elif isinstance(value, list):
        for v in value:
            assert_plain(v, leaves, allow_none)
    else:
        assert (allow_none and value is None) or type(value) in leaves, f"{value!r} has type {type(value)}"


def assert_close(actual, expected, tol: float = TOL) -> None:
    """Elementwise agreement in float64 within ``tol``, relative and absolute."""
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)
