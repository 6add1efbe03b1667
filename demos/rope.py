"""Rotary position embeddings (RoPE): rotate queries and keys instead of adding positions.

RoPE leaves the token embeddings alone. Inside attention it cuts a query or key
vector of width d into d/2 pairs (x[2i], x[2i+1]) and turns pair i of the vector
at position m by the angle m * theta_i, with theta_i = base^(-2i/d) (the
frequencies of the sinusoidal table):

    (x, y)  ->  (x cos a - y sin a,  x sin a + y cos a),    a = m * theta_i

A rotation preserves lengths, and rotating q by m*theta and k by n*theta changes
their dot product exactly as rotating q by (m - n)*theta alone would. So the
attention logit q_m . k_n depends on the positions only through m - n, and no
parameter has to be learned for any position, however far.

For q = k the logit, relative to its value at distance 0, tends to fall as the
distance grows, but not monotonically: the sum of cosines at many frequencies
rises again here and there. `distance_decay` computes that curve and RoFormer's
upper bound on the logit, and lists where each rises.

Pairs are adjacent dimensions (2i, 2i+1), as in RoFormer and Meta's LLaMA code;
Hugging Face pairs dimension i with i + d/2 instead ("rotate_half"), which is the
same computation on permuted dimensions.
"""

from collections.abc import Sequence

import numpy as np

from demos.positional import _as_base, _as_int, _as_table, _as_width, _omega

MAX_POSITION = 1_000_000
MAX_DISTANCE = 4096


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_vector(name, value, d=None):
    v = _as_table(name, [value])[0]
    if d is not None and v.size != d:
        raise ValueError(f"{name} must have {d} entries, got {v.size}.")
    if v.size % 2:
        raise ValueError(f"{name} must have an even number of entries, to form pairs; got {v.size}.")
    return v


def _as_positions(name, value, count):
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a list of whole numbers.")
    positions = [_as_int(f"{name}[{i}]", p, 0, MAX_POSITION) for i, p in enumerate(value)]
    if len(positions) != count:
        raise ValueError(f"give one position per row: {count} rows but {len(positions)} positions.")
    return np.array(positions, dtype=np.float64)


# ----------------------------------------------------------------------------
# the math, on float64 arrays


def _rotate(x, positions, base):
    """RoPE on x (T, d) at positions (T,): pair i of row t turned by positions[t] * theta_i."""
    angles = positions[:, None] * _omega(x.shape[1], base)  # (T, d/2)
    c, s = np.cos(angles), np.sin(angles)
    even, odd = x[:, 0::2], x[:, 1::2]  # (T, d/2) each: the two coordinates of every pair
    out = np.empty_like(x)
    out[:, 0::2] = even * c - odd * s
    out[:, 1::2] = even * s + odd * c
    return out


def _score(q, k, m, n, base):
    """(R_m q) . (R_n k) for vectors q, k of shape (d,)."""
    rotated = _rotate(np.stack([q, k]), np.array([m, n], dtype=np.float64), base)
    return float(rotated[0] @ rotated[1])


def _similarity_curve(q, k, distances, base):
    """Cosine between q rotated by r*theta and k, for each distance r (key at 0, query at r)."""
    rotated = _rotate(np.tile(q, (distances.size, 1)), distances.astype(np.float64), base)  # (R, d)
    return rotated @ k / (np.linalg.norm(q) * np.linalg.norm(k))


def _bound_curve(d, distances, base):
    """RoFormer's bound: mean_j |sum_{i<j} e^{i r theta_i}|, j = 1..d/2, divided by its r = 0 value."""
    angles = distances[:, None].astype(np.float64) * _omega(d, base)  # (R, d/2)
    partial = np.hypot(np.cumsum(np.cos(angles), axis=1), np.cumsum(np.sin(angles), axis=1))  # |S_j|
    half = d // 2
    return partial.mean(axis=1) / ((half + 1) / 2)  # at r = 0, |S_j| = j, whose mean is (d/2 + 1)/2


