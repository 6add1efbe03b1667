"""The position-wise feed-forward network: GELU and the expand-then-project MLP, and its gated form.

After attention has mixed information between tokens, every token's vector goes
through the same small two-layer network on its own:

    FFN(x) = GELU(x W_fc + b_fc) W_proj + b_proj
    x: (T, d)  W_fc: (d, 4d)  hidden: (T, 4d)  W_proj: (4d, d)  output: (T, d)

GELU ("Gaussian error linear unit") weighs each input by the probability that a
standard normal variable is smaller than it:

    exact: GELU(x) = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
    tanh:  GELU(x) ~ 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))

GPT-2 was trained with the tanh approximation. The two agree to a few parts in
ten thousand; `gelu_curves` measures exactly how closely over a range.

LLaMA's feed-forward network is *gated* (SwiGLU, Shazeer 2020): a second projection of x,
passed through no activation, multiplies the activated one element by element:

    SwiGLU(x) = (Swish(x W_gate) * (x W_up)) W_down,   Swish(z) = z * sigmoid(z)
    x: (T, d)  W_gate, W_up: (d, d_ff)  hidden: (T, d_ff)  W_down: (d_ff, d)

Three matrices instead of two, so LLaMA shrinks the hidden width to 2/3 of 4d (rounded up to
a multiple of 256) to keep the parameter count of a 4d MLP (`mlp_shapes(kind="swiglu")`).

Every public function takes and returns plain Python data; inside, float64 NumPy.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int
from demos._checks import as_number as _as_number

Matrix = Sequence[Sequence[float]]  # rows of numbers, e.g. T token vectors of width d

MAX_POINTS = 10_001  # cap on curve samples
KINDS = ("gelu", "swiglu")  # GPT-2's MLP, LLaMA's gated FFN
SWIGLU_MULTIPLE = 256  # LLaMA rounds the gated hidden width up to a multiple of this
APPROXIMATIONS = ("none", "tanh")  # the names torch.nn.functional.gelu uses

_erf = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf; math.erf applied elementwise


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_approximate(approximate):
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"approximate must be 'none' (exact, with erf) or 'tanh', got {approximate!r}.")
    return approximate


def _as_array(name, x, ndim=None):
    """Nested lists of finite numbers as a float64 array (optionally of a given ndim)."""
    a = _as_float_array(name, x)
    if a.size == 0:
        raise ValueError(f"{name} is empty.")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}.")
    return _as_finite(name, a)


# ----------------------------------------------------------------------------
# the math, on float64 arrays of any shape


def _gelu_exact(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _gelu(x, approximate):
    return _gelu_tanh(x) if approximate == "tanh" else _gelu_exact(x)


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def gelu(x: float | Sequence, approximate: str = "none") -> float | list:
    """GELU, exact or with the tanh approximation, elementwise.

    Same as `torch.nn.functional.gelu(x, approximate=...)`.

    Args:
        x: A number, or a (nested) list of numbers.
        approximate: "none" for `x * Phi(x)` computed with erf, "tanh" for the
            approximation GPT-2 uses.

    Returns:
        A float for a number, otherwise a list of the same shape as `x`.

    Raises:
        ValueError: On non-finite or non-numeric input, or an unknown `approximate`.

    Examples:
        >>> round(gelu(1.0), 6)
        0.841345
        >>> round(gelu(1.0, approximate="tanh"), 6)
        0.841192
    """
    approximate = _as_approximate(approximate)
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return float(_gelu(np.array([_as_number("x", x)]), approximate)[0])
    return _gelu(_as_array("x", x), approximate).tolist()


def gelu_curves(x_min: float = -4.0, x_max: float = 4.0, num: int = 161) -> dict:
    """Both GELU variants sampled on an even grid, and how far apart they are.

    Args:
        x_min: Left end of the range.
        x_max: Right end, > x_min.
        num: Number of grid points, 2 to 10,001 (both ends included).

    Returns:
        `x`, `exact`, `tanh`, `difference` (tanh minus exact, per point),
            `max_abs_difference` (largest |difference| on the grid) and
            `at_x` (where it occurs; the first such point if several tie).

    Raises:
        ValueError: If the range is empty or reversed or `num` is out of range.

    Examples:
        >>> c = gelu_curves(-4, 4, 801)
        >>> round(c["max_abs_difference"], 6)
        0.000473
    """
    lo, hi = _as_number("x_min", x_min), _as_number("x_max", x_max)
    if not lo < hi:
        raise ValueError(f"x_min must be smaller than x_max, got {lo} and {hi}.")
    if hi - lo > 1e6:
        raise ValueError("the range is wider than a million; choose a narrower one.")
    n = _as_int("num", num, 2, MAX_POINTS)
    x = np.linspace(lo, hi, n)  # (n,)
    exact, approx = _gelu_exact(x), _gelu_tanh(x)
    diff = approx - exact  # (n,)
    i = int(np.argmax(np.abs(diff)))
    return {
        "x": x.tolist(),
        "exact": exact.tolist(),
        "tanh": approx.tolist(),
        "difference": diff.tolist(),
        "max_abs_difference": float(abs(diff[i])),
        "at_x": float(x[i]),
    }


def mlp_shapes(seq_len: int = 6, d_model: int = 768, expansion: int = 4, kind: str = "gelu") -> dict:
    """The shapes flowing through the feed-forward block and its parameter counts.

    Defaults are GPT-2 small's: d = 768, hidden width 4 × 768 = 3,072, for the
    six-token running example.

    Args:
        seq_len: T, the number of tokens, 1 to 1,000,000.
        d_model: d, the width of the residual stream, 1 to 100,000.
        expansion: Hidden width as a multiple of d, 1 to 64 (for "swiglu": of the GELU MLP
            whose parameter count it matches).
        kind: "gelu" (GPT-2's MLP, with biases) or "swiglu" (LLaMA's gated FFN, no biases,
            hidden width 2/3 of expansion × d rounded up to a multiple of 256).

    Returns:
        `d_ff` (hidden width), `stages` (list of dicts with `name` and `shape`, in order)
            and `params` (per matrix, weights plus biases, and `total`).

    Raises:
        ValueError: On sizes that are not positive whole numbers or are too big, or an unknown kind.

    Examples:
        >>> mlp_shapes()["params"]["total"]
        4722432
        >>> mlp_shapes(d_model=4096, kind="swiglu")["d_ff"]
        11008
    """
    T = _as_int("seq_len", seq_len, 1, 1_000_000)
    d = _as_int("d_model", d_model, 1, 100_000)
    k = _as_int("expansion", expansion, 1, 64)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    if kind == "swiglu":
        d_ff = -(-2 * k * d // (3 * SWIGLU_MULTIPLE)) * SWIGLU_MULTIPLE  # ceil(2/3 k d) to a multiple of 256
        gate = up = d * d_ff
        down = d_ff * d
        return {
            "d_ff": d_ff,
            "stages": [
                {"name": "input x", "shape": [T, d]},
                {"name": "gate: x W_gate", "shape": [T, d_ff]},
                {"name": "up: x W_up", "shape": [T, d_ff]},
                {"name": "Swish(gate) ⊙ up", "shape": [T, d_ff]},
                {"name": "project: h W_down", "shape": [T, d]},
            ],
            "params": {"gate": gate, "up": up, "down": down, "total": gate + up + down},
        }
    d_ff = k * d
    fc, proj = d * d_ff + d_ff, d_ff * d + d  # weights + biases
    return {
        "d_ff": d_ff,
        "stages": [
            {"name": "input x", "shape": [T, d]},
            {"name": "expand: x W_fc + b_fc", "shape": [T, d_ff]},
            {"name": "GELU", "shape": [T, d_ff]},
            {"name": "project: h W_proj + b_proj", "shape": [T, d]},
        ],
        "params": {"fc": fc, "proj": proj, "total": fc + proj},
    }


def swiglu_forward(x: Matrix, w_gate: Matrix, w_up: Matrix, w_down: Matrix) -> list[list[float]]:
    """Run the gated feed-forward block on T token vectors: `(Swish(x W_gate) * (x W_up)) W_down`.

    Args:
        x: Token vectors, T rows of width d.
        w_gate: Gate weights, d rows of width d_ff (passed through Swish).
        w_up: Up weights, d rows of width d_ff (no activation).
        w_down: Projection weights, d_ff rows of width d.

    Returns:
        The output, T rows of width d.

    Raises:
        ValueError: If a shape does not fit the others.

    Examples:
        >>> swiglu_forward([[1.0]], [[1.0]], [[2.0]], [[1.0]])[0][0] == 2 / (1 + math.exp(-1))
        True
    """
    x = _as_array("x", x, 2)  # (T, d)
    w_gate, w_up, w_down = (_as_array(n, w, 2) for n, w in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)))
    d, d_ff = x.shape[1], w_gate.shape[1]
    if w_gate.shape[0] != d or w_up.shape != (d, d_ff):
        raise ValueError(f"w_gate and w_up must both have shape ({d}, d_ff), got {w_gate.shape} and {w_up.shape}.")
    if w_down.shape != (d_ff, d):
        raise ValueError(f"w_down must have shape ({d_ff}, {d}), got {w_down.shape}.")
    gate = x @ w_gate  # (T, d_ff)
    h = gate * 0.5 * (1.0 + np.tanh(gate / 2)) * (x @ w_up)  # Swish(gate) * up, sigmoid written stably; (T, d_ff)
    return (h @ w_down).tolist()  # (T, d)


def mlp_forward(x: Matrix, w_fc: Matrix, b_fc: Sequence[float], w_proj: Matrix, b_proj: Sequence[float], approximate: str = "tanh") -> list[list[float]]:
    """Run the MLP block on T token vectors: `GELU(x W_fc + b_fc) W_proj + b_proj`.

    Args:
        x: Token vectors, T rows of width d.
        w_fc: Expansion weights, d rows of width d_ff.
        b_fc: Expansion bias, d_ff numbers.
        w_proj: Projection weights, d_ff rows of width d.
        b_proj: Projection bias, d numbers.
        approximate: "tanh" (GPT-2) or "none" (exact GELU).

    Returns:
        The output, T rows of width d: the same shape as `x`.

    Raises:
        ValueError: If a shape does not fit the others.
    """
    approximate = _as_approximate(approximate)
    x = _as_array("x", x, 2)  # (T, d)
    w_fc, w_proj = _as_array("w_fc", w_fc, 2), _as_array("w_proj", w_proj, 2)  # (d, d_ff), (d_ff, d)
    b_fc, b_proj = _as_array("b_fc", b_fc, 1), _as_array("b_proj", b_proj, 1)  # (d_ff,), (d,)
    d, d_ff = x.shape[1], w_fc.shape[1]
    if w_fc.shape[0] != d:
        raise ValueError(f"w_fc must have d = {d} rows (one per input feature), got {w_fc.shape[0]}.")
    if b_fc.shape != (d_ff,):
        raise ValueError(f"b_fc must have d_ff = {d_ff} entries, got {b_fc.shape[0]}.")
    if w_proj.shape != (d_ff, d):
        raise ValueError(f"w_proj must have shape ({d_ff}, {d}), got {w_proj.shape}.")
    if b_proj.shape != (d,):
        raise ValueError(f"b_proj must have d = {d} entries, got {b_proj.shape[0]}.")
    h = _gelu(x @ w_fc + b_fc, approximate)  # (T, d_ff)
    return (h @ w_proj + b_proj).tolist()  # (T, d)
