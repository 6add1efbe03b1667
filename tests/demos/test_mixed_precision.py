"""demos.mixed_precision against PyTorch: the formats' limits (torch.finfo), rounding
(Tensor.to(float16 / bfloat16)), what a scaled gradient becomes in 16 bits, the dynamic loss
scale (torch.amp.GradScaler), and a weight updated in 16 bits or through a float32 master copy."""

import numpy as np
import pytest

from demos import mixed_precision as mp

TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


@pytest.mark.parametrize("fmt", mp.FORMATS)
def test_format_limits_match_torch_finfo(torch, fmt):
    info = mp.format_info(fmt)
    finfo = torch.finfo(getattr(torch, TORCH_DTYPES[fmt]))
    assert info["bits"] == finfo.bits
    assert (info["max"], info["smallest_normal"], info["epsilon"]) == (finfo.max, finfo.smallest_normal, finfo.eps)
    # the smallest subnormal, from torch: the next number above 0
    zero = torch.zeros(1, dtype=getattr(torch, TORCH_DTYPES[fmt]))
    assert info["smallest_subnormal"] == torch.nextafter(zero, torch.ones_like(zero)).item()


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "float32"])
def test_rounding_matches_torch(torch, fmt):
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            rng.normal(size=300) * 10.0 ** rng.integers(-12, 6, size=300),
            [0.1, 1 / 3, 1 + 2**-8, 1 + 3 * 2**-8, 65504.0, 65520.0, 7e4, 1e-8, 3e-8, 1e-40, 3.3e38, 3.4e38, -0.0],
        ]
    )
    out = mp.round_to(x.tolist(), fmt)
    reference = torch.tensor(x, dtype=torch.float64).float().to(getattr(torch, TORCH_DTYPES[fmt])).double().numpy()
    got = np.array([np.inf if v is None else v for v in out["rounded"]])
    finite = np.isfinite(reference)
    np.testing.assert_array_equal(got[finite], reference[finite])
    assert out["overflow"] == int((~finite).sum()) and np.all(got[~finite] == np.inf)


@pytest.mark.parametrize("fmt, scale", [("float16", 1.0), ("float16", 2.0**12), ("float16", 2.0**24), ("bfloat16", 1.0), ("float32", 1.0)])
def test_flushed_gradients_match_torch(torch, fmt, scale):
    out = mp.flush(scale, fmt, n=5000, seed=2)
    g = torch.tensor(np.array(mp.gradients(5000, 2)) * scale).float().to(getattr(torch, TORCH_DTYPES[fmt])).double()
    finite = torch.isfinite(g)
    zero = g == 0
    normal = finite & (g.abs() >= torch.finfo(getattr(torch, TORCH_DTYPES[fmt])).smallest_normal)
    assert out["zero"] == pytest.approx(zero.double().mean().item(), abs=1e-12)
    assert out["overflow"] == pytest.approx((~finite).double().mean().item(), abs=1e-12)
    assert out["normal"] == pytest.approx(normal.double().mean().item(), abs=1e-12)
    assert out["zero"] + out["subnormal"] + out["normal"] + out["overflow"] == pytest.approx(1.0)
    assert sum(out["counts"]) == 5000


def test_loss_scaling_rescues_float16_gradients_and_bfloat16_needs_none():
    unscaled, scaled = mp.flush(1.0, "float16"), mp.flush(2.0**16, "float16")
    assert unscaled["zero"] > 0.4 and scaled["zero"] < 0.01 and scaled["overflow"] == 0
    assert mp.flush(2.0**30, "float16")["overflow"] > 0.01  # too large a scale overflows
    assert mp.flush(1.0, "bfloat16")["zero"] == 0.0


def test_dynamic_loss_scale_follows_torch_gradscaler(torch):
    rng = np.random.default_rng(0)
    overflows = (rng.random(60) < 0.15).tolist()
    ours = mp.loss_scale_schedule(overflows, init_scale=2.0**10, interval=5)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=5)
    p = torch.nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([p], lr=0.1)
    skipped = []
    for step, overflow in enumerate(overflows):
        assert ours["scales"][step] == scaler.get_scale(), step
        opt.zero_grad()
        before = p.detach().clone()
        scaler.scale((p * (float("inf") if overflow else 1.0)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        if torch.equal(p.detach(), before):
            skipped.append(step)
    assert ours["skipped"] == skipped and ours["final_scale"] == scaler.get_scale()


@pytest.mark.parametrize(
    "fmt, weight, update, steps", [("bfloat16", 1.0, 1e-3, 1000), ("float16", 1.0, 1e-3, 1000), ("bfloat16", 0.3, -2e-4, 500), ("float16", 2.0, 4e-4, 300)]
)
def test_updates_in_16_bits_match_torch_and_the_master_copy_keeps_them(torch, fmt, weight, update, steps):
    dtype = getattr(torch, TORCH_DTYPES[fmt])
    w16 = torch.tensor([weight], dtype=torch.float32).to(dtype)
    w32 = w16.float()
    for _ in range(steps):
        w16 = (w16.double() - update).float().to(dtype)
        w32 = w32 - torch.tensor(update, dtype=torch.float32)
    out = mp.stale_updates(weight, update, steps, fmt)
    assert out["in_format"] == w16.double().item()
    assert out["master"] == w32.item()
    assert out["master_in_format"] == w32.to(dtype).double().item()
    assert abs(out["master"] - out["exact"]) < 1e-4


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_an_update_below_half_the_gap_is_rounded_away(torch, fmt):
    dtype = getattr(torch, TORCH_DTYPES[fmt])
    one = torch.ones(1, dtype=dtype)
    below = torch.nextafter(one, torch.zeros_like(one)).double().item()
    half_gap = mp.stale_updates(1.0, 1e-3, 1, fmt)["half_gap"]
    assert half_gap == (1.0 - below) / 2
    assert mp.stale_updates(1.0, 0.9 * half_gap, 100, fmt)["in_format"] == 1.0
    assert mp.stale_updates(1.0, 1.1 * half_gap, 1, fmt)["in_format"] == below


def test_bad_input_is_refused_in_words():
    with pytest.raises(ValueError, match="format must be one of"):
        mp.format_info("float8")
    with pytest.raises(ValueError, match="scale"):
        mp.flush(scale=0.0)
    with pytest.raises(ValueError, match="steps"):
        mp.stale_updates(steps=0)
    with pytest.raises(ValueError, match="number of steps"):
        mp.loss_scale_schedule([])
