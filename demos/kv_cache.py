"""The key-value cache: what it stores, what it saves, and why it gives the same answer.

A decoder generates one token at a time, and each new token's query attends to
the keys and values of every earlier token. Those keys and values never change
once computed (causal attention: earlier positions cannot see later ones), so a
generator keeps them in a *KV cache* and computes only the new token's row at
each step. Its size, per token:

    bytes per token = 2 (K and V) * n_layer * n_kv_head * d_head * bytes_per_value

Multi-head attention (MHA) has one key/value head per query head. Grouped-query
attention (GQA) lets groups of query heads share one key/value head; multi-query
attention (MQA) shares a single one among all heads. The queries are not cached:
each is used once, at its own step.

`generation_flops` counts the arithmetic with and without the cache, and
`cached_attention` computes attention incrementally from a growing cache, which
equals full causal attention recomputed from scratch (`causal_attention`).

Every public function takes and returns plain Python data; inside, float64 NumPy.
"""

import math
from collections.abc import Sequence

import numpy as np

from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int

BYTES_PER_VALUE = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}

# Model shapes for the widget. GPT-2 small is MHA; the GQA variant of the
# LLaMA-7B shape (8 key/value heads) is a what-if for comparison.
PRESETS = {
    "gpt2-small": {"label": "GPT-2 small", "n_layer": 12, "n_head": 12, "d_head": 64, "gqa_kv_heads": 4},
    "llama-7b-gqa": {"label": "LLaMA-7B shape, GQA with 8 KV heads", "n_layer": 32, "n_head": 32, "d_head": 128, "gqa_kv_heads": 8},
}
MAX_TOKENS = 10_000_000


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_dtype(dtype):
    if dtype not in BYTES_PER_VALUE:
        raise ValueError(f"dtype must be one of {', '.join(BYTES_PER_VALUE)}, got {dtype!r}.")
    return BYTES_PER_VALUE[dtype]


def _as_heads(q, k, v):
    """q (H, T, d), k and v (H_kv, T, d) from (T, d) or (heads, T, d) nested lists."""
    arrays = []
    for name, x in (("q", q), ("k", k), ("v", v)):
        a = _as_float_array(name, x, what="vectors")
        if a.ndim == 2:
            a = a[None]  # one head
        if a.ndim != 3 or a.size == 0:
            raise ValueError(f"{name} must have shape (T, d) or (heads, T, d), got {a.shape}.")
        arrays.append(_as_finite(name, a))
    q, k, v = arrays
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got {k.shape} and {v.shape}.")
    if q.shape[1:] != k.shape[1:]:
        raise ValueError(f"q, k and v need the same number of tokens and head width, got {q.shape} and {k.shape}.")
    if q.shape[0] % k.shape[0]:
        raise ValueError(f"the {q.shape[0]} query heads must split evenly into {k.shape[0]} key/value groups.")
    return q, k, v


# ----------------------------------------------------------------------------
# the math


def _kv_bytes_per_token(n_layer, n_kv_head, d_head, nbytes):
    return 2 * n_layer * n_kv_head * d_head * nbytes


def _full_forward_flops(t, n_layer, d):
    """FLOPs of one causal forward pass over t tokens (see generation_flops)."""
    return n_layer * (24 * d * d * t + 2 * d * t * (t + 1))


def _one_token_flops(t, n_layer, d):
    """FLOPs of processing one new token at position t (1-based) against a cache."""
    return n_layer * (24 * d * d + 4 * d * t)


def _attend(q_row, K, V):
    """One query (d,) against keys and values (n, d): softmax(q K^T / sqrt(d)) V."""
    s = K @ q_row / math.sqrt(q_row.size)  # (n,)
    w = np.exp(s - s.max())
    return (w / w.sum()) @ V  # (d,)


def _group(h, n_head, n_kv):
    return h // (n_head // n_kv)  # query head h reads key/value head h // group_size


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def presets() -> dict:
    """The model shapes offered by the widget: name -> layers, heads, head width, GQA heads."""
    return {name: dict(p) for name, p in PRESETS.items()}


def kv_cache_bytes(n_layer: int, n_kv_head: int, d_head: int, context_length: int = 1, dtype: str = "float16", batch_size: int = 1) -> dict:
    """Size of the KV cache: `2 * n_layer * n_kv_head * d_head * bytes` per token.

    Args:
        n_layer: Transformer blocks (each caches its own keys and values).
        n_kv_head: Key/value heads per block (= query heads for MHA, 1 for MQA).
        d_head: Width of one head.
        context_length: Tokens held in the cache.
        dtype: "float32", "float16", "bfloat16" or "int8".
        batch_size: Sequences generated at once, each with its own cache.

    Returns:
        `bytes_per_value`, `bytes_per_token` and `total_bytes`
            (bytes_per_token × context_length × batch_size).

    Raises:
        ValueError: On sizes that are not positive whole numbers, or an unknown dtype.

    Examples:
        >>> kv_cache_bytes(12, 12, 64, 1024, "float32")["total_bytes"]
        75497472
    """
    L = _as_int("n_layer", n_layer, 1, 1000)
    H = _as_int("n_kv_head", n_kv_head, 1, 1000)
    d = _as_int("d_head", d_head, 1, 100_000)
    T = _as_int("context_length", context_length, 1, MAX_TOKENS)
    B = _as_int("batch_size", batch_size, 1, 100_000)
    nbytes = _as_dtype(dtype)
    per_token = _kv_bytes_per_token(L, H, d, nbytes)
    if per_token * T * B > 2**53:
        raise ValueError("that cache would exceed 9 petabytes; choose smaller sizes.")
    return {"bytes_per_value": nbytes, "bytes_per_token": per_token, "total_bytes": per_token * T * B}


