"""demos.norms: LayerNorm, RMSNorm and the pre-norm/post-norm residual stack.

References: torch.nn.functional.layer_norm, torch.nn.RMSNorm and
torch.nn.functional.rms_norm in float64; the toy stack rebuilt in PyTorch from
its documented random recipe; invariances checked with hypothesis.
"""

import math
from functools import partial

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from demo_checks import NUMBERS, TOL
from demo_checks import assert_close as close
from demo_checks import assert_plain as check_plain
from demos.norms import compare_norms, layer_norm, random_vector, residual_stream_growth, rms_norm

assert_plain = partial(check_plain, leaves=NUMBERS)


_rng = np.random.default_rng(7)
CASES = [
    pytest.param(_rng.standard_normal(8), None, None, 1e-5, id="d=8-default-params"),
    pytest.param(3.0 + 10.0 * _rng.standard_normal(16), _rng.standard_normal(16), _rng.standard_normal(16), 1e-5, id="offset-and-params"),
    pytest.param(_rng.standard_normal((5, 12)), _rng.standard_normal(12), _rng.standard_normal(12), 1e-3, id="T=5-rows"),
    pytest.param(np.full(6, 2.5), None, None, 1e-5, id="constant-vector"),
    pytest.param(np.array([1e-4, -2e-4, 3e-4]), None, None, 1e-5, id="tiny-values-eps-dominates"),
    pytest.param(np.array([1e6, -1e6, 3e6, 0.0]), None, None, 1e-5, id="huge-values"),
    pytest.param(np.array([4.0]), None, None, 1e-5, id="d=1"),
]


# ---------------------------------------------------------------------------
# LayerNorm and RMSNorm against PyTorch


@pytest.mark.parametrize("x, gamma, beta, eps", CASES)
def test_layer_norm_matches_torch(x, gamma, beta, eps):
    torch = pytest.importorskip("torch")
    t = lambda a: None if a is None else torch.tensor(a, dtype=torch.float64)  # noqa: E731
    expected = torch.nn.functional.layer_norm(t(x), (x.shape[-1],), t(gamma), t(beta), eps).numpy()
    got = layer_norm(x.tolist(), None if gamma is None else gamma.tolist(), None if beta is None else beta.tolist(), eps)
    close(got, expected, tol=1e-10)
    assert_plain(got)


@pytest.mark.parametrize("x, gamma, beta, eps", CASES)
def test_rms_norm_matches_torch(x, gamma, beta, eps):
    torch = pytest.importorskip("torch")
    d = x.shape[-1]
    module = torch.nn.RMSNorm(d, eps=eps, dtype=torch.float64)
    if gamma is not None:
        with torch.no_grad():
            module.weight.copy_(torch.tensor(gamma))
    xt = torch.tensor(x, dtype=torch.float64)
    expected = module(xt).detach().numpy()
    got = rms_norm(x.tolist(), None if gamma is None else gamma.tolist(), eps)
    close(got, expected, tol=1e-10)
    functional = torch.nn.functional.rms_norm(xt, (d,), None if gamma is None else torch.tensor(gamma), eps)
    close(got, functional.numpy(), tol=1e-10)


def test_layer_norm_worked_example():
    # mean 2, population variance 2/3: (x - 2) / sqrt(2/3 + eps)
    got = layer_norm([1.0, 2.0, 3.0], eps=1e-5)
    s = math.sqrt(2 / 3 + 1e-5)
    close(got, [-1 / s, 0.0, 1 / s])


# ---------------------------------------------------------------------------
# properties

vectors = st.lists(st.floats(-100, 100), min_size=2, max_size=16)


@given(vectors, st.floats(0.1, 10), st.floats(-50, 50))
@settings(max_examples=60, deadline=None)
def test_layer_norm_ignores_shift_and_positive_scale(x, a, b):
    assume(np.std(x) * min(a, 1.0) > 1e-2)  # eps must stay negligible after scaling
    eps = 1e-12  # negligible next to the variance, so the invariance is exact up to rounding
    y = np.array(layer_norm(x, eps=eps))
    close(layer_norm([a * v + b for v in x], eps=eps), y, tol=1e-7)
    assert abs(y.mean()) < 1e-9 and abs(y.std() - 1.0) < 1e-6


@given(vectors, st.floats(0.1, 10))
@settings(max_examples=60, deadline=None)
def test_rms_norm_ignores_scale_but_not_shift(x, a):
    assume(np.sqrt(np.mean(np.square(x))) * min(a, 1.0) > 1e-2)
    eps = 1e-12
    y = np.array(rms_norm(x, eps=eps))
    close(rms_norm([a * v for v in x], eps=eps), y, tol=1e-7)
    assert abs(np.sqrt(np.mean(y**2)) - 1.0) < 1e-6  # RMS 1, but the mean is not removed
    assert np.allclose(y.mean(), np.mean(x) / np.sqrt(np.mean(np.square(x))), atol=1e-7)