def _rises(values):
    """Distances r >= 1 where the curve goes up: values[r] > values[r - 1]."""
    return (np.flatnonzero(np.diff(values) > 0) + 1).tolist()


def _vectors(kind, d, seed):
    if kind == "ones":
        return np.ones(d), np.ones(d)
    if kind == "random":
        rng = np.random.default_rng(_as_int("seed", seed, 0, 2**32 - 1))
        return rng.uniform(-1.0, 1.0, d), rng.uniform(-1.0, 1.0, d)
    raise ValueError(f'vectors must be "ones" or "random", got {kind!r}.')


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def rope_frequencies(d: int, base: float = 10000.0) -> list[float]:
    """The rotation speeds theta_i = base^(-2i/d), one per pair of dimensions.

    Args:
        d: Even head width.
        base: 10000 in RoFormer and LLaMA.

    Returns:
        `[theta_0, ..., theta_{d/2-1}]`: pair 0 turns by 1 radian per position,
        the last pair barely moves.

    Examples:
        >>> rope_frequencies(4)
        [1.0, 0.01]
    """
    return _omega(_as_width("d", d), _as_base(base)).tolist()


def apply_rope(x: Sequence[Sequence[float]], positions: Sequence[int], base: float = 10000.0) -> list[list[float]]:
    """Rotate every row of x by its position: pair i of row t turns by positions[t] * theta_i.

    Args:
        x: Queries or keys of one head, shape (T, d) with d even.
        positions: T positions (whole numbers >= 0).
        base: Frequency base.

    Returns:
        The rotated rows, shape (T, d). Each pair keeps its length.

    Raises:
        ValueError: On an odd width, mismatched lengths or bad numbers.

    Examples:
        >>> [round(a, 6) for a in apply_rope([[1.0, 0.0]], [1])[0]]   # turned by 1 radian
        [0.540302, 0.841471]
    """
    x = _as_table("x", x)
    _as_width("the width of x", x.shape[1])
    return _rotate(x, _as_positions("positions", positions, x.shape[0]), _as_base(base)).tolist()


def rope_score(q: Sequence[float], k: Sequence[float], m: int, n: int, base: float = 10000.0) -> float:
    """The attention logit (before scaling) of a query at position m and a key at position n.

    Args:
        q: Query vector (even width).
        k: Key vector of the same width.
        m: Position of the query (>= 0).
        n: Position of the key (>= 0).
        base: Frequency base.

    Returns:
        (R_m q) . (R_n k), which equals (R_{m-n} q) . k.
    """
    q = _as_vector("q", q)
    k = _as_vector("k", k, q.size)
    return _score(q, k, _as_int("m", m, 0, MAX_POSITION), _as_int("n", n, 0, MAX_POSITION), _as_base(base))


def relative_check(q: Sequence[float], k: Sequence[float], m: int, n: int, shift: int, base: float = 10000.0) -> dict:
    """Move query and key by the same amount: the RoPE logit does not change.

    Args:
        q: Query vector (even width).
        k: Key vector of the same width.
        m: Query position (>= 0).
        n: Key position (>= 0).
        shift: Added to both positions; m + shift and n + shift must be >= 0.
        base: Frequency base.

    Returns:
        `{"offset": m - n, "score": logit at (m, n), "shifted_score": logit at
        (m + shift, n + shift), "difference": |score - shifted_score|}`.
    """
    q = _as_vector("q", q)
    k = _as_vector("k", k, q.size)
    m, n = _as_int("m", m, 0, MAX_POSITION), _as_int("n", n, 0, MAX_POSITION)
    shift = _as_int("shift", shift, -min(m, n), MAX_POSITION)
    base = _as_base(base)
    score, shifted = _score(q, k, m, n, base), _score(q, k, m + shift, n + shift, base)
    return {"offset": m - n, "score": score, "shifted_score": shifted, "difference": abs(score - shifted)}


