"""Int8 matrix products and the outlier problem: per-tensor, vector-wise, LLM.int8 and SmoothQuant.

A linear layer computes ``Y = X W`` with activations X (T, d_in) and weights W (d_in, d_out).
Run in int8, both factors are rounded to integers in [-127, 127] times a scale,
``x ≈ s · round(x / s)`` with ``s = max|x| / 127`` (symmetric *absmax* quantization), the
integer product is summed in int32, and the scales are multiplied back in.

One scale for a whole tensor is only as fine as the tensor's largest entry allows. Large
Transformers grow a few hidden dimensions whose activations are far larger than the rest
(Dettmers et al., 2022): one such *outlier channel* sets X's scale, and every ordinary entry is
then rounded to a handful of levels. This module builds such an X and compares four ways to run
the product (`outlier_product`):

* ``per_tensor``: one scale for X and one for W;
* ``vector_wise``: one scale per row of X (per token) and one per column of W (per output),
  the products' outer scale ``s_x[t] · s_w[j]`` (Dettmers et al., 2022);
* ``llm_int8``: vector-wise int8 for every input dimension except those with an entry above
  ``threshold``, whose columns of X and rows of W are multiplied in floating point and added
  (the mixed-precision decomposition of LLM.int8(), Dettmers et al., 2022);
* ``smoothquant``: divide each input dimension of X by ``s_k = max|X_k|^α / max|W_k|^(1-α)``
  and multiply the same row of W by it, which leaves ``X W`` unchanged but moves the outlier's
  size into the weights, then per-tensor int8 (Xiao et al., 2023).

The relative error is ``‖Ŷ − Y‖ / ‖Y‖`` (Frobenius norms) against the float64 product.
"""

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

LEVELS = 127  # symmetric int8: codes -127 … 127
METHODS = ("per_tensor", "vector_wise", "llm_int8", "smoothquant")
MAX_TOKENS = 256
MAX_WIDTH = 512


