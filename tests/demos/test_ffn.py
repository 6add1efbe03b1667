"""demos.ffn: exact and tanh GELU, their gap, and the expand-then-project MLP.

References: torch.nn.functional.gelu (approximate='none' / 'tanh') and a PyTorch
nn.Linear -> GELU -> nn.Linear block in float64; an independent exact GELU
written with math.erfc; the shapes and parameter count of GPT-2 small's MLP from
the course page (768 -> 3,072 -> 768, about 4.7M parameters).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_close as close
from demo_checks import assert_plain
from demos.ffn import gelu, gelu_curves, mlp_forward, mlp_shapes, swiglu_forward


def gelu_by_erfc(x):
    """x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: accurate in the far left tail too."""
    return x * 0.5 * math.erfc(-x / math.sqrt(2.0))


GRID = np.concatenate([np.linspace(-8, 8, 161), [-30.0, -12.5, -1e-8, 0.0, 1e-8, 12.5, 30.0]])


# ---------------------------------------------------------------------------
# GELU


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate):
    torch = pytest.importorskip("torch")
    expected = torch.nn.functional.gelu(torch.tensor(GRID, dtype=torch.float64), approximate=approximate).numpy()
    close(gelu(GRID.tolist(), approximate=approximate), expected)


def test_exact_gelu_matches_an_erfc_formula_and_known_values():
    close(gelu(GRID.tolist()), [gelu_by_erfc(x) for x in GRID], tol=1e-14)
    assert gelu(0.0) == 0.0
    assert gelu(1.0) == pytest.approx(0.8413447460685429, abs=1e-15)  # Phi(1)
    assert gelu(-1.0) == pytest.approx(-0.15865525393145707, abs=1e-15)  # -(1 - Phi(1))
    assert gelu(1.0, approximate="tanh") == pytest.approx(0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715)), abs=1e-15)


def test_gelu_keeps_the_shape_of_its_input():
    x = [[1.0, -2.0], [0.5, 3.0]]
    got = gelu(x)
    assert np.shape(got) == (2, 2)
    close(got, [[gelu(v) for v in row] for row in x])
    assert type(gelu(2)) is float
    assert_plain(got)


@given(st.floats(-20, 20))
@settings(max_examples=80, deadline=None)
def test_gelu_identity_and_gap(x):
    # x * Phi(x) - (-x) * Phi(-x) = x: GELU(x) - GELU(-x) = x for both variants
    for a in ("none", "tanh"):
        assert gelu(x, a) - gelu(-x, a) == pytest.approx(x, abs=1e-12)
    assert abs(gelu(x, "tanh") - gelu(x)) < 4.8e-4


def test_gelu_curves_measure_the_largest_gap():
    c = gelu_curves(-4.0, 4.0, 801)
    assert len(c["x"]) == 801 and c["x"][0] == -4.0 and c["x"][-1] == 4.0
    diff = np.array(c["tanh"]) - np.array(c["exact"])
    close(c["difference"], diff, tol=0)
    assert c["max_abs_difference"] == np.abs(diff).max()
    assert 4.7e-4 < c["max_abs_difference"] < 4.75e-4  # a few parts in ten thousand
    assert abs(c["at_x"]) == pytest.approx(2.7, abs=0.01)  # the gap peaks near |x| = 2.7 (it is symmetric)
    close(c["difference"], c["difference"][::-1], tol=1e-15)
    assert_plain(c)


def test_gelu_curves_match_torch():
    torch = pytest.importorskip("torch")
    c = gelu_curves(-6.0, 3.0, 451)
    x = torch.tensor(c["x"], dtype=torch.float64)
    close(c["exact"], torch.nn.functional.gelu(x).numpy())
    close(c["tanh"], torch.nn.functional.gelu(x, approximate="tanh").numpy())


# ---------------------------------------------------------------------------
# the MLP block


def test_mlp_shapes_of_gpt2_small():
    s = mlp_shapes()
    assert s["d_ff"] == 3072  # 4 x 768
    assert [st_["shape"] for st_ in s["stages"]] == [[6, 768], [6, 3072], [6, 3072], [6, 768]]
    assert s["params"] == {"fc": 768 * 3072 + 3072, "proj": 3072 * 768 + 768, "total": 4_722_432}
    assert round(s["params"]["total"] / 1e6, 1) == 4.7  # "~4.7M" on the course page
    assert mlp_shapes(seq_len=1, d_model=64, expansion=2)["stages"][1]["shape"] == [1, 128]
    assert_plain(s)


@pytest.mark.parametrize("approximate", ["tanh", "none"])
@pytest.mark.parametrize("T, d, k", [(6, 8, 4), (1, 3, 2), (4, 16, 1)])
def test_mlp_forward_matches_torch(T, d, k, approximate):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(T * 100 + d)
    x = rng.standard_normal((T, d))
    w_fc, b_fc = rng.standard_normal((d, k * d)), rng.standard_normal(k * d)
    w_proj, b_proj = rng.standard_normal((k * d, d)), rng.standard_normal(d)
    got = mlp_forward(x.tolist(), w_fc.tolist(), b_fc.tolist(), w_proj.tolist(), b_proj.tolist(), approximate)
    fc = torch.nn.Linear(d, k * d, dtype=torch.float64)
    proj = torch.nn.Linear(k * d, d, dtype=torch.float64)
    with torch.no_grad():  # nn.Linear stores (out, in): the transpose of x @ W
        fc.weight.copy_(torch.tensor(w_fc.T))
        fc.bias.copy_(torch.tensor(b_fc))
        proj.weight.copy_(torch.tensor(w_proj.T))
        proj.bias.copy_(torch.tensor(b_proj))
        expected = proj(torch.nn.GELU(approximate=approximate)(fc(torch.tensor(x)))).numpy()
    close(got, expected, tol=1e-11)
    assert np.shape(got) == (T, d)


def test_mlp_forward_without_gelu_would_be_one_linear_map():
    # With identity in place of GELU two linear maps collapse into one; GELU breaks that.
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.standard_normal((5, 4)), rng.standard_normal((4, 16)), rng.standard_normal((16, 4))
    zero1, zero2 = [0.0] * 16, [0.0] * 4
    out = np.array(mlp_forward(x.tolist(), w1.tolist(), zero1, w2.tolist(), zero2, "none"))
    assert not np.allclose(out, x @ (w1 @ w2))
    close(out, np.array([[gelu(v) for v in row] for row in (x @ w1)]) @ w2, tol=1e-12)


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (gelu, dict(x=1.0, approximate="sigmoid"), "'none'"),
    (gelu, dict(x=math.inf), "finite"),
    (gelu, dict(x=[1.0, math.nan]), "NaN or infinity"),
    (gelu, dict(x="1"), "list of numbers"),
    (gelu, dict(x=[1.0, "2"]), "contains '2'; every entry must be a number"),
    (gelu, dict(x=[True]), "contains True"),
    (gelu, dict(x=[[1.0, 2.0], [3.0]]), "rectangular"),
    (gelu, dict(x=[]), "empty"),
    (gelu_curves, dict(x_min=1.0, x_max=1.0), "smaller than x_max"),
    (gelu_curves, dict(x_min=2.0, x_max=-2.0), "smaller than x_max"),
    (gelu_curves, dict(num=1), "between 2 and 10001"),
    (gelu_curves, dict(num=50.5), "whole number"),
    (gelu_curves, dict(x_min=-1e7, x_max=1e7), "narrower"),
    (mlp_shapes, dict(d_model=0), "d_model"),
    (mlp_shapes, dict(expansion=100), "expansion"),
    (mlp_forward, dict(x=[[1.0, 2.0]], w_fc=[[1.0]], b_fc=[0.0], w_proj=[[1.0, 1.0]], b_proj=[0.0, 0.0]), "w_fc must have d = 2 rows"),
    (mlp_forward, dict(x=[[1.0]], w_fc=[[1.0, 1.0]], b_fc=[0.0], w_proj=[[1.0], [1.0]], b_proj=[0.0]), "b_fc must have d_ff = 2"),
    (mlp_forward, dict(x=[[1.0]], w_fc=[[1.0, 1.0]], b_fc=[0.0, 0.0], w_proj=[[1.0]], b_proj=[0.0]), r"w_proj must have shape \(2, 1\)"),
    (mlp_forward, dict(x=[[1.0]], w_fc=[[1.0]], b_fc=[0.0], w_proj=[[1.0]], b_proj=[0.0, 1.0]), "b_proj must have d = 1"),
    (mlp_forward, dict(x=[1.0], w_fc=[[1.0]], b_fc=[0.0], w_proj=[[1.0]], b_proj=[0.0]), "2 dimension"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)


# ---------------------------------------------------------------------------
# The gated FFN (SwiGLU)


@pytest.mark.parametrize("d, d_ff, T", [(4, 8, 3), (16, 40, 5), (1, 1, 1)])
def test_swiglu_forward_matches_torch(d, d_ff, T):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(d + d_ff)
    x, wg, wu, wd = rng.normal(size=(T, d)) * 3, rng.normal(size=(d, d_ff)), rng.normal(size=(d, d_ff)), rng.normal(size=(d_ff, d))
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    expected = (torch.nn.functional.silu(t(x) @ t(wg)) * (t(x) @ t(wu))) @ t(wd)
    close(swiglu_forward(x.tolist(), wg.tolist(), wu.tolist(), wd.tolist()), expected.numpy())


def test_swiglu_forward_survives_large_gates():
    out = swiglu_forward([[800.0], [-800.0]], [[1.0]], [[1.0]], [[1.0]])
    assert out == [[640000.0], [0.0]]  # Swish(800) = 800, Swish(-800) = 0, no overflow


@pytest.mark.parametrize("d, d_ff", [(768, 2048), (4096, 11008), (5120, 13824), (8192, 22016)])
def test_swiglu_shapes_are_llamas_and_count_like_torch(d, d_ff):
    """LLaMA's hidden widths (7B 11,008; 13B 13,824; 65B 22,016) from 2/3 · 4d rounded up to 256."""
    torch = pytest.importorskip("torch")
    shapes = mlp_shapes(seq_len=3, d_model=d, kind="swiglu")
    assert shapes["d_ff"] == d_ff
    assert [s["shape"] for s in shapes["stages"]] == [[3, d], [3, d_ff], [3, d_ff], [3, d_ff], [3, d]]
    with torch.device("meta"):
        layers = [torch.nn.Linear(d, d_ff, bias=False), torch.nn.Linear(d, d_ff, bias=False), torch.nn.Linear(d_ff, d, bias=False)]
    assert shapes["params"]["total"] == sum(p.numel() for layer in layers for p in layer.parameters())
    gelu_total = mlp_shapes(d_model=d)["params"]["total"]
    assert abs(shapes["params"]["total"] - gelu_total) / gelu_total < 0.02  # the same budget as a 4d GELU MLP


def test_unknown_ffn_kind_is_refused():
    with pytest.raises(ValueError, match="gelu, swiglu"):
        mlp_shapes(kind="relu")
