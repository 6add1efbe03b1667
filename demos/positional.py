"""Position vectors: the sinusoidal table of the original Transformer, and learned tables.

Attention by itself ignores order: permute the input rows and the output rows
are permuted the same way. The original Transformer therefore adds a position
vector PE[pos] of width d to every token embedding, made of sine/cosine pairs
at d/2 frequencies:

    PE[pos, 2i]   = sin(pos * w_i)
    PE[pos, 2i+1] = cos(pos * w_i),      w_i = 10000^(-2i/d),  i = 0 .. d/2 - 1

Low i oscillate quickly, high i slowly. Two facts follow from the angle
addition formulas, and this module lets a reader check both:

* shifting by k positions is one fixed linear map: each (sin, cos) pair is
  rotated by the angle k * w_i, whatever pos is, so PE[pos + k] = M_k PE[pos];
* PE[p] . PE[q] = sum_i cos((p - q) w_i) depends only on the offset p - q.

GPT-2 learns its table instead (`wpe`, 1024 x 768); `learned_similarity` takes
such a table and returns how similar its rows are.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

from demos._checks import as_int as _as_int

MAX_VIEW_POSITIONS = 128  # the widget draws one cell per (position, position) pair
MAX_VIEW_D_MODEL = 256


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_width(name, value, high=4096):
    """An even width: sines and cosines come in pairs."""
    d = _as_int(name, value, 2, high)
    if d % 2:
        raise ValueError(f"{name} must be even, because dimensions come in (sin, cos) pairs; got {d}.")
    return d


def _as_base(base):
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number greater than 1 (the original is 10000), got {base!r}.")
    return float(base)


def _as_table(name, value):
    """A non-empty (rows, cols) float64 table of finite numbers."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a table: a list of rows of numbers.")
    try:
        t = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a table: a list of equally long rows of numbers.") from None
    if t.ndim != 2 or t.size == 0:
        raise ValueError(f"{name} must be a non-empty table (positions x dimensions), got shape {t.shape}.")
    if not np.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or an infinite value.")
    return t


# ----------------------------------------------------------------------------
# the math, on float64 arrays