def quantize(x: np.ndarray, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric absmax int8 quantization.

    Args:
        x: Any float array.
        axis: None for one scale for the whole array; otherwise the axis the scale is shared
            along (``axis=-1``: one scale per row of a matrix, ``axis=0``: one per column).

    Returns:
        ``(codes, scale)``: int8 codes in [-127, 127] and the float scale (a scalar, or an
        array that broadcasts against x), with ``x ≈ codes * scale``.

    Examples:
        >>> codes, scale = quantize(np.array([0.5, -1.0, 0.25]))
        >>> codes.tolist(), float(scale) == 1 / 127
        ([64, -127, 32], True)
    """
    peak = np.abs(x).max() if axis is None else np.abs(x).max(axis=axis, keepdims=True)
    scale = np.where(peak > 0, peak / LEVELS, 1.0)
    codes = np.clip(np.round(x / scale), -LEVELS, LEVELS).astype(np.int8)
    return codes, scale


def int8_matmul(x: np.ndarray, w: np.ndarray, vector_wise: bool = False) -> np.ndarray:
    """``x @ w`` with both factors in int8 and the sum in int32, scales applied afterwards.

    Args:
        x: Activations (T, d_in).
        w: Weights (d_in, d_out).
        vector_wise: One scale per row of x and per column of w, instead of one each.

    Returns:
        The dequantized product (T, d_out), float64.
    """
    qx, sx = quantize(x, axis=-1 if vector_wise else None)  # sx: (T, 1) or scalar
    qw, sw = quantize(w, axis=0 if vector_wise else None)  # sw: (1, d_out) or scalar
    acc = qx.astype(np.int32) @ qw.astype(np.int32)  # (T, d_out), exact integer sums
    return acc * sx * sw


def smoothing_factors(x: np.ndarray, w: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """SmoothQuant's per-input-dimension factors ``s_k = max|X_k|^α / max|W_k|^(1-α)`` (d_in,)."""
    act = np.abs(x).max(axis=0)  # (d_in,): each input dimension's largest activation
    wgt = np.abs(w).max(axis=1)  # (d_in,): the largest weight it multiplies
    return np.maximum(act, 1e-8) ** alpha / np.maximum(wgt, 1e-8) ** (1 - alpha)


def product(x: np.ndarray, w: np.ndarray, method: str, threshold: float = 6.0, alpha: float = 0.5) -> np.ndarray:
    """``x @ w`` computed by one of `METHODS` (see the module docstring)."""
    if method == "per_tensor":
        return int8_matmul(x, w)
    if method == "vector_wise":
        return int8_matmul(x, w, vector_wise=True)
    if method == "llm_int8":
        outliers = np.abs(x).max(axis=0) > threshold  # (d_in,): dimensions kept in floating point
        wide = x[:, outliers] @ w[outliers]  # (T, d_out), the few outlier dimensions
        if outliers.all():
            return wide
        return wide + int8_matmul(x[:, ~outliers], w[~outliers], vector_wise=True)
    if method == "smoothquant":
        s = smoothing_factors(x, w, alpha)
        return int8_matmul(x / s, w * s[:, None])
    raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")


def relative_error(approx: np.ndarray, exact: np.ndarray) -> float:
    """``‖approx − exact‖ / ‖exact‖``, Frobenius norms."""
    return float(np.linalg.norm(approx - exact) / np.linalg.norm(exact))


def outlier_product(
    outlier: float = 60.0,
    channels: int = 1,
    tokens: int = 64,
    d_in: int = 256,
    d_out: int = 256,
    threshold: float = 6.0,
    alpha: float = 0.5,
    seed: int = 0,
) -> dict:
    """Random activations with `channels` outlier dimensions, multiplied by random weights four ways.

    X's entries are N(0, 1) except in `channels` input dimensions, whose entries are N(0, 1)
    times `outlier`; W's are N(0, 1/d_in). Every method's product is compared with the exact one.

    Args:
        outlier: How much larger the outlier dimensions' activations are (1: no outlier).
        channels: How many input dimensions are outliers (0 to d_in).
        tokens: Rows of X.
        d_in: Input width.
        d_out: Output width.
        threshold: LLM.int8()'s cut: dimensions with an activation above it stay in floating point.
        alpha: SmoothQuant's migration strength, 0 (none) to 1 (all onto the weights).
        seed: Seed of the random draws.

    Returns:
        ``errors`` (method -> relative error), ``levels`` (method -> how many distinct int8
        codes the ordinary activations use, out of 255), ``kept`` (dimensions LLM.int8() kept in
        floating point), ``activation_peak`` and ``ordinary_peak`` (largest |X| overall and outside
        the outliers), and the settings.

    Examples:
        >>> r = outlier_product(outlier=60.0, channels=1, seed=0)
        >>> r["errors"]["per_tensor"] > 5 * r["errors"]["llm_int8"]
        True
    """
    tokens = _as_int("tokens", tokens, 1, MAX_TOKENS)
    d_in = _as_int("d_in", d_in, 2, MAX_WIDTH)
    d_out = _as_int("d_out", d_out, 1, MAX_WIDTH)
    channels = _as_int("channels", channels, 0, d_in)
    outlier = _between("outlier", outlier, 1.0, 1000.0)
    threshold = _between("threshold", threshold, 0.0, 1e6)
    alpha = _between("alpha", alpha, 0.0, 1.0)
    seed = _as_int("seed", seed, 0, 2**31 - 1)

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((tokens, d_in))  # (T, d_in)
    w = rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)  # (d_in, d_out)
    hot = rng.choice(d_in, size=channels, replace=False)
    x[:, hot] *= outlier
    exact = x @ w
    ordinary = np.delete(x, hot, axis=1)
    errors, levels = {}, {}
    for method in METHODS:
        errors[method] = relative_error(product(x, w, method, threshold, alpha), exact)
    per_tensor_codes = quantize(x)[0]
    vector_codes = quantize(x, axis=-1)[0]
    smooth = smoothing_factors(x, w, alpha)
    smooth_codes = quantize(x / smooth)[0]
    keep = np.abs(x).max(axis=0) > threshold
    levels["per_tensor"] = int(np.unique(np.delete(per_tensor_codes, hot, axis=1)).size)
    levels["vector_wise"] = int(np.unique(np.delete(vector_codes, hot, axis=1)).size)
    levels["llm_int8"] = int(np.unique(quantize(x[:, ~keep], axis=-1)[0]).size) if (~keep).any() else 0
    levels["smoothquant"] = int(np.unique(np.delete(smooth_codes, hot, axis=1)).size)
    return {
        "errors": errors,
        "levels": levels,
        "kept": int(keep.sum()),
        "activation_peak": float(np.abs(x).max()),
        "ordinary_peak": float(np.abs(ordinary).max()) if ordinary.size else 0.0,
        "outlier_channels": sorted(int(c) for c in hot),
        "settings": {
            "outlier": outlier,
            "channels": channels,
            "tokens": tokens,
            "d_in": d_in,
            "d_out": d_out,
            "threshold": threshold,
            "alpha": alpha,
            "seed": seed,
        },
    }