def latent_cache_bytes(
    n_layer: int = 61, d_latent: int = 512, d_rope: int = 64, n_head: int = 128, d_head: int = 128, context_length: int = 1, dtype: str = "bfloat16"
) -> dict:
    """The cache of multi-head latent attention (MLA), against multi-head attention of the same heads.

    MLA caches, per token and layer, one compressed vector c of width `d_latent` from which every
    head's keys and values are re-projected, plus one small key of width `d_rope` that carries the
    rotary positions (shared by all heads); MHA caches a key and a value per head.

    Args:
        n_layer: Transformer blocks (DeepSeek-V3: 61).
        d_latent: Width of the cached latent vector (DeepSeek-V3: 512).
        d_rope: Width of the cached rotary key (DeepSeek-V3: 64).
        n_head: Attention heads (DeepSeek-V3: 128).
        d_head: Width of one head's keys and values (DeepSeek-V3: 128).
        context_length: Tokens in the cache.
        dtype: "float32", "float16", "bfloat16" or "int8".

    Returns:
        `values_per_token_layer` (d_latent + d_rope), `bytes_per_token`, `total_bytes`,
        `mha_bytes_per_token` (2 n_head d_head per layer), `ratio` (MHA over MLA) and
        `equivalent_gqa_groups`: how many key/value heads a GQA cache of the same size would hold.

    Examples:
        >>> r = latent_cache_bytes()
        >>> r["values_per_token_layer"], r["equivalent_gqa_groups"]
        (576, 2.25)
    """
    L = _as_int("n_layer", n_layer, 1, 1000)
    c = _as_int("d_latent", d_latent, 1, 100_000)
    r = _as_int("d_rope", d_rope, 0, 100_000)
    H = _as_int("n_head", n_head, 1, 1000)
    d = _as_int("d_head", d_head, 1, 100_000)
    T = _as_int("context_length", context_length, 1, MAX_TOKENS)
    nbytes = _as_dtype(dtype)
    per_token = L * (c + r) * nbytes
    mha = _kv_bytes_per_token(L, H, d, nbytes)
    return {
        "values_per_token_layer": c + r,
        "bytes_per_token": per_token,
        "total_bytes": per_token * T,
        "mha_bytes_per_token": mha,
        "ratio": mha / per_token,
        "equivalent_gqa_groups": (c + r) / (2 * d),
    }


def compare_attention_variants(
    n_layer: int = 12, n_head: int = 12, d_head: int = 64, gqa_kv_heads: int = 4, context_length: int = 1024, dtype: str = "float32", batch_size: int = 1
) -> dict:
    """KV-cache memory for MHA, GQA and MQA versions of the same model shape.

    Args:
        n_layer: Transformer blocks.
        n_head: Query heads per block (MHA also has this many key/value heads).
        d_head: Width of one head.
        gqa_kv_heads: Key/value heads for the GQA variant; must divide n_head.
        context_length: Tokens in the cache.
        dtype: "float32", "float16", "bfloat16" or "int8".
        batch_size: Sequences at once.

    Returns:
        `variants`: for "MHA", "GQA" and "MQA" a dict with `name`, `n_kv_head`,
            `group_size` (query heads per key/value head), `bytes_per_token`,
            `total_bytes` and `fraction_of_mha`.

    Raises:
        ValueError: On invalid sizes or a GQA head count that does not divide n_head.
    """
    H = _as_int("n_head", n_head, 1, 1000)
    g = _as_int("gqa_kv_heads", gqa_kv_heads, 1, H)
    if H % g:
        raise ValueError(f"gqa_kv_heads ({g}) must divide n_head ({H}) so every group has the same size.")
    variants = []
    for name, kv in (("MHA", H), ("GQA", g), ("MQA", 1)):
        size = kv_cache_bytes(n_layer, kv, d_head, context_length, dtype, batch_size)
        variants.append(
            {
                "name": name,
                "n_kv_head": kv,
                "group_size": H // kv,
                "bytes_per_token": size["bytes_per_token"],
                "total_bytes": size["total_bytes"],
                "fraction_of_mha": kv / H,
            }
        )
    return {"variants": variants}


