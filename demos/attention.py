"""Scaled dot-product attention, one step at a time, and its multi-head form.

One attention head turns a query matrix Q (T_q, d_k), a key matrix K (T_k, d_k)
and a value matrix V (T_k, d_v) into one output row per query:

    scores  = Q K^T                      (T_q, T_k)  how well each query matches each key
    scaled  = scores / sqrt(d_k)                     keeps the softmax out of saturation
    masked  = scaled, with -inf where a key is not allowed (future token, padding)
    weights = softmax(masked) row by row             each row sums to 1
    output  = weights V                  (T_q, d_v)  a weighted average of value rows

Multi-head attention projects the input X (T, d) to Q, K and V of width d, cuts
each into h slices of width d/h (one per head), runs the steps above in every
head separately, and glues the head outputs back together before a last
projection W_O.

Every public function returns each intermediate matrix as nested lists, so a
widget can draw any step. Internally everything is float64 NumPy.
"""

import math
import numbers
import zlib
from collections.abc import Sequence

import numpy as np

from demos._checks import as_int as _as_int

MAX_TOKENS = 12  # words in an explorer sentence: the grid must fit on a page
MAX_PADDING = 8
MAX_D_MODEL = 64
PAD = "[PAD]"

# A worked example in the shape of the lecture's one-head example: the query sits
# at position 3 of a causal sequence, so it may look at keys 1, 2 and 3. The third
# key has the highest score, yet its value is 0: scores choose weights, values
# supply content.
WORKED_SCALED_SCORES = (1.0, 2.0, 3.0)
WORKED_VALUES = (4.0, 2.0, 0.0)


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_array(name, value, ndims, what):
    """Check `value` is a non-empty array of finite numbers with one of `ndims` dimensions."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}.")
    try:
        a = np.array(value, dtype=object)  # object dtype: ragged rows stay visible as lists
    except ValueError:
        raise ValueError(f"{name} must be {what}, with rows of equal length.") from None
    if a.ndim < max(ndims) and any(isinstance(x, (list, tuple, np.ndarray)) for x in a.flat):
        raise ValueError(f"{name} must be {what}; its rows have different lengths.")
    if a.ndim not in ndims or a.size == 0:
        raise ValueError(f"{name} must be {what}; got shape {a.shape}.")
    for x in a.flat:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
            raise ValueError(f"{name} must be {what}; {x!r} is not a number.")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or an infinite value; every entry must be a finite number.")
    return a


def _as_matrix(name, value):
    """A non-empty (rows, cols) float64 matrix."""
    return _as_array(name, value, (2,), "a matrix (a list of equally long rows of numbers)")


def _as_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be true or false, got {value!r}.")
    return bool(value)


def _as_bool_array(name, value, shape):
    """An optional boolean vector or matrix of the given shape (None stays None)."""
    if value is None:
        return None
    try:
        a = np.array(value, dtype=object)
    except ValueError:
        raise ValueError(f"{name} must be a list of true/false values of shape {shape}.") from None
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}.")
    if not all(isinstance(x, (bool, np.bool_)) for x in a.flat):
        raise ValueError(f"{name} must contain only true/false values.")
    return a.astype(bool)


def _check_heads(width, n_heads):
    n = _as_int("n_heads", n_heads, 1, max(1, width))
    if width % n:
        raise ValueError(f"{n} heads do not divide the width {width}: every head needs an equal slice, so the number of heads must be a divisor of {width}.")
    return n


# ----------------------------------------------------------------------------
# the math, on float64 arrays


def _allowed(t_q, t_k, causal, key_padding_mask=None, attn_mask=None):
    """Boolean (T_q, T_k): True where query i may attend to key j."""
    allowed = np.ones((t_q, t_k), dtype=bool)
    if causal:
        allowed &= np.tri(t_q, t_k, dtype=bool)  # key j <= query i (top-left aligned, like PyTorch)
    if key_padding_mask is not None:
        allowed &= ~key_padding_mask[None, :]  # a padding key is never attended to
    if attn_mask is not None:
        allowed &= attn_mask
    empty = np.flatnonzero(~allowed.any(axis=1))
    if empty.size:
        raise ValueError(f"query {int(empty[0])} may attend to no key at all: the masks hide every key from it, so its softmax would divide 0 by 0.")
    return allowed


def _masked_softmax(scaled, allowed):
    """Row-wise softmax of (..., T_q, T_k) scores over the allowed keys only."""
    masked = np.where(allowed, scaled, -np.inf)  # exp(-inf) = 0: masked keys get weight exactly 0
    shifted = masked - masked.max(axis=-1, keepdims=True)  # largest allowed entry becomes 0: no overflow
    e = np.exp(shifted)
    return masked, e / e.sum(axis=-1, keepdims=True)


def _attend(q, k, v, allowed, scale):
    """One head (or a stack of heads on the leading axis): every intermediate array."""
    scores = q @ np.swapaxes(k, -1, -2)  # (..., T_q, T_k)
    scaled = scores * scale
    masked, weights = _masked_softmax(scaled, allowed)
    return scores, scaled, masked, weights, weights @ v  # output (..., T_q, d_v)


def _split(x, n_heads):
    """(T, d) -> (h, T, d/h): head i gets columns [i*d/h, (i+1)*d/h)."""
    t, d = x.shape
    return x.reshape(t, n_heads, d // n_heads).transpose(1, 0, 2)


def _merge(heads):
    """(h, T, d_h) -> (T, h*d_h): the head outputs side by side."""
    h, t, d_h = heads.shape
    return heads.transpose(1, 0, 2).reshape(t, h * d_h)


def _multi_head(x, w_q, w_k, w_v, w_o, n_heads, allowed):
    q, k, v = (_split(x @ w, n_heads) for w in (w_q, w_k, w_v))  # each (h, T, d_h)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores, scaled, masked, weights, heads_out = _attend(q, k, v, allowed, scale)
    concat = _merge(heads_out)  # (T, d)
    return {"q": q, "k": k, "v": v, "scaled": scaled, "masked": masked, "weights": weights, "head_outputs": heads_out, "concat": concat, "output": concat @ w_o}


def _sinusoid(n, d):
    """The (n, d) sine/cosine position table of the original Transformer (d even)."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    omega = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    table = np.empty((n, d))
    table[:, 0::2] = np.sin(pos * omega)
    table[:, 1::2] = np.cos(pos * omega)
    return table


