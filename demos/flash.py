"""FlashAttention's idea: attention in tiles with an online softmax, never storing the T × T scores.

Plain attention builds the whole score matrix `S = Q K^T / sqrt(d)` (T × T), turns
it into weights `P = softmax(S)` row by row, and multiplies `P V`. For long
sequences S and P are far bigger than Q, K, V and the output, and writing them to
main memory and reading them back dominates the running time.

The tiled version walks over blocks of keys and values and keeps, for every query
row, only three running quantities:

    m   the largest score seen so far
    l   the sum of exp(score - m) over the scores seen so far
    acc the sum of exp(score - m) * value over the same scores   (d,)

When a new block raises the maximum from m to m', everything accumulated so far
was scaled by exp(-m) and must now be scaled by exp(-m'), so `l` and `acc` are
multiplied by `exp(m - m')` before the block's terms are added. After the last
block, `acc / l` is exactly the softmax-weighted sum: the same numbers as plain
attention, up to rounding, without ever holding a full row of weights.

`memory_traffic` counts the elements each method moves between main memory and
the fast on-chip memory under a simple model (see its docstring).

Every public function takes and returns plain Python data; inside, float64 NumPy.
"""

import math
from collections.abc import Sequence

import numpy as np

from demos._checks import MAX_ELEMENTS
from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int

Matrix = Sequence[Sequence[float]]  # rows of numbers, e.g. T token vectors of width d

BYTES_PER_VALUE = {"float32": 4, "float16": 2, "bfloat16": 2}


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}.")
    return value


def _as_matrix(name, x):
    a = _as_float_array(name, x, what="vectors")
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty matrix (tokens × width), got shape {a.shape}.")
    return _as_finite(name, a)


def _as_qkv(q, k, v, causal):
    q, k, v = _as_matrix("q", q), _as_matrix("k", k), _as_matrix("v", v)
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k and v need one row per key: got {k.shape[0]} keys and {v.shape[0]} values.")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"queries and keys must have the same width, got {q.shape[1]} and {k.shape[1]}.")
    if _as_bool("causal", causal) and q.shape[0] != k.shape[0]:
        raise ValueError("causal attention needs as many queries as keys (self-attention).")
    return q, k, v


# ----------------------------------------------------------------------------
# the math


def _scores(q, k, causal, q_start=0, k_start=0):
    """Scaled scores (Tq, Tk) of a query block against a key block, future keys at -inf."""
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        rows = q_start + np.arange(q.shape[0])[:, None]
        cols = k_start + np.arange(k.shape[0])[None, :]
        s = np.where(cols > rows, -np.inf, s)
    return s


def _naive(q, k, v, causal):
    s = _scores(q, k, causal)  # (T, T) the whole score matrix
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v  # (T, d)


def _tiled(q, k, v, causal, block_q, block_k):
    """FlashAttention-style forward: outer loop over query tiles, inner over key/value tiles."""
    T, d = q.shape
    out = np.empty((T, v.shape[1]))
    for i0 in range(0, T, block_q):
        qi = q[i0 : i0 + block_q]  # (Br, d)
        m = np.full(qi.shape[0], -np.inf)  # (Br,) running max
        l = np.zeros(qi.shape[0])  # (Br,) running sum
        acc = np.zeros((qi.shape[0], v.shape[1]))  # (Br, d) running weighted sum
        for j0 in range(0, k.shape[0], block_k):
            if causal and j0 > i0 + qi.shape[0] - 1:
                break  # this and every later key tile lies entirely in the future
            s = _scores(qi, k[j0 : j0 + block_k], causal, i0, j0)  # (Br, Bc) one tile
            m_new = np.maximum(m, s.max(axis=1))  # (Br,)
            scale = np.exp(m - m_new)  # (Br,) rescales what was accumulated; exp(-inf) = 0
            p = np.exp(s - m_new[:, None])  # (Br, Bc)
            l = l * scale + p.sum(axis=1)
            acc = acc * scale[:, None] + p @ v[j0 : j0 + block_k]
            m = m_new
        out[i0 : i0 + block_q] = acc / l[:, None]
    return out


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def naive_attention(q: Matrix, k: Matrix, v: Matrix, causal: bool = False) -> list[list[float]]:
    """Plain attention `softmax(q k^T / sqrt(d)) v`, materialising the score matrix.

    Args:
        q: Queries, Tq rows of width d.
        k: Keys, Tk rows of width d.
        v: Values, Tk rows (any width).
        causal: Hide later keys from each query (needs Tq = Tk).

    Returns:
        The output, Tq rows of v's width.

    Raises:
        ValueError: On mismatched shapes.
    """
    return _naive(*_as_qkv(q, k, v, causal), causal).tolist()