def test_compare_norms_reports_statistics_before_and_after():
    x = [1.0, 2.0, 3.0, 10.0]
    r = compare_norms(x, eps=1e-5)
    assert r["input"] == {"values": x, "mean": 4.0, "std": pytest.approx(np.std(x), abs=TOL), "rms": pytest.approx(np.sqrt(np.mean(np.square(x))), abs=TOL)}
    assert abs(r["layer_norm"]["mean"]) < TOL
    assert r["layer_norm"]["std"] == pytest.approx(math.sqrt(np.var(x) / (np.var(x) + 1e-5)), abs=TOL)
    assert r["rms_norm"]["rms"] == pytest.approx(math.sqrt(np.mean(np.square(x)) / (np.mean(np.square(x)) + 1e-5)), abs=TOL)
    assert r["rms_norm"]["mean"] > 0.5  # RMSNorm keeps the offset
    close(r["layer_norm"]["values"], layer_norm(x, eps=1e-5))
    close(r["rms_norm"]["values"], rms_norm(x, eps=1e-5))
    g, b = [2.0, 1.0, 1.0, 0.5], [0.0, 1.0, 0.0, -1.0]
    close(compare_norms(x, gamma=g, beta=b)["layer_norm"]["values"], layer_norm(x, g, b))
    assert_plain(r)


def test_random_vector_is_reproducible():
    a = random_vector(d=6, seed=3, mean=2.0, std=0.5)
    assert a == random_vector(d=6.0, seed=3, mean=2.0, std=0.5)
    close(a, 2.0 + 0.5 * np.random.default_rng(3).standard_normal(6))
    assert random_vector(d=6, seed=4) != random_vector(d=6, seed=3)


# ---------------------------------------------------------------------------
# pre-norm versus post-norm


def torch_stack(depth, d, seed, eps):
    """The documented toy stack, rebuilt in PyTorch (float64)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(seed)
    x0 = torch.tensor(rng.standard_normal(d))
    layers = []
    for _ in range(depth):
        w1 = torch.tensor(rng.standard_normal((4 * d, d)) * math.sqrt(2.0 / d))
        w2 = torch.tensor(rng.standard_normal((d, 4 * d)) * math.sqrt(1.0 / (4 * d)))
        layers.append(lambda h, w1=w1, w2=w2: F.linear(F.relu(F.linear(h, w1)), w2))
    rms = lambda v: float(v.pow(2).mean().sqrt())  # noqa: E731
    out = {}
    for wiring in ("pre_norm", "post_norm"):
        x, series, ratios = x0.clone(), [rms(x0)], []
        for f in layers:
            if wiring == "pre_norm":
                u = f(F.layer_norm(x, (d,), eps=eps))
                ratios.append(rms(u) / rms(x))
                x = x + u
            else:
                u = f(x)
                ratios.append(rms(u) / rms(x))
                x = F.layer_norm(x + u, (d,), eps=eps)
            series.append(rms(x))
        out[wiring] = {"rms": series, "update_ratio": ratios}
    return out


@pytest.mark.parametrize("depth, d, seed", [(6, 8, 0), (24, 32, 0), (12, 16, 5)])
def test_residual_stream_growth_matches_torch(depth, d, seed):
    got = residual_stream_growth(depth=depth, d_model=d, seed=seed)
    expected = torch_stack(depth, d, seed, 1e-5)
    assert got["layer"] == list(range(depth + 1))
    for wiring in ("pre_norm", "post_norm"):
        close(got[wiring]["rms"], expected[wiring]["rms"], tol=1e-10)
        close(got[wiring]["update_ratio"], expected[wiring]["update_ratio"], tol=1e-10)
    assert_plain(got)


@pytest.mark.parametrize("seed", range(4))
def test_pre_norm_stream_grows_while_post_norm_stays_normalised(seed):
    r = residual_stream_growth(depth=24, d_model=32, seed=seed)
    post, pre = r["post_norm"]["rms"], r["pre_norm"]["rms"]
    assert all(abs(v - 1.0) < 1e-4 for v in post[1:])  # LayerNorm after every add: RMS 1 (up to eps)
    assert pre[-1] > 2.5 * pre[1]  # the pre-norm stream keeps accumulating updates
    late, early = np.mean(r["pre_norm"]["update_ratio"][-6:]), np.mean(r["pre_norm"]["update_ratio"][:6])
    assert late < 0.7 * early  # each new update is a smaller share of a bigger stream


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (layer_norm, dict(x=[]), "non-empty"),
    (layer_norm, dict(x="1 2 3"), "list of numbers"),
    (layer_norm, dict(x=[1.0, math.nan]), "NaN or infinity"),
    (layer_norm, dict(x=[1.0, "a"]), "every entry must be a number"),
    (layer_norm, dict(x=[[1.0, 2.0], [3.0]]), "same length"),
    (layer_norm, dict(x=[1.0, 2.0], gamma=[1.0]), "length 2"),
    (layer_norm, dict(x=[1.0, 2.0], beta=[1.0, 2.0, 3.0]), "length 2"),
    (layer_norm, dict(x=[1.0, 2.0], eps=0), "small positive"),
    (layer_norm, dict(x=[1.0, 2.0], eps=-1e-5), "small positive"),
    (layer_norm, dict(x=[1.0, 2.0], eps="tiny"), "must be a number"),
    (rms_norm, dict(x=[True, False]), "every entry must be a number"),
    (rms_norm, dict(x=[[[1.0]]]), "every entry must be a number"),
    (compare_norms, dict(x=[[1.0, 2.0]]), "one vector"),
    (random_vector, dict(d=0), "between 1 and 1024"),
    (random_vector, dict(d=4, std=-1.0), "std must be >= 0"),
    (random_vector, dict(d=4, seed=-3), "seed"),
    (residual_stream_growth, dict(depth=0), "depth"),
    (residual_stream_growth, dict(depth=5.5), "whole number"),
    (residual_stream_growth, dict(d_model=1), "d_model"),
    (residual_stream_growth, dict(depth=200, d_model=1024), "too large"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