def _toy_embedding(token, d):
    """A fixed pseudo-random vector for a word, the same in every browser and Python."""
    seed = zlib.crc32(token.lower().encode("utf-8"))  # "The" and "the" share a vector
    return np.random.default_rng(seed).uniform(-1.0, 1.0, d)


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def scaled_dot_product_attention(
    q: Sequence[Sequence[float]],
    k: Sequence[Sequence[float]],
    v: Sequence[Sequence[float]],
    causal: bool = False,
    key_padding_mask: Sequence[bool] | None = None,
    attn_mask: Sequence[Sequence[bool]] | None = None,
    scale: float | None = None,
) -> dict:
    """One attention head, returning every intermediate matrix.

    Computes `softmax(Q K^T / sqrt(d_k) + M) V`, where the mask M is 0 for an
    allowed (query, key) pair and -inf otherwise. Three masks can be combined:

    - `causal`: query i sees keys 0..i only (for T_q != T_k the top-left corner
      is kept, as in `torch.nn.functional.scaled_dot_product_attention`);
    - `key_padding_mask`: True marks a padding key that nobody may attend to
      (the convention of `torch.nn.MultiheadAttention`);
    - `attn_mask`: True marks an allowed pair (the boolean convention of
      `scaled_dot_product_attention`).

    The returned dict has these keys:

    - `scores` (T_q, T_k): raw dot products Q K^T;
    - `scale` (float): the factor applied, 1/sqrt(d_k) unless given;
    - `scaled_scores` (T_q, T_k): scores times scale;
    - `allowed` (T_q, T_k): True where the query may attend to the key;
    - `masked_scores` (T_q, T_k): scaled scores with -inf at masked pairs;
    - `weights` (T_q, T_k): softmax of each row; masked pairs get exactly 0;
    - `output` (T_q, d_v): weights times V.

    Args:
        q: Queries, one row per query position, shape (T_q, d_k).
        k: Keys, shape (T_k, d_k).
        v: Values, shape (T_k, d_v).
        causal: Hide future keys (key j > query i).
        key_padding_mask: Optional list of T_k booleans; True = padding.
        attn_mask: Optional (T_q, T_k) booleans; True = allowed.
        scale: Optional factor for the scores; default 1/sqrt(d_k).

    Returns:
        The dict described above.

    Raises:
        ValueError: On shapes that do not fit together, non-finite numbers, or
            masks that leave some query with no key at all.

    Examples:
        >>> out = scaled_dot_product_attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [3.0]])
        >>> [round(w, 4) for w in out["weights"][0]]
        [0.6698, 0.3302]
    """
    q, k, v = _as_matrix("q", q), _as_matrix("k", k), _as_matrix("v", v)
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"queries and keys must have the same width d_k to be compared; q is {q.shape[1]} wide, k is {k.shape[1]} wide.")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"there must be one value row per key; k has {k.shape[0]} rows, v has {v.shape[0]}.")
    t_q, t_k = q.shape[0], k.shape[0]
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[1])
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number, got {scale!r}.")
    allowed = _allowed(
        t_q, t_k, _as_bool("causal", causal), _as_bool_array("key_padding_mask", key_padding_mask, (t_k,)), _as_bool_array("attn_mask", attn_mask, (t_q, t_k))
    )
    scores, scaled, masked, weights, output = _attend(q, k, v, allowed, float(scale))
    return {
        "scores": scores.tolist(),
        "scale": float(scale),
        "scaled_scores": scaled.tolist(),
        "allowed": allowed.tolist(),
        "masked_scores": masked.tolist(),
        "weights": weights.tolist(),
        "output": output.tolist(),
    }


