"""demos.rope_scaling: position interpolation, NTK-aware scaling and YaRN.

Reference: Hugging Face transformers' RoPE initialisers (`ROPE_INIT_FUNCTIONS`: "linear",
"dynamic" at the length where its base equals the static NTK base, and "yarn") for a LLaMA
configuration; they compute in float32, so agreement is to 1e-6 relative.
"""

import math

import numpy as np
import pytest

from demos import rope_scaling as rs

CASES = [  # (head_dim, base, original, factor)
    (128, 10000.0, 4096, 4.0),
    (128, 500000.0, 8192, 8.0),
    (64, 10000.0, 2048, 2.0),
    (96, 10000.0, 4096, 16.0),
]


def hf(transformers, rope_type, head_dim, base, original, factor, seq_len=None):
    """transformers' inverse frequencies and attention factor for one LLaMA-shaped configuration."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": rope_type, "factor": factor, "rope_theta": base}
    if rope_type == "yarn":
        params["original_max_position_embeddings"] = original
    heads = 8
    config = transformers.LlamaConfig(
        hidden_size=head_dim * heads,
        num_attention_heads=heads,
        max_position_embeddings=int(original * (factor if rope_type == "yarn" else 1)),
        rope_parameters=params,
    )
    kwargs = {"seq_len": seq_len} if seq_len else {}
    inv, attention = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", **kwargs)
    return inv.double().numpy(), attention


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


@pytest.mark.parametrize("head_dim, base, original, factor", CASES)
def test_linear_and_yarn_match_transformers(transformers, head_dim, base, original, factor):
    for method, rope_type in (("linear", "linear"), ("yarn", "yarn")):
        ours = rs.scaled_frequencies(method, factor, head_dim, base, original)
        theirs, attention = hf(transformers, rope_type, head_dim, base, original, factor)
        np.testing.assert_allclose(ours["inv_freq"], theirs, rtol=1e-6)
        if method == "yarn":
            assert ours["attention_factor"] == pytest.approx(attention, rel=1e-12)


@pytest.mark.parametrize("head_dim, base, original, factor", CASES)
def test_ntk_is_transformers_dynamic_scaling_at_the_matching_length(transformers, head_dim, base, original, factor):
    """transformers' "dynamic" base is base·(f·T/L − (f − 1))^(d/(d−2)); at T = L(2s − 1)/s with f = s
    the bracket is s, the static NTK-aware base."""
    seq_len = original * (2 * factor - 1) / factor
    assert seq_len == int(seq_len)
    theirs, _ = hf(transformers, "dynamic", head_dim, base, original, factor, seq_len=int(seq_len))
    np.testing.assert_allclose(rs.scaled_frequencies("ntk", factor, head_dim, base, original)["inv_freq"], theirs, rtol=1e-6)


def test_what_each_method_does_to_the_fastest_and_slowest_pairs():
    theta = rs.inverse_frequencies(128, 10000.0)
    lin, ntk, yarn = (np.array(rs.scaled_frequencies(m, 4.0)["inv_freq"]) for m in ("linear", "ntk", "yarn"))
    np.testing.assert_allclose(lin, theta / 4)
    assert ntk[0] == theta[0] and ntk[-1] == pytest.approx(theta[-1] / 4, rel=1e-12)  # NTK: fastest kept, slowest / s
    assert yarn[0] == theta[0] and yarn[-1] == pytest.approx(theta[-1] / 4, rel=1e-12)  # YaRN: the same ends, by a ramp
    w = rs.wavelengths(4.0)
    assert max(w["none"]) > w["original"]  # LLaMA's slowest pairs never finish a turn in 4,096 positions
    assert w["linear"][0] == pytest.approx(4 * w["none"][0])


def test_position_interpolation_turns_p_as_p_over_s():
    theta, lin = rs.inverse_frequencies(128), np.array(rs.scaled_frequencies("linear", 4.0)["inv_freq"])
    np.testing.assert_allclose(8000 * lin, 2000 * theta)
    assert math.isclose(rs.scaled_frequencies("yarn", 1.0)["attention_factor"], 1.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"method": "rope"}, "method"), ({"factor": 0.5}, "factor"), ({"head_dim": 7}, "even"), ({"base": 1.0}, "base"), ({"factor": float("nan")}, "factor")],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        rs.scaled_frequencies(**kwargs)
