"""Stretching RoPE past its training length: position interpolation, NTK-aware scaling and YaRN.

RoPE turns pair i of a head's d dimensions by the angle ``p · θ_i`` at position p, with
``θ_i = base^(-2i/d)`` (`inverse_frequencies`). A model trained on L positions has seen every
pair turn through at most ``(L - 1) θ_i``; at longer inputs the fast pairs repeat angles they
know, but the slow pairs reach angles never seen in training. The three methods change the
frequencies so that a context s times longer maps onto what the model knows:

* ``linear`` (position interpolation, Chen et al., 2023): every ``θ_i / s``, so position p is
  turned as position p / s was; neighbouring positions become s times harder to tell apart;
* ``ntk`` ("NTK-aware" scaling, a 2023 post by bloc97 that Peng et al., 2024 analyse): a larger
  base, ``base · s^(d/(d-2))``, which leaves the fastest pair unchanged and divides the slowest
  by exactly s;
* ``yarn`` (Peng et al., 2024): pairs that turn many times over L keep their frequency, pairs
  that turn less than once are interpolated by s, a linear ramp joins the two (over the pair
  index, between the pairs that turn ``beta_fast`` and ``beta_slow`` times), and the attention
  logits are scaled by ``(0.1 ln s + 1)²`` (each of q and k by ``0.1 ln s + 1``).

`scaled_frequencies` computes them as Hugging Face's transformers does (its ``rope_parameters``
types "linear", "dynamic" at the length s L, and "yarn"); `wavelengths` gives each pair's period
in positions, what the RoPE page's figure draws.
"""

import math

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

METHODS = ("none", "linear", "ntk", "yarn")


def inverse_frequencies(head_dim: int = 128, base: float = 10000.0) -> np.ndarray:
    """RoPE's ``θ_i = base^(-2i/d)`` for the d/2 pairs of a head, float64 (d/2,)."""
    return 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def _yarn_ramp(head_dim, base, original, beta_fast, beta_slow):
    """Per pair: 0 where the frequency is kept (extrapolated), 1 where it is interpolated, linear between."""

    def pair_turning(rotations):  # the (fractional) pair index that turns `rotations` times over `original`
        return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(pair_turning(beta_fast)), 0)
    high = min(math.ceil(pair_turning(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001
    return np.clip((np.arange(head_dim // 2) - low) / (high - low), 0.0, 1.0)


def scaled_frequencies(
    method: str = "yarn",
    factor: float = 4.0,
    head_dim: int = 128,
    base: float = 10000.0,
    original: int = 4096,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
) -> dict:
    """The inverse frequencies of a RoPE model stretched `factor` times past `original` positions.

    Args:
        method: "none", "linear" (position interpolation), "ntk" or "yarn".
        factor: s, how many times longer the new context is (1 to 64).
        head_dim: d, the width of a head (even, 2 to 1,024).
        base: RoPE's base (LLaMA: 10,000; Llama 3: 500,000).
        original: L, the context length the model was trained on.
        beta_fast: YaRN: pairs turning more often than this over L keep their frequency.
        beta_slow: YaRN: pairs turning fewer times than this are fully interpolated.

    Returns:
        ``inv_freq`` (d/2 floats), ``original_inv_freq``, ``attention_factor`` (the logits are
        multiplied by its square: 1 except for YaRN) and the settings.

    Examples:
        >>> r = scaled_frequencies("linear", factor=4, head_dim=8)
        >>> [round(a / b, 6) for a, b in zip(r["original_inv_freq"], r["inv_freq"])]
        [4.0, 4.0, 4.0, 4.0]
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    factor = _between("factor", factor, 1.0, 64.0)
    head_dim = _as_int("head_dim", head_dim, 2, 1024)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (RoPE turns pairs of dimensions), got {head_dim}")
    base = _between("base", base, 2.0, 1e9)
    original = _as_int("original", original, 2, 10_000_000)
    beta_fast = _between("beta_fast", beta_fast, 1e-3, 1e4)
    beta_slow = _between("beta_slow", beta_slow, 1e-3, beta_fast)
    theta = inverse_frequencies(head_dim, base)  # (d/2,)
    attention = 1.0
    if method == "none":
        scaled = theta
    elif method == "linear":
        scaled = theta / factor
    elif method == "ntk":
        scaled = inverse_frequencies(head_dim, base * factor ** (head_dim / (head_dim - 2))) if head_dim > 2 else theta / factor
    else:
        ramp = _yarn_ramp(head_dim, base, original, beta_fast, beta_slow)  # 1: interpolate, 0: keep
        scaled = (theta / factor) * ramp + theta * (1.0 - ramp)
        attention = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return {
        "inv_freq": scaled.tolist(),
        "original_inv_freq": theta.tolist(),
        "attention_factor": attention,
        "settings": {
            "method": method,
            "factor": factor,
            "head_dim": head_dim,
            "base": base,
            "original": original,
            "beta_fast": beta_fast,
            "beta_slow": beta_slow,
        },
    }


def wavelengths(factor: float = 4.0, head_dim: int = 128, base: float = 10000.0, original: int = 4096) -> dict:
    """Each pair's wavelength ``2π / θ_i`` in positions, unscaled and under every method.

    Returns:
        ``pair`` (0 … d/2 - 1), one list of wavelengths per method in `METHODS`, ``original``
        and ``extended`` (s L): a pair whose wavelength exceeds L never completed a turn in training.

    Examples:
        >>> w = wavelengths(factor=2, head_dim=4, base=100, original=64)
        >>> [round(x, 2) for x in w["none"]], [round(x, 2) for x in w["linear"]]
        ([6.28, 62.83], [12.57, 125.66])
    """
    out = {"pair": list(range(head_dim // 2)), "original": original, "extended": int(round(factor * original))}
    for method in METHODS:
        inv = np.array(scaled_frequencies(method, factor, head_dim, base, original)["inv_freq"])
        out[method] = (2 * math.pi / inv).tolist()
    return out