def split_heads(x: Sequence[Sequence[float]], n_heads: int) -> list:
    """Cut a (T, d) matrix into `n_heads` slices of shape (T, d / n_heads).

    Head i receives columns `i*d/h` up to `(i+1)*d/h`, the layout used by
    `torch.nn.MultiheadAttention` and GPT-2.

    Args:
        x: A matrix of shape (T, d), e.g. the queries of all positions.
        n_heads: Number of heads h; it must divide d.

    Returns:
        A nested list of shape (h, T, d/h).

    Raises:
        ValueError: If h does not divide d or x is not a matrix.

    Examples:
        >>> split_heads([[1.0, 2.0, 3.0, 4.0]], 2)
        [[[1.0, 2.0]], [[3.0, 4.0]]]
    """
    x = _as_matrix("x", x)
    return _split(x, _check_heads(x.shape[1], n_heads)).tolist()


def merge_heads(heads: Sequence[Sequence[Sequence[float]]]) -> list[list[float]]:
    """Undo `split_heads`: concatenate h matrices (T, d_h) into one (T, h*d_h).

    Args:
        heads: Nested list of shape (h, T, d_h).

    Returns:
        The (T, h*d_h) matrix whose row t is head 0's row t, then head 1's, ...

    Raises:
        ValueError: If the heads are not equally shaped matrices.

    Examples:
        >>> merge_heads([[[1.0, 2.0]], [[3.0, 4.0]]])
        [[1.0, 2.0, 3.0, 4.0]]
    """
    a = _as_array("heads", heads, (3,), "a list of equally shaped (T, d_h) matrices")
    return _merge(a).tolist()