def distance_decay(d: int = 128, max_distance: int = 256, base: float = 10000.0, vectors: str = "ones", seed: int = 0) -> dict:
    """How the RoPE logit changes with the distance between query and key.

    Two curves over distances r = 0 .. max_distance (query r positions after
    the key):

    - `similarity`: the cosine between the rotated query and the key,
      q.R_r k / (|q| |k|). For q = k = all ones it is mean_i cos(r theta_i);
    - `bound`: RoFormer's upper bound on the logit, mean_j |sum_{i<j} e^{i r theta_i}|,
      divided by its value at r = 0 (so it starts at 1).

    Both fall on the whole, but neither is monotonic: `similarity_rises` and
    `bound_rises` list the distances where a curve goes up again.

    Args:
        d: Even head width, 2 to 1024.
        max_distance: Largest distance, 1 to 4096.
        base: Frequency base.
        vectors: "ones" (q = k = all ones) or "random" (seeded uniform q, k).
        seed: Seed for "random".

    Returns:
        `{"distances", "similarity", "bound", "similarity_rises", "bound_rises",
        "monotonic"}` where `monotonic` is True only if neither curve ever rises.
    """
    d = _as_width("d", d, 1024)
    r = np.arange(_as_int("max_distance", max_distance, 1, MAX_DISTANCE) + 1)
    base = _as_base(base)
    q, k = _vectors(vectors, d, seed)
    similarity, bound = _similarity_curve(q, k, r, base), _bound_curve(d, r, base)
    sim_rises, bound_rises = _rises(similarity), _rises(bound)
    return {
        "distances": r.tolist(),
        "similarity": similarity.tolist(),
        "bound": bound.tolist(),
        "similarity_rises": sim_rises,
        "bound_rises": bound_rises,
        "monotonic": not sim_rises and not bound_rises,
    }


def rope_view(d: int = 32, pair: int = 0, m: int = 6, n: int = 2, base: float = 10000.0, max_distance: int = 64, vectors: str = "ones", seed: int = 0) -> dict:
    """What the RoPE widget draws: one rotating pair, the full logit and the distance curve.

    Args:
        d: Even head width, 2 to 1024.
        pair: Which pair of dimensions to draw, 0 .. d/2 - 1.
        m: Query position.
        n: Key position.
        base: Frequency base.
        max_distance: Length of the distance curve.
        vectors: "ones" or "random" query and key.
        seed: Seed for "random".

    Returns:
        `{"theta": theta_pair, "angle_q": m theta, "angle_k": n theta,
        "q_pair", "k_pair" (the pair before rotation), "q_rotated", "k_rotated",
        "pair_score" (their dot product), "score" (the full logit at (m, n)),
        "relative_score" (the logit with the query at m - n and the key at 0,
        when m >= n, else at (0, n - m)), "offset": m - n}` merged with
        `distance_decay(d, max_distance, base, vectors, seed)`.
    """
    d = _as_width("d", d, 1024)
    i = _as_int("pair", pair, 0, d // 2 - 1)
    m, n = _as_int("m", m, 0, MAX_POSITION), _as_int("n", n, 0, MAX_POSITION)
    base = _as_base(base)
    q, k = _vectors(vectors, d, seed)
    rotated = _rotate(np.stack([q, k]), np.array([m, n], dtype=np.float64), base)  # (2, d)
    theta = float(_omega(d, base)[i])
    lo = min(m, n)
    view = {
        "theta": theta,
        "angle_q": m * theta,
        "angle_k": n * theta,
        "q_pair": q[2 * i : 2 * i + 2].tolist(),
        "k_pair": k[2 * i : 2 * i + 2].tolist(),
        "q_rotated": rotated[0, 2 * i : 2 * i + 2].tolist(),
        "k_rotated": rotated[1, 2 * i : 2 * i + 2].tolist(),
        "pair_score": float(rotated[0, 2 * i : 2 * i + 2] @ rotated[1, 2 * i : 2 * i + 2]),
        "score": float(rotated[0] @ rotated[1]),
        "relative_score": _score(q, k, m - lo, n - lo, base),
        "offset": m - n,
    }
    return {**view, **distance_decay(d, max_distance, base, vectors, seed)}
