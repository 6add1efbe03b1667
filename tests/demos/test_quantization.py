"""demos.quantization: int8 codes, int8 products, LLM.int8() and SmoothQuant.

References: PyTorch's fake quantizers (`torch.fake_quantize_per_tensor_affine`,
`torch.fake_quantize_per_channel_affine`, range [-127, 127]) give the codes; the integer products are summed in torch's int64; the decompositions are
rebuilt from those pieces in torch. The phenomenon (an outlier dimension ruins per-tensor int8,
LLM.int8() and SmoothQuant repair it) is checked on the numbers `outlier_product` reports.
"""

from functools import partial

import numpy as np
import pytest

from demo_checks import NUMBERS
from demo_checks import assert_plain as check_plain
from demos import quantization as q

assert_plain = partial(check_plain, leaves=NUMBERS)


def torch_codes(torch, x: np.ndarray, axis: int | None):
    """int8 codes and scales from PyTorch's fake quantizers (quantization-aware training's ops), with
    absmax scales, zero point 0 and the symmetric range [-127, 127]."""
    t = torch.tensor(x, dtype=torch.float32)
    if axis is None:
        scale = float(t.abs().max()) / 127
        fake = torch.fake_quantize_per_tensor_affine(t, scale, 0, -127, 127)
        return torch.round(fake.double() / scale).long(), torch.tensor(scale, dtype=torch.float64)
    dim = 0 if axis in (-1, 1) else 1  # torch names the axis that keeps its own scale
    scales = t.double().abs().amax(dim=1 - dim) / 127  # float64, as the products are scaled back
    fake = torch.fake_quantize_per_channel_affine(t, scales.float(), torch.zeros_like(scales, dtype=torch.int32), dim, -127, 127)
    codes = torch.round(fake.double() / scales.float().double().unsqueeze(1 - dim)).long()
    return codes, scales.unsqueeze(1 - dim)


def torch_int8_matmul(torch, x, w, vector_wise=False) -> np.ndarray:
    qx, sx = torch_codes(torch, x, -1 if vector_wise else None)
    qw, sw = torch_codes(torch, w, 0 if vector_wise else None)
    return ((qx @ qw).double() * sx * sw).numpy()


def data(seed=0, tokens=16, d_in=32, d_out=24, outlier=40.0):
    rng = np.random.default_rng(seed)
    # float32-representable values, so torch's float32 quantizer and NumPy's float64 one see the same numbers
    x = rng.standard_normal((tokens, d_in)).astype(np.float32).astype(np.float64)
    x[:, 3] *= outlier
    w = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(np.float32).astype(np.float64)
    return x, w


@pytest.mark.parametrize("axis", [None, -1, 0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_codes_are_pytorchs(torch, axis, seed):
    x, _ = data(seed)
    codes, scale = q.quantize(x, axis)
    expected, torch_scale = torch_codes(torch, x, axis)
    np.testing.assert_array_equal(codes.astype(np.int64), expected.numpy())
    np.testing.assert_allclose(np.broadcast_to(scale, x.shape), np.broadcast_to(torch_scale.numpy(), x.shape), rtol=1e-6)
    assert np.abs(codes).max() == 127  # absmax: the largest entry gets the largest code


@pytest.mark.parametrize("vector_wise", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_int8_product_is_the_integer_product_of_pytorchs_codes(torch, vector_wise, seed):
    x, w = data(seed)
    np.testing.assert_allclose(q.int8_matmul(x, w, vector_wise), torch_int8_matmul(torch, x, w, vector_wise), rtol=1e-6, atol=1e-9)


def test_llm_int8_keeps_the_outlier_dimensions_in_floating_point(torch):
    x, w = data(4)
    keep = torch.tensor(np.abs(x).max(axis=0) > 6.0)
    assert keep.sum() == 1  # dimension 3 only
    xt, wt = torch.tensor(x), torch.tensor(w)
    expected = (xt[:, keep] @ wt[keep]).numpy() + torch_int8_matmul(torch, x[:, ~keep.numpy()], w[~keep.numpy()], vector_wise=True)
    np.testing.assert_allclose(q.product(x, w, "llm_int8", threshold=6.0), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 0.8])
def test_smoothquant_moves_scale_without_changing_the_product(torch, alpha):
    x, w = data(5)
    s = q.smoothing_factors(x, w, alpha)
    xt, wt = torch.tensor(x), torch.tensor(w)
    expected_s = xt.abs().amax(0) ** alpha / wt.abs().amax(1) ** (1 - alpha)
    np.testing.assert_allclose(s, expected_s.numpy(), rtol=1e-12)
    np.testing.assert_allclose((x / s) @ (w * s[:, None]), (xt @ wt).numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q.product(x, w, "smoothquant", alpha=alpha), torch_int8_matmul(torch, x / s, w * s[:, None]), rtol=1e-6, atol=1e-9)


def test_an_outlier_ruins_per_tensor_int8_and_the_remedies_repair_it():
    calm = q.outlier_product(outlier=1.0, seed=0)
    hot = q.outlier_product(outlier=60.0, seed=0)
    assert_plain(hot)
    assert hot["errors"]["per_tensor"] > 4 * calm["errors"]["per_tensor"]
    assert hot["levels"]["per_tensor"] < 16 < 200 < calm["levels"]["per_tensor"]  # the ordinary entries use a few of 255 codes
    assert hot["kept"] == 1 and calm["kept"] == 0
    assert hot["errors"]["llm_int8"] < hot["errors"]["per_tensor"] / 10
    assert hot["errors"]["smoothquant"] < hot["errors"]["per_tensor"] / 2
    assert hot["errors"]["vector_wise"] < hot["errors"]["per_tensor"]
    assert hot["ordinary_peak"] == pytest.approx(calm["ordinary_peak"])  # the same draw, one dimension scaled
    assert hot["activation_peak"] > 10 * hot["ordinary_peak"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outlier": 0.5}, "outlier"),
        ({"channels": 300}, "channels"),
        ({"tokens": 0}, "tokens"),
        ({"alpha": 1.5}, "alpha"),
        ({"d_in": 10_000}, "d_in"),
        ({"outlier": float("nan")}, "outlier"),
    ],
)
def test_bad_settings_are_refused_with_a_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        q.outlier_product(**kwargs)


def test_unknown_method_is_named():
    x, w = data()
    with pytest.raises(ValueError, match="per_tensor, vector_wise, llm_int8, smoothquant"):
        q.product(x, w, "fp4")