def flash_attention(q: Matrix, k: Matrix, v: Matrix, causal: bool = False, block_q: int = 4, block_k: int = 4) -> list[list[float]]:
    """Tiled attention with the online softmax; equal to `naive_attention` up to rounding.

    Args:
        q: Queries, Tq rows of width d.
        k: Keys, Tk rows of width d.
        v: Values, Tk rows.
        causal: Hide later keys (needs Tq = Tk); key tiles entirely in a query
            tile's future are skipped.
        block_q: Query rows per tile, >= 1 (the last tile may be shorter).
        block_k: Key/value rows per tile, >= 1.

    Returns:
        The output, Tq rows of v's width.

    Raises:
        ValueError: On mismatched shapes or tile sizes below 1.
    """
    q, k, v = _as_qkv(q, k, v, causal)
    bq = _as_int("block_q", block_q, 1, MAX_ELEMENTS)
    bk = _as_int("block_k", block_k, 1, MAX_ELEMENTS)
    return _tiled(q, k, v, causal, bq, bk).tolist()


def online_softmax_trace(q: Matrix, k: Matrix, v: Matrix, row: int = 0, block_k: int = 4, causal: bool = False) -> dict:
    """Follow one query row through the key tiles: running max, sum and output.

    Args:
        q: Queries (Tq, d).
        k: Keys (Tk, d).
        v: Values (Tk, dv).
        row: Which query row to follow, 0-based.
        block_k: Keys per tile.
        causal: Hide later keys; tiles after the row's own position are skipped.

    Returns:
        `steps`, one per tile visited, each with `keys` ([first, last] key index),
            `scores` (the tile's scaled scores; masked ones are omitted), `tile_max`,
            `max_before`, `max_after`, `rescale` (exp(max_before - max_after)),
            `sum_after`, and `output_after` (acc / l: the answer if the row stopped
            here); then `output` (the final row) and `reference` (the same row of
            `naive_attention`). `max_before` of the first tile is -inf.

    Raises:
        ValueError: On mismatched shapes or an out-of-range row or tile size.
    """
    q, k, v = _as_qkv(q, k, v, causal)
    r = _as_int("row", row, 0, q.shape[0] - 1)
    bk = _as_int("block_k", block_k, 1, MAX_ELEMENTS)
    qr = q[r : r + 1]  # (1, d)
    m, l, acc = -np.inf, 0.0, np.zeros(v.shape[1])
    steps = []
    last_key = r if causal else k.shape[0] - 1
    for j0 in range(0, last_key + 1, bk):
        j1 = min(j0 + bk, last_key + 1)  # keys j0 .. j1-1 are visible
        s = _scores(qr, k[j0:j1], False)[0]  # (n,) all visible: the mask is the range
        m_new = max(m, float(s.max()))
        scale = math.exp(m - m_new)
        p = np.exp(s - m_new)
        l = l * scale + float(p.sum())
        acc = acc * scale + p @ v[j0:j1]
        steps.append(
            {
                "keys": [j0, j1 - 1],
                "scores": s.tolist(),
                "tile_max": float(s.max()),
                "max_before": m,
                "max_after": m_new,
                "rescale": scale,
                "sum_after": l,
                "output_after": (acc / l).tolist(),
            }
        )
        m = m_new
    return {"steps": steps, "output": (acc / l).tolist(), "reference": _naive(q, k, v, causal)[r].tolist()}


