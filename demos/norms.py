"""Normalisation in the Transformer block: LayerNorm, RMSNorm, pre-norm and post-norm.

Both norms act on one token's feature vector `x` of width `d` at a time (the last
axis), never across tokens or across a batch:

    LayerNorm(x) = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta
    RMSNorm(x)   = gamma * x / sqrt(mean(x**2) + eps)

`var` is the population variance (divide by d, not d - 1), as in PyTorch.
LayerNorm recentres and rescales and has two learned vectors (gamma, beta);
RMSNorm only rescales and has one (gamma).

Where the norm sits in a residual block matters too:

    post-norm (original Transformer): x <- LayerNorm(x + F(x))
    pre-norm  (GPT-2, most recent LLMs): x <- x + F(LayerNorm(x))

`residual_stream_growth` runs both wirings on the same toy stack of random
sublayers and reports how large the residual stream becomes with depth.

Every public function takes and returns plain Python data; inside, float64 NumPy.
Shapes: `d` is the feature width, `T` the number of tokens.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

from demos._checks import MAX_ELEMENTS
from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int
from demos._checks import as_number as _as_number

MAX_DEPTH = 200
MAX_WIDTH = 1024


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_eps(eps):
    e = _as_number("eps", eps)
    if not 0.0 < e <= 1.0:
        raise ValueError(f"eps must be a small positive number (at most 1), got {e}.")
    return e


def _as_array(name, x):
    """A float64 array of shape (d,) or (T, d) from nested lists of finite numbers."""
    if not isinstance(x, (np.ndarray, str, bytes, dict)) and hasattr(x, "__iter__"):
        x = _as_rows(name, x)
    a = _as_float_array(name, x)
    if a.ndim not in (1, 2) or a.size == 0 or a.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty vector (d,) or matrix (T, d), got shape {a.shape}.")
    return _as_finite(name, a)


def _as_rows(name, x):
    """A list of numbers (d,) or of equal-length lists of numbers (T, d); deeper nesting is refused."""
    rows = list(x)
    if rows and all(hasattr(r, "__iter__") and not isinstance(r, (str, bytes, dict)) for r in rows):
        rows = [list(r) for r in rows]
        if len({len(r) for r in rows}) > 1:
            raise ValueError(f"every row of {name} must have the same length.")
        flat = [v for r in rows for v in r]
    else:
        flat = rows
    for v in flat:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(f"{name} contains {v!r}; every entry must be a number.")
    return rows


def _as_param(name, value, d, default):
    """gamma or beta: None means the default (ones or zeros), else a vector (d,)."""
    if value is None:
        return np.full(d, default)
    p = _as_array(name, value)
    if p.shape != (d,):
        raise ValueError(f"{name} must have one entry per feature (length {d}), got shape {p.shape}.")
    return p


# ----------------------------------------------------------------------------
# the math, on float64 arrays; the last axis is the feature axis of width d


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1) population variance
    return gamma * (x - mean) / np.sqrt(var + eps) + beta  # (..., d)


def _rms_norm(x, gamma, eps):
    ms = (x**2).mean(axis=-1, keepdims=True)  # (..., 1) mean square
    return gamma * x / np.sqrt(ms + eps)  # (..., d)


def _stats(v):
    """Mean, population std and RMS of a vector (d,)."""
    return {"mean": float(v.mean()), "std": float(v.std()), "rms": float(np.sqrt((v**2).mean()))}


def _sublayers(depth, d, rng):
    """Random two-layer ReLU MLPs d -> 4d -> d, scaled so an RMS-1 input gives an RMS ~1 output."""
    layers = []
    for _ in range(depth):
        w1 = rng.standard_normal((4 * d, d)) * math.sqrt(2.0 / d)  # (4d, d)  He init for ReLU
        w2 = rng.standard_normal((d, 4 * d)) * math.sqrt(1.0 / (4 * d))  # (d, 4d)
        layers.append((w1, w2))
    return layers


def _mlp(h, w1, w2):
    return w2 @ np.maximum(w1 @ h, 0.0)  # (d,)


def _rms(v):
    return float(np.sqrt((v**2).mean()))


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def layer_norm(x: Sequence, gamma: Sequence[float] | None = None, beta: Sequence[float] | None = None, eps: float = 1e-5) -> list:
    """LayerNorm over the last axis: `gamma * (x - mean) / sqrt(var + eps) + beta`.

    Same as `torch.nn.functional.layer_norm(x, (d,), gamma, beta, eps)`.

    Args:
        x: One token's features `[x_1, ..., x_d]`, or a list of T such rows.
        gamma: Scale, one number per feature; default all ones.
        beta: Shift, one number per feature; default all zeros.
        eps: Small positive number added to the variance (GPT-2 uses 1e-5).

    Returns:
        The normalised features, same shape as `x`.

    Raises:
        ValueError: On non-numeric, ragged or empty input, wrong parameter
            lengths, or eps outside (0, 1].

    Examples:
        >>> [round(v, 4) for v in layer_norm([1.0, 2.0, 3.0])]
        [-1.2247, 0.0, 1.2247]
    """
    a = _as_array("x", x)
    d = a.shape[-1]
    return _layer_norm(a, _as_param("gamma", gamma, d, 1.0), _as_param("beta", beta, d, 0.0), _as_eps(eps)).tolist()


def rms_norm(x: Sequence, gamma: Sequence[float] | None = None, eps: float = 1e-6) -> list:
    """RMSNorm over the last axis: `gamma * x / sqrt(mean(x**2) + eps)`.

    Same as `torch.nn.RMSNorm(d, eps=eps)` with weight `gamma`. Unlike LayerNorm
    it does not subtract the mean and has no shift.

    Args:
        x: One token's features, or a list of T such rows.
        gamma: Scale, one number per feature; default all ones.
        eps: Small positive number added to the mean square.

    Returns:
        The normalised features, same shape as `x`.

    Raises:
        ValueError: On invalid input, as for `layer_norm`.

    Examples:
        >>> [round(v, 4) for v in rms_norm([3.0, 4.0], eps=1e-12)]
        [0.8485, 1.1314]
    """
    a = _as_array("x", x)
    return _rms_norm(a, _as_param("gamma", gamma, a.shape[-1], 1.0), _as_eps(eps)).tolist()


def random_vector(d: int = 8, seed: int = 0, mean: float = 0.0, std: float = 1.0) -> list[float]:
    """A reproducible random feature vector: `mean + std * N(0, 1)` per entry.

    Args:
        d: Width, 1 to 1024.
        seed: Non-negative seed for `numpy.random.default_rng`.
        mean: Offset added to every entry.
        std: Spread, >= 0.

    Returns:
        d floats.

    Raises:
        ValueError: On a bad width, seed or spread.
    """
    d = _as_int("d", d, 1, MAX_WIDTH)
    seed = _as_int("seed", seed, 0, 2**32 - 1)
    mean, std = _as_number("mean", mean), _as_number("std", std)
    if std < 0:
        raise ValueError(f"std must be >= 0, got {std}.")
    return (mean + std * np.random.default_rng(seed).standard_normal(d)).tolist()


def compare_norms(x: Sequence[float], gamma: Sequence[float] | None = None, beta: Sequence[float] | None = None, eps: float = 1e-5) -> dict:
    """LayerNorm and RMSNorm of one vector, with the statistics before and after.

    Args:
        x: One token's features (a flat list, d >= 1).
        gamma: Scale for both norms; default ones.
        beta: Shift for LayerNorm; default zeros.
        eps: Added to the variance (LayerNorm) and the mean square (RMSNorm).

    Returns:
        `input`, `layer_norm` and `rms_norm`, each a dict with `values` (the
            vector) and its `mean`, `std` (population) and `rms`.

    Raises:
        ValueError: On invalid input or a matrix instead of one vector.
    """
    a = _as_array("x", x)
    if a.ndim != 1:
        raise ValueError("compare_norms takes one vector (a flat list of numbers).")
    d, eps = a.size, _as_eps(eps)
    g, b = _as_param("gamma", gamma, d, 1.0), _as_param("beta", beta, d, 0.0)
    result = {}
    for name, v in (("input", a), ("layer_norm", _layer_norm(a, g, b, eps)), ("rms_norm", _rms_norm(a, g, eps))):
        result[name] = {"values": v.tolist(), **_stats(v)}
    return result


def residual_stream_growth(depth: int = 24, d_model: int = 32, seed: int = 0, eps: float = 1e-5) -> dict:
    """How big the residual stream gets with depth, for pre-norm and post-norm wiring.

    A toy stack of `depth` residual sublayers, each a random MLP
    `F(h) = W2 relu(W1 h)` (d -> 4d -> d), is run twice on the same input:

    - pre-norm:  `x <- x + F(LayerNorm(x))`
    - post-norm: `x <- LayerNorm(x + F(x))`

    (LayerNorm with gamma = 1, beta = 0.) Random numbers come from
    `numpy.random.default_rng(seed)`, drawn in this order: the input
    `x0 = standard_normal(d)`, then for each layer `W1 = standard_normal((4d, d))
    * sqrt(2/d)` and `W2 = standard_normal((d, 4d)) * sqrt(1/(4d))`. With that
    scaling a sublayer turns an RMS-1 input into an output of RMS about 1.

    In pre-norm the stream is a running sum of every update plus the untouched
    input, so its size grows (roughly like the square root of depth) and each new
    update is a smaller share of it; a final LayerNorm (GPT-2's `ln_f`) rescales it at
    the end. In post-norm the stream is renormalised after every layer, so its RMS
    stays at 1 and the input is squashed again and again.

    Args:
        depth: Number of residual sublayers, 1 to 200.
        d_model: Width d of the stream, 2 to 1024.
        seed: Non-negative seed.
        eps: LayerNorm's epsilon.

    Returns:
        `layer` (0..depth), and for `pre_norm` and `post_norm` a dict with
            `rms` (RMS of the stream after each layer; index 0 is the input) and
            `update_ratio` (for layers 1..depth: RMS of the sublayer's output divided
            by the RMS of the stream it is added to).

    Raises:
        ValueError: On out-of-range settings.
    """
    depth = _as_int("depth", depth, 1, MAX_DEPTH)
    d = _as_int("d_model", d_model, 2, MAX_WIDTH)
    seed = _as_int("seed", seed, 0, 2**32 - 1)
    eps = _as_eps(eps)
    if depth * 8 * d * d > 50 * MAX_ELEMENTS:
        raise ValueError("depth × d_model² is too large for an interactive demo; make one of them smaller.")
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal(d)  # (d,)
    layers = _sublayers(depth, d, rng)
    ones, zeros = np.ones(d), np.zeros(d)
    result = {"layer": list(range(depth + 1))}
    for wiring in ("pre_norm", "post_norm"):
        x, rms, ratio = x0.copy(), [_rms(x0)], []
        for w1, w2 in layers:
            if wiring == "pre_norm":
                update = _mlp(_layer_norm(x, ones, zeros, eps), w1, w2)
                ratio.append(_rms(update) / _rms(x))
                x = x + update
            else:
                update = _mlp(x, w1, w2)
                ratio.append(_rms(update) / _rms(x))
                x = _layer_norm(x + update, ones, zeros, eps)
            rms.append(_rms(x))
        result[wiring] = {"rms": rms, "update_ratio": ratio}
    return result
