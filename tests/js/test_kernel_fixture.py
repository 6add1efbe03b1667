"""The JS kernel fixture must hold what ``tests/js/make_kernel_fixture.py`` computes now.

``tests/js/fixtures/pipeline_kernels.json`` (inputs and NumPy results for the float32
kernels of ``site_src/widgets/pipeline/kernels.js``) is read by ``tests/js/kernels.test.js``.
Here the script's cases are recomputed: the names, kernels, argument sizes and inputs must be
the same, and every expected value within 2.5e-7 relative (two float32 ulps: NumPy's exp and
tanh may differ in the last float64 bit between machines, which can move a float32 rounding
by one ulp), far below the 1e-5 the node test allows. So the fixture cannot drift from the
reference (``demos.norms.layer_norm``, ``demos.ffn.gelu``, NumPy) without this test failing.
"""

from __future__ import annotations

import json

import make_kernel_fixture as maker
import numpy as np
import pytest

RTOL = 2.5e-7


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(maker.FIXTURE_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def computed() -> dict:
    return json.loads(maker.dumps(maker.fixture()))


def leaves(value, path="") -> list[tuple[str, object]]:
    """(path, leaf) pairs of a nested structure, in order."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in leaves(value[key], f"{path}.{key}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def test_fixture_covers_the_kernels(committed) -> None:
    kernels = {c["kernel"] for c in committed["cases"]}
    assert kernels == {"layerNorm", "rowStats", "linear", "gelu", "add", "maxAbsDiff", "slice2d", "traceBlock"}
    assert committed["seed"] == maker.SEED


def test_cases_are_the_scripts(committed, computed) -> None:
    assert [(c["name"], c["kernel"]) for c in committed["cases"]] == [(c["name"], c["kernel"]) for c in computed["cases"]]


@pytest.mark.parametrize("index", range(len(maker.build_cases())))
def test_case_matches_the_script(committed, computed, index) -> None:
    old, new = committed["cases"][index], computed["cases"][index]
    assert old["args"] == new["args"], f"{old['name']}: inputs changed; rerun {maker.__file__}"
    old_leaves, new_leaves = leaves(old["expected"]), leaves(new["expected"])
    assert [p for p, _ in old_leaves] == [p for p, _ in new_leaves], f"{old['name']}: shapes changed"
    for (path, a), (_, b) in zip(old_leaves, new_leaves):
        if a is None or b is None or isinstance(a, int) and isinstance(b, int):
            assert a == b, (old["name"], path)
        else:
            assert np.isclose(a, b, rtol=RTOL, atol=0), (old["name"], path, a, b)