def multi_head_attention(
    x: Sequence[Sequence[float]],
    w_q: Sequence[Sequence[float]],
    w_k: Sequence[Sequence[float]],
    w_v: Sequence[Sequence[float]],
    w_o: Sequence[Sequence[float]],
    n_heads: int,
    causal: bool = False,
    key_padding_mask: Sequence[bool] | None = None,
) -> dict:
    """Multi-head self-attention of a sequence X, without biases.

    Q = X W_Q, K = X W_K, V = X W_V (each (T, d)) are split into h heads of width
    d/h; every head attends with its own (T, T) weights; the head outputs are
    concatenated and multiplied by W_O. This equals
    `torch.nn.MultiheadAttention(d, h, bias=False)` with
    `in_proj_weight = [W_Q^T; W_K^T; W_V^T]` and `out_proj.weight = W_O^T`.

    The returned dict has `q`, `k`, `v` (h, T, d/h), `scaled_scores`,
    `masked_scores` and `weights` (h, T, T), `allowed` (T, T), `head_outputs`
    (h, T, d/h), `concat` (T, d) and `output` (T, d).

    Args:
        x: Input rows, shape (T, d).
        w_q: Query projection, shape (d, d), used as X @ W_Q.
        w_k: Key projection, shape (d, d).
        w_v: Value projection, shape (d, d).
        w_o: Output projection, shape (d, d).
        n_heads: Number of heads; must divide d.
        causal: Hide future positions from every head.
        key_padding_mask: Optional T booleans, True = padding position.

    Returns:
        The dict described above.

    Raises:
        ValueError: On mismatched shapes or a head count that does not divide d.
    """
    x = _as_matrix("x", x)
    t, d = x.shape
    weights = {}
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        weights[name] = _as_matrix(name, w)
        if weights[name].shape != (d, d):
            raise ValueError(f"{name} must have shape ({d}, {d}) for an input {d} wide, got {weights[name].shape}.")
    h = _check_heads(d, n_heads)
    allowed = _allowed(t, t, _as_bool("causal", causal), _as_bool_array("key_padding_mask", key_padding_mask, (t,)))
    r = _multi_head(x, weights["w_q"], weights["w_k"], weights["w_v"], weights["w_o"], h, allowed)
    out = {name: r[name].tolist() for name in ("q", "k", "v", "weights", "head_outputs", "concat", "output")}
    out["scaled_scores"] = r["scaled"].tolist()
    out["masked_scores"] = r["masked"].tolist()
    out["allowed"] = allowed.tolist()
    return out


def worked_example(
    scaled_scores: Sequence[float] = WORKED_SCALED_SCORES,
    values: Sequence[float] | Sequence[Sequence[float]] = WORKED_VALUES,
) -> dict:
    """One query of a causal head, worked by hand: exponentiate, normalise, weigh, sum.

    The default numbers follow the shape of the lecture's example: the query is
    at position 3, so its legal keys are positions 1, 2 and 3; the third key has
    the highest scaled score but the value 0. The output is therefore built from
    the first two values only, although the third key gets most of the weight.

    The returned dict has these keys:

    - `query_position` (int) and `key_positions` (list[int]), counted from 1;
    - `scaled_scores`: the scores after division by sqrt(d_k);
    - `exp_scores`: e to the power of each scaled score;
    - `exp_sum`: their sum, the softmax denominator;
    - `weights`: exp_scores / exp_sum (sum 1);
    - `weighted_values`: weight times value, key by key;
    - `output`: the attention output (a number, or a list for vector values);
    - `top_key`: position of the largest weight.

    Args:
        scaled_scores: The query's scaled score for each legal key.
        values: One value per legal key: numbers, or equally long vectors (then
            the same arithmetic runs coordinate by coordinate).

    Returns:
        The dict described above.

    Raises:
        ValueError: If the lengths differ or an entry is not a finite number.

    Examples:
        >>> ex = worked_example([0.0, 0.0], [1.0, 3.0])
        >>> ex["weights"], ex["output"]
        ([0.5, 0.5], 2.0)
    """
    s = _as_array("scaled_scores", scaled_scores, (1,), "a list of numbers")  # (n,)
    v = _as_array("values", values, (1, 2), "a list of numbers or of equally long vectors")
    vector = v.ndim == 2
    if not vector:
        v = v[:, None]  # scalars as vectors of width 1: one code path
    if v.shape[0] != s.size:
        raise ValueError(f"give one value per legal key: {s.size} scores but {v.shape[0]} values.")
    if s.max() > 700:
        raise ValueError("a scaled score is too large to exponentiate by hand (e^s overflows); keep them below 700.")
    e = np.exp(s)  # (n,) the numbers a reader would compute by hand
    weights = e / e.sum()
    weighted = weights[:, None] * v  # (n, d_v)
    output = weighted.sum(axis=0)  # (d_v,)
    n = s.size
    return {
        "query_position": n,
        "key_positions": list(range(1, n + 1)),
        "scaled_scores": s.tolist(),
        "exp_scores": e.tolist(),
        "exp_sum": float(e.sum()),
        "weights": weights.tolist(),
        "weighted_values": weighted.tolist() if vector else weighted[:, 0].tolist(),
        "output": output.tolist() if vector else float(output[0]),
        "top_key": int(np.argmax(weights)) + 1,
    }


