"""demos.rope against a complex-number formulation in NumPy and against PyTorch.

The reference treats each pair (x[2i], x[2i+1]) as the complex number
x[2i] + i x[2i+1] and multiplies it by e^{i m theta_i}, which is what a rotation by
m * theta_i is. The PyTorch section does the same with `torch.polar` (Meta's LLaMA
code) and with Hugging Face's `apply_rotary_pos_emb` on permuted dimensions; it is
skipped where torch is missing.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import TOL, assert_close, assert_plain
from demos.positional import frequencies
from demos.rope import (
    apply_rope,
    distance_decay,
    relative_check,
    rope_frequencies,
    rope_score,
    rope_view,
)


def complex_rope(x, positions, base=10000.0):
    """RoPE as complex multiplication: z_i = x[2i] + i x[2i+1], times e^{i pos theta_i}."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    theta = base ** (-np.arange(d // 2) * 2.0 / d)
    z = x[:, 0::2] + 1j * x[:, 1::2]
    z = z * np.exp(1j * np.asarray(positions, dtype=np.float64)[:, None] * theta)
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = z.real, z.imag
    return out


def complex_bound(d, r, base=10000.0):
    """RoFormer's quantity (1/(d/2)) sum_j |S_j|, S_j = sum_{k<j} e^{i r theta_k}, over its r = 0 value."""
    theta = base ** (-np.arange(d // 2) * 2.0 / d)
    s = np.cumsum(np.exp(1j * r * theta))
    return np.abs(s).mean() / ((d // 2 + 1) / 2)


RNG = np.random.default_rng(11)


# ---------------------------------------------------------------------------
# the rotation


@pytest.mark.parametrize("t, d, base", [(1, 2, 10000.0), (5, 8, 10000.0), (7, 64, 10000.0), (4, 16, 500000.0)])
def test_apply_rope_matches_complex_formulation(t, d, base):
    x = RNG.standard_normal((t, d))
    positions = RNG.integers(0, 3000, t).tolist()
    got = apply_rope(x.tolist(), positions, base)
    assert_close(got, complex_rope(x, positions, base), tol=1e-10)
    assert_close(np.linalg.norm(got, axis=1), np.linalg.norm(x, axis=1))  # rotations keep lengths
    assert_plain(got)


def test_position_zero_is_identity_and_frequencies_are_the_sinusoidal_ones():
    x = RNG.standard_normal((3, 6)).tolist()
    assert apply_rope(x, [0, 0, 0]) == x
    assert rope_frequencies(16) == frequencies(16)
    assert rope_frequencies(4) == [1.0, 0.01]
    # Pair 0 turns one radian per position.
    assert_close(apply_rope([[1.0, 0.0]], [2])[0], [math.cos(2.0), math.sin(2.0)])


# ---------------------------------------------------------------------------
# the relative property: q_m . k_n depends only on m - n


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300), st.sampled_from([2, 8, 32]), st.integers(0, 2**31))
def test_score_depends_only_on_offset(m, n, shift, d, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.uniform(-1, 1, d), rng.uniform(-1, 1, d)
    r = relative_check(q.tolist(), k.tolist(), m, n, shift)
    assert math.isclose(r["score"], r["shifted_score"], rel_tol=1e-9, abs_tol=1e-9)
    # The same as rotating only the query, by the difference of the positions.
    ref = complex_rope(q[None], [m])[0] @ complex_rope(k[None], [n])[0]
    assert math.isclose(r["score"], ref, rel_tol=1e-9, abs_tol=1e-9)
    if m >= n:
        only_q = complex_rope(q[None], [m - n])[0] @ k
        assert math.isclose(r["score"], only_q, rel_tol=1e-9, abs_tol=1e-9)
    assert r["offset"] == m - n
    assert_plain(r)


def test_rope_score_equals_dot_of_applied_rope():
    q, k = RNG.standard_normal(8).tolist(), RNG.standard_normal(8).tolist()
    rotated = apply_rope([q, k], [9, 4])
    assert_close(rope_score(q, k, 9, 4), float(np.dot(rotated[0], rotated[1])))


# ---------------------------------------------------------------------------
# decay with distance: on the whole, but not monotonic


def test_decay_is_real_but_not_monotonic():
    r = distance_decay(d=128, max_distance=256)
    sim, bound = np.array(r["similarity"]), np.array(r["bound"])
    assert r["distances"] == list(range(257))
    assert sim[0] == pytest.approx(1.0, abs=TOL) and bound[0] == pytest.approx(1.0, abs=TOL)
    # It tends to fall: far-away averages sit well below near ones ...
    assert sim[200:].mean() < sim[1:20].mean() < 1.0
    assert bound[200:].mean() < bound[1:20].mean() < 1.0
    # ... but it rises again at many distances: not monotonic.
    assert r["monotonic"] is False
    assert len(r["similarity_rises"]) > 10 and len(r["bound_rises"]) > 10
    for i in r["similarity_rises"]:
        assert sim[i] > sim[i - 1]
    falls = [i for i in range(1, 257) if i not in set(r["bound_rises"])]
    assert all(bound[i] <= bound[i - 1] for i in falls)
    assert_plain(r)


def test_decay_curves_match_complex_reference():
    r = distance_decay(d=64, max_distance=100)
    theta = 10000.0 ** (-np.arange(32) * 2.0 / 64)
    for dist in (0, 1, 7, 50, 100):
        assert math.isclose(r["bound"][dist], complex_bound(64, dist), rel_tol=1e-12)
        # q = k = all ones: the cosine is the mean of cos(r theta_i), the sinusoidal dot product / (d/2).
        assert math.isclose(r["similarity"][dist], np.cos(dist * theta).mean(), rel_tol=1e-9, abs_tol=1e-12)


def test_random_vectors_decay_curve():
    r = distance_decay(d=32, max_distance=50, vectors="random", seed=3)
    rng = np.random.default_rng(3)
    q, k = rng.uniform(-1, 1, 32), rng.uniform(-1, 1, 32)
    for dist in (0, 5, 50):
        expected = complex_rope(q[None], [dist])[0] @ k / (np.linalg.norm(q) * np.linalg.norm(k))
        assert math.isclose(r["similarity"][dist], expected, rel_tol=1e-9, abs_tol=1e-12)


def test_rope_view_is_consistent():
    v = rope_view(d=16, pair=2, m=9, n=3, max_distance=20)
    theta = 10000.0 ** (-4 / 16)
    assert v["theta"] == rope_frequencies(16)[2]
    assert math.isclose(v["theta"], theta, rel_tol=1e-15)
    assert v["angle_q"] == 9 * v["theta"] and v["angle_k"] == 3 * v["theta"]
    rotated = complex_rope(np.ones((2, 16)), [9, 3])
    assert_close(v["q_rotated"], rotated[0, 4:6])
    assert_close(v["k_rotated"], rotated[1, 4:6])
    assert_close(v["pair_score"], rotated[0, 4:6] @ rotated[1, 4:6])
    assert_close(v["score"], rotated[0] @ rotated[1])
    assert math.isclose(v["relative_score"], v["score"], rel_tol=1e-12)  # the same logit at (6, 0)
    assert v["q_pair"] == [1.0, 1.0] and v["offset"] == 6
    decay = distance_decay(16, 20)
    assert all(v[key] == decay[key] for key in decay)
    assert_plain(v)


# ---------------------------------------------------------------------------
# bad input

BAD_INPUTS = [
    pytest.param(apply_rope, dict(x=[[1.0, 2.0, 3.0]], positions=[0]), "even", id="odd-width"),
    pytest.param(apply_rope, dict(x=[[1.0, 2.0]], positions=[0, 1]), "one position per row", id="positions-count"),
    pytest.param(apply_rope, dict(x=[[1.0, 2.0]], positions=[-1]), r"positions\[0\]", id="negative-position"),
    pytest.param(apply_rope, dict(x=[[1.0, 2.0]], positions=[0.5]), "whole number", id="fractional-position"),
    pytest.param(apply_rope, dict(x=[[1.0, 2.0]], positions=3), "list of whole numbers", id="positions-scalar"),
    pytest.param(rope_score, dict(q=[1.0, 2.0], k=[1.0, 2.0, 3.0, 4.0], m=0, n=0), "2 entries", id="k-width"),
    pytest.param(relative_check, dict(q=[1.0, 0.0], k=[1.0, 0.0], m=1, n=2, shift=-2), "shift", id="shift"),
    pytest.param(distance_decay, dict(d=7), "even", id="decay-odd"),
    pytest.param(distance_decay, dict(max_distance=0), "max_distance", id="decay-distance"),
    pytest.param(distance_decay, dict(vectors="zeros"), "vectors", id="decay-vectors"),
    pytest.param(rope_view, dict(d=8, pair=4), "pair must be between 0 and 3", id="pair"),
    pytest.param(rope_view, dict(base=0.5), "base", id="base"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD_INPUTS)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)


# ---------------------------------------------------------------------------
# PyTorch references


def test_matches_torch_polar_formulation(torch):
    # Meta's LLaMA: view pairs as complex numbers, multiply by polar(1, pos * theta).
    t, d = 9, 32
    x = torch.tensor(RNG.standard_normal((t, d)), dtype=torch.float64)
    positions = torch.arange(t, dtype=torch.float64) * 37
    theta = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs_cis = torch.polar(torch.ones(t, d // 2, dtype=torch.float64), torch.outer(positions, theta))
    ref = torch.view_as_real(torch.view_as_complex(x.reshape(t, d // 2, 2)) * freqs_cis).reshape(t, d)
    assert_close(apply_rope(x.tolist(), positions.long().tolist()), ref.numpy(), tol=1e-10)


def test_matches_hugging_face_rotate_half_on_permuted_dims(torch):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    t, d = 6, 16
    x = RNG.standard_normal((t, d))
    # HF pairs dimension i with i + d/2; ours pairs 2i with 2i + 1.
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    positions = torch.arange(t, dtype=torch.float64) * 5
    theta = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(positions, theta)
    emb = torch.cat([freqs, freqs], dim=-1)  # what LlamaRotaryEmbedding returns, in float64
    xq = torch.tensor(x[:, perm])[None, None]  # (batch, heads, T, d)
    q_hf, _ = apply_rotary_pos_emb(xq, xq, emb.cos()[None], emb.sin()[None])
    ours = np.array(apply_rope(x.tolist(), positions.long().tolist()))
    assert_close(ours[:, perm], q_hf[0, 0].numpy(), tol=1e-10)


def test_relative_property_in_torch(torch):
    d = 64
    q = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    k = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    theta = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))

    def rotate(v, pos):
        return torch.view_as_real(torch.view_as_complex(v.reshape(-1, 2)) * torch.polar(torch.ones_like(theta), pos * theta)).reshape(-1)

    for m, n in [(10, 3), (110, 103), (1000, 993)]:
        ref = float(rotate(q, m) @ rotate(k, n))
        assert math.isclose(rope_score(q.tolist(), k.tolist(), m, n), ref, rel_tol=1e-9, abs_tol=1e-9)