def memory_traffic(seq_len: int = 1024, d_head: int = 64, block_q: int = 64, block_k: int = 64, causal: bool = False, dtype: str = "float16") -> dict:
    """Elements moved between main memory and on-chip memory: plain versus tiled attention.

    A simple counting model for one head (T = seq_len, d = d_head); every operand
    is read once per kernel that needs it, and results are written once.

    Plain attention, three kernels:

    1. `S = Q K^T / sqrt(d)`: read Q and K (2Td), write S (T^2);
    2. `P = softmax(S)`: read S (T^2), write P (T^2);
    3. `O = P V`: read P (T^2) and V (Td), write O (Td).

    Total `4Td + 4T^2`, of which `4T^2` is score-matrix traffic. (A causal mask
    changes none of this: the full matrix is still stored.)

    Tiled attention, one kernel: for each of the ceil(T / block_q) query tiles,
    read the tile of Q, read every key and value tile it needs (all of them; with
    a causal mask only those not entirely in its future), and write its tile of
    O. Scores, weights and the running max and sum stay on chip: zero
    score-matrix traffic. On-chip memory needed: the Q tile, one K and one V
    tile, the score tile, the accumulator and two running statistics per row.

    Args:
        seq_len: T, 1 to 1,000,000.
        d_head: d, 1 to 1024.
        block_q: Query rows per tile, 1 to T.
        block_k: Key rows per tile, 1 to T.
        causal: Skip key tiles entirely in the future (tiled only).
        dtype: "float32", "float16" or "bfloat16", for the byte counts.

    Returns:
        `naive` and `tiled`, each with `reads`, `writes`, `total`,
            `score_matrix` (elements of S or P moved) and `bytes`; plus `ratio`
            (naive total / tiled total), `tiles` (number of query-tile × key-tile
            pairs computed) and `on_chip_elements` (what one tiled step holds).

    Raises:
        ValueError: On sizes out of range or an unknown dtype.

    Examples:
        >>> memory_traffic(1024, 64, 64, 64, dtype="float32")["naive"]["score_matrix"]
        4194304
    """
    T = _as_int("seq_len", seq_len, 1, 1_000_000)
    d = _as_int("d_head", d_head, 1, 1024)
    bq = _as_int("block_q", block_q, 1, T)
    bk = _as_int("block_k", block_k, 1, T)
    causal = _as_bool("causal", causal)
    if dtype not in BYTES_PER_VALUE:
        raise ValueError(f"dtype must be one of {', '.join(BYTES_PER_VALUE)}, got {dtype!r}.")
    nbytes = BYTES_PER_VALUE[dtype]

    naive_reads = 2 * T * d + T * T + T * T + T * d  # Q, K | S | P, V
    naive_writes = T * T + T * T + T * d  # S | P | O

    starts = np.arange(0, T, bq, dtype=np.int64)  # first row of each query tile
    last = np.minimum(starts + bq, T) - 1 if causal else np.full(starts.size, T - 1)  # last key it may see
    key_tiles = last // bk + 1  # key tiles starting at or before that key
    kv_rows = int(np.minimum(key_tiles * bk, T).sum())  # key (and value) rows read over all query tiles
    tiles = int(key_tiles.sum())
    tiled_reads = T * d + 2 * kv_rows * d  # every Q row once; K and V rows once per query tile
    tiled_writes = T * d  # O

    def summary(reads, writes, scores):
        return {"reads": reads, "writes": writes, "total": reads + writes, "score_matrix": scores, "bytes": (reads + writes) * nbytes}

    naive = summary(naive_reads, naive_writes, 4 * T * T)
    tiled = summary(tiled_reads, tiled_writes, 0)
    return {
        "naive": naive,
        "tiled": tiled,
        "ratio": naive["total"] / tiled["total"],
        "tiles": tiles,
        "on_chip_elements": bq * d + 2 * bk * d + bq * bk + bq * d + 2 * bq,
    }