def explore(
    sentence: str,
    heads: int = 2,
    causal: bool = True,
    padding: int = 0,
    d_model: int = 24,
    seed: int = 0,
) -> dict:
    """Per-head attention weights for a short sentence, with toy but fixed weights.

    This is the attention-matrix explorer. The sentence is split at whitespace;
    `padding` copies of the token `[PAD]` are appended, as when a short sentence
    shares a batch with longer ones. Each token gets a fixed pseudo-random
    embedding (derived from the lower-cased word, so it is the same on every
    machine) plus the sinusoidal position vector of its position. The projection
    matrices W_Q, W_K, W_V are drawn from `numpy.random.default_rng(seed)`. The
    weights are illustrative, not learned: what the explorer shows is the
    mechanics (the masks, row sums, how the heads differ), not linguistics.

    Padding keys are always masked; `causal` also masks future keys. The rows of
    padding positions are still computed (a real model computes and then ignores
    them).

    The returned dict has these keys:

    - `tokens` (list[str]): the words, then the `[PAD]` tokens;
    - `is_pad` (list[bool]): True for a padding position;
    - `n_heads`, `d_model`, `d_head` (int): the shapes used;
    - `causal` (bool);
    - `allowed` (T, T): True where query row i may attend to key column j;
    - `heads` (list of h dicts): per head, `weights` (T, T, rows sum to 1,
      masked cells exactly 0) and `scaled_scores` (T, T, before masking).

    Args:
        sentence: 1 to 12 words separated by spaces.
        heads: Number of heads h; must divide `d_model`.
        causal: Apply the causal (no peeking at later words) mask.
        padding: Number of `[PAD]` tokens to append, 0 to 8.
        d_model: Width of the toy embeddings, an even number from 2 to 64.
        seed: Seed of the projection weights (non-negative).

    Returns:
        The dict described above.

    Raises:
        ValueError: On an empty or too long sentence, or settings out of range.
    """
    if not isinstance(sentence, str):
        raise ValueError(f"sentence must be text, got {type(sentence).__name__}.")
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is empty: type at least one word.")
    if len(words) > MAX_TOKENS:
        raise ValueError(f"the sentence has {len(words)} words; the explorer takes at most {MAX_TOKENS}.")
    d = _as_int("d_model", d_model, 2, MAX_D_MODEL)
    if d % 2:
        raise ValueError(f"d_model must be even (sine and cosine come in pairs), got {d}.")
    h = _check_heads(d, heads)
    pad = _as_int("padding", padding, 0, MAX_PADDING)
    seed = _as_int("seed", seed, 0, 2**32 - 1)
    tokens = words + [PAD] * pad
    is_pad = np.array([False] * len(words) + [True] * pad)
    t = len(tokens)

    x = np.stack([_toy_embedding(w, d) for w in tokens]) + _sinusoid(t, d)  # (T, d)
    rng = np.random.default_rng(seed)
    gain = 1.5 * math.sqrt(3.0 / d)  # uniform(-gain, gain): scores spread enough to show structure
    w_q, w_k, w_v = (rng.uniform(-gain, gain, (d, d)) for _ in range(3))
    allowed = _allowed(t, t, _as_bool("causal", causal), is_pad)
    r = _multi_head(x, w_q, w_k, w_v, np.eye(d), h, allowed)
    return {
        "tokens": tokens,
        "is_pad": is_pad.tolist(),
        "n_heads": h,
        "d_model": d,
        "d_head": d // h,
        "causal": bool(causal),
        "allowed": allowed.tolist(),
        "heads": [{"weights": r["weights"][i].tolist(), "scaled_scores": r["scaled"][i].tolist()} for i in range(h)],
    }