def generation_flops(n_layer: int = 12, d_model: int = 768, prompt_length: int = 16, new_tokens: int = 64) -> dict:
    """Arithmetic to generate `new_tokens` tokens, recomputing everything versus using a KV cache.

    Counted per block, with a multiply-add as 2 FLOPs: the weight matrices cost
    `24 d^2` per token (Q, K, V: 6 d^2; output projection: 2 d^2; a 4x MLP: 16 d^2),
    and attention for a token at position i costs `4 d i` (scores q·k and the
    weighted sum of values over i positions). Embeddings, norms, softmax and the
    LM head are left out; they cost the same either way.

    Step j (0-based) sees a context of t = prompt_length + j tokens and produces
    the next one.

    - Without a cache every step runs the full causal pass over t tokens:
      `n_layer * (24 d^2 t + 2 d t (t + 1))`.
    - With a cache step 0 is that same pass over the prompt (the *prefill*), and
      every later step only processes the newest token: `n_layer * (24 d^2 + 4 d t)`.

    Args:
        n_layer: Blocks, 1 to 1000.
        d_model: Width d, 1 to 100,000.
        prompt_length: Tokens in the prompt, 1 to 100,000.
        new_tokens: Tokens to generate, 1 to 100,000.

    Returns:
        `without_cache` and `with_cache` (total FLOPs), `ratio` (without / with),
            `saved_fraction` (1 - with / without), and per step `steps`
            (context length t), `per_step_without`, `per_step_with`.

    Raises:
        ValueError: On sizes out of range.
    """
    L = _as_int("n_layer", n_layer, 1, 1000)
    d = _as_int("d_model", d_model, 1, 100_000)
    P = _as_int("prompt_length", prompt_length, 1, 100_000)
    N = _as_int("new_tokens", new_tokens, 1, 100_000)
    t = np.arange(P, P + N, dtype=np.float64)  # (N,) context length at each step
    without = L * (24.0 * d * d * t + 2.0 * d * t * (t + 1))  # (N,)
    with_cache = L * (24.0 * d * d + 4.0 * d * t)  # (N,)
    with_cache[0] = without[0]  # the prefill is a full pass either way
    total_without, total_with = float(without.sum()), float(with_cache.sum())
    return {
        "without_cache": total_without,
        "with_cache": total_with,
        "ratio": total_without / total_with,
        "saved_fraction": 1.0 - total_with / total_without,
        "steps": t.astype(int).tolist(),
        "per_step_without": without.tolist(),
        "per_step_with": with_cache.tolist(),
    }


def causal_attention(q: Sequence, k: Sequence, v: Sequence) -> list:
    """Causal scaled dot-product attention, recomputed from scratch for all T tokens.

    `softmax(q k^T / sqrt(d) + mask) v` with the mask hiding later positions.
    With several heads, query head h uses key/value head `h // (H / H_kv)`
    (grouped-query attention when H_kv < H).

    Args:
        q: Queries (T, d), or (H, T, d) for H heads.
        k: Keys (T, d), or (H_kv, T, d); H_kv must divide H.
        v: Values, same shape as k.

    Returns:
        The outputs, shaped like q.

    Raises:
        ValueError: On mismatched shapes.
    """
    single = np.ndim(q) == 2
    q, k, v = _as_heads(q, k, v)
    H, T, d = q.shape
    out = np.empty_like(q)
    for h in range(H):
        g = _group(h, H, k.shape[0])
        scores = q[h] @ k[g].T / math.sqrt(d)  # (T, T)
        scores[np.triu_indices(T, 1)] = -np.inf  # position i sees keys 0..i
        w = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[h] = (w / w.sum(axis=1, keepdims=True)) @ v[g]  # (T, d)
    return (out[0] if single else out).tolist()


def cached_attention(q: Sequence, k: Sequence, v: Sequence) -> dict:
    """The same attention computed the way a generator does: one token at a time.

    At step t the new token's key and value are appended to the cache, and its
    query attends to the t + 1 cached entries. No earlier key or value is
    recomputed, and no query is stored.

    Args:
        q: Queries (T, d) or (H, T, d).
        k: Keys (T, d) or (H_kv, T, d).
        v: Values, same shape as k.

    Returns:
        `output` (shaped like q; equal to `causal_attention`) and `cache_length`
            (entries in the cache after each step: 1, 2, ..., T).

    Raises:
        ValueError: On mismatched shapes.
    """
    single = np.ndim(q) == 2
    q, k, v = _as_heads(q, k, v)
    H, T, d = q.shape
    H_kv = k.shape[0]
    k_cache, v_cache = np.empty((H_kv, 0, d)), np.empty((H_kv, 0, d))
    out = np.empty_like(q)
    lengths = []
    for t in range(T):
        k_cache = np.concatenate([k_cache, k[:, t : t + 1]], axis=1)  # (H_kv, t+1, d)
        v_cache = np.concatenate([v_cache, v[:, t : t + 1]], axis=1)
        for h in range(H):
            g = _group(h, H, H_kv)
            out[h, t] = _attend(q[h, t], k_cache[g], v_cache[g])
        lengths.append(k_cache.shape[1])
    return {"output": (out[0] if single else out).tolist(), "cache_length": lengths}