def _omega(d, base):
    """Frequencies w_i = base^(-2i/d), shape (d/2,), from fast (w_0 = 1) to slow."""
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def _table(positions, d, base):
    """PE rows for an array of positions: shape (len(positions), d)."""
    angles = np.asarray(positions, dtype=np.float64)[:, None] * _omega(d, base)  # (n, d/2)
    pe = np.empty((angles.shape[0], d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def _shift_matrix(k, d, base):
    """(d, d) block-diagonal M_k with PE[pos + k] = M_k @ PE[pos] for every pos."""
    m = np.zeros((d, d))
    for i, a in enumerate(k * _omega(d, base)):
        c, s = math.cos(a), math.sin(a)
        # sin(x + a) = sin x cos a + cos x sin a;  cos(x + a) = cos x cos a - sin x sin a
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def _similarity(t, measure):
    """(n, n) dot products or cosine similarities between the rows of t (n, d)."""
    dots = t @ t.T
    if measure == "dot":
        return dots
    norms = np.linalg.norm(t, axis=1)  # (n,)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise ValueError(f"row {int(zero[0])} is all zeros, so its cosine similarity is undefined.")
    return dots / np.outer(norms, norms)


def _as_measure(measure):
    if measure not in ("cosine", "dot"):
        raise ValueError(f'measure must be "cosine" or "dot", got {measure!r}.')
    return measure


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def frequencies(d_model: int, base: float = 10000.0) -> list[float]:
    """The d/2 angular frequencies w_i = base^(-2i/d) of the sinusoidal table.

    Args:
        d_model: Even width d.
        base: 10000 in the original Transformer.

    Returns:
        `[w_0, ..., w_{d/2-1}]`, from w_0 = 1 (period 2*pi positions) down to
        nearly base^-1.

    Examples:
        >>> frequencies(4)
        [1.0, 0.01]
    """
    return _omega(_as_width("d_model", d_model), _as_base(base)).tolist()


def sinusoidal_table(n_positions: int, d_model: int, base: float = 10000.0) -> list[list[float]]:
    """The (n_positions, d_model) sinusoidal position table of "Attention Is All You Need".

    Row pos holds sin(pos * w_i) in column 2i and cos(pos * w_i) in column 2i+1.

    Args:
        n_positions: Number of positions (rows), 1 to 100,000.
        d_model: Even width d (columns).
        base: Frequency base, 10000 in the original.

    Returns:
        The table as a list of rows.

    Raises:
        ValueError: If d_model is odd or a size is out of range.

    Examples:
        >>> sinusoidal_table(2, 2)[1] == [math.sin(1.0), math.cos(1.0)]
        True
    """
    n = _as_int("n_positions", n_positions, 1, 100_000)
    return _table(np.arange(n), _as_width("d_model", d_model), _as_base(base)).tolist()


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> list[list[float]]:
    """The linear map M_k that moves every position vector k places: PE[pos + k] = M_k PE[pos].

    M_k is block diagonal: the (sin, cos) pair i is rotated by the angle k * w_i.
    It does not depend on pos, which is why a model can learn to attend "k tokens
    back" with one linear map.

    Args:
        k: The shift (any whole number; negative moves backwards).
        d_model: Even width d.
        base: Frequency base.

    Returns:
        The (d, d) matrix as a list of rows.
    """
    k = _as_int("k", k, -1_000_000, 1_000_000)
    return _shift_matrix(k, _as_width("d_model", d_model), _as_base(base)).tolist()


def shift_check(position: int, k: int, d_model: int, base: float = 10000.0) -> dict:
    """Check PE[position + k] = M_k PE[position] numerically.

    Args:
        position: A position >= 0.
        k: Shift; position + k must be >= 0.
        d_model: Even width d.
        base: Frequency base.

    Returns:
        `{"shifted": PE[position + k], "mapped": M_k @ PE[position],
        "max_abs_error": largest entry-wise difference}`.
    """
    pos = _as_int("position", position, 0, 1_000_000)
    k = _as_int("k", k, -pos, 1_000_000)
    d, base = _as_width("d_model", d_model), _as_base(base)
    shifted = _table([pos + k], d, base)[0]
    mapped = _shift_matrix(k, d, base) @ _table([pos], d, base)[0]
    return {"shifted": shifted.tolist(), "mapped": mapped.tolist(), "max_abs_error": float(np.abs(shifted - mapped).max())}


def relative_dot(p: int, q: int, k: int = 0, d_model: int = 64, base: float = 10000.0) -> dict:
    """PE[p] . PE[q] next to PE[p + k] . PE[q + k]: equal, because only p - q matters.

    Each (sin, cos) pair contributes sin(p w) sin(q w) + cos(p w) cos(q w) =
    cos((p - q) w), so the dot product is sum_i cos((p - q) w_i), largest (d/2)
    at p = q.

    Args:
        p: First position (>= 0).
        q: Second position (>= 0).
        k: Shift applied to both; p + k and q + k must stay >= 0.
        d_model: Even width d.
        base: Frequency base.

    Returns:
        `{"p", "q", "k", "offset" (p - q), "dot", "shifted_dot", "closed_form"
        (sum_i cos((p - q) w_i)), "difference" (|dot - shifted_dot|)}`.
    """
    p = _as_int("p", p, 0, 1_000_000)
    q = _as_int("q", q, 0, 1_000_000)
    k = _as_int("k", k, -min(p, q), 1_000_000)
    d, base = _as_width("d_model", d_model), _as_base(base)
    pe = _table([p, q, p + k, q + k], d, base)  # (4, d)
    dot, shifted = float(pe[0] @ pe[1]), float(pe[2] @ pe[3])
    return {
        "p": p,
        "q": q,
        "k": k,
        "offset": p - q,
        "dot": dot,
        "shifted_dot": shifted,
        "closed_form": float(np.cos((p - q) * _omega(d, base)).sum()),
        "difference": abs(dot - shifted),
    }


def similarity_matrix(table: Sequence[Sequence[float]], measure: str = "cosine") -> list[list[float]]:
    """How alike every pair of rows of a position table is.

    Args:
        table: Shape (n, d), one row per position.
        measure: "cosine" (dot product of the normalised rows, in [-1, 1]) or
            "dot" (the plain dot product).

    Returns:
        The (n, n) similarity matrix.

    Raises:
        ValueError: On a malformed table, or a zero row with "cosine".
    """
    return _similarity(_as_table("table", table), _as_measure(measure)).tolist()


def learned_similarity(table: Sequence[Sequence[float]], measure: str = "cosine", step: int = 1) -> dict:
    """Similarity matrix of a learned position table, such as GPT-2's `wpe` (1024 x 768).

    A learned table has no formula, so its structure has to be looked at: rows of
    nearby positions that are similar show that the model learned a sense of
    distance. Large tables can be thinned out with `step`.

    Args:
        table: Shape (n, d), one row per position.
        measure: "cosine" or "dot".
        step: Keep every `step`-th position (1 keeps all).

    Returns:
        `{"positions": the kept positions, "similarity": (m, m) matrix,
        "measure": measure}`.

    Raises:
        ValueError: On a malformed table or step.
    """
    t = _as_table("table", table)
    step = _as_int("step", step, 1, t.shape[0])
    kept = np.arange(0, t.shape[0], step)
    return {"positions": kept.tolist(), "similarity": _similarity(t[kept], _as_measure(measure)).tolist(), "measure": measure}


def sinusoidal_view(n_positions: int = 32, d_model: int = 32, p: int = 3, q: int = 8, k: int = 5, base: float = 10000.0) -> dict:
    """What the positions widget draws: the table, its dot-product similarity and one readout.

    Args:
        n_positions: Rows to draw, 1 to 128.
        d_model: Even width, 2 to 256.
        p: First position of the readout.
        q: Second position of the readout.
        k: Shift of the readout.
        base: Frequency base.

    Returns:
        `{"n_positions", "d_model", "frequencies" (d/2,), "table" (n, d),
        "similarity" (n, n) dot products, "readout": relative_dot(p, q, k)}`.
    """
    n = _as_int("n_positions", n_positions, 1, MAX_VIEW_POSITIONS)
    d = _as_width("d_model", d_model, MAX_VIEW_D_MODEL)
    base = _as_base(base)
    readout = relative_dot(p, q, k, d, base)
    table = _table(np.arange(n), d, base)
    return {
        "n_positions": n,
        "d_model": d,
        "frequencies": _omega(d, base).tolist(),
        "table": table.tolist(),
        "similarity": _similarity(table, "dot").tolist(),
        "readout": readout,
    }
