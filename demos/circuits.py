"""One attention head as two circuits: QK decides where to look, OV decides what to move.

Written out for one head h of width D over a residual stream X (T, C) (Elhage et al., 2021):

    scores  = (X W_Q^h)(X W_K^h)^T / sqrt(D) = X W_QK^h X^T / sqrt(D),   W_QK^h = W_Q^h (W_K^h)^T   (C, C)
    output  = softmax(scores) (X W_V^h) W_O^h = A^h X W_OV^h,            W_OV^h = W_V^h W_O^h       (C, C)

where W_O^h is the head's D rows of the output projection W_O (C, C). Both circuits are C × C
matrices of rank at most D: each head reads and writes a D-dimensional slice of the stream. And
the multi-head output ``[z^1 | … | z^H] W_O`` is the sum over heads of ``z^h W_O^h``: concatenating
then projecting is the same as every head writing its own update into the stream, which the
interpretability pages use when they credit one head with a share of the output.

`circuits` builds a random head (or takes given weights), computes the output both ways and
reports the circuits' ranks and how far the two ways differ.
"""

import numpy as np

from demos._checks import as_int as _as_int


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def split_output(z: np.ndarray, w_o: np.ndarray, n_head: int) -> np.ndarray:
    """Each head's share of the attention output: ``z^h W_O^h``, (H, T, C); they sum to ``z W_O``.

    Args:
        z: The concatenated head outputs (T, C), head h in columns h D … (h + 1) D - 1.
        w_o: The output projection (C, C).
        n_head: H.
    """
    T, C = z.shape
    D = C // n_head
    z_heads = z.reshape(T, n_head, D).transpose(1, 0, 2)  # (H, T, D)
    w_heads = w_o.reshape(n_head, D, C)  # (H, D, C): head h's rows of W_O
    return z_heads @ w_heads  # (H, T, C)


def circuits(d_model: int = 16, n_head: int = 4, tokens: int = 6, seed: int = 0, causal: bool = True) -> dict:
    """A random multi-head attention layer, computed per head through its QK and OV circuits.

    Args:
        d_model: C, the width of the stream (a multiple of n_head, 2 to 256).
        n_head: H, the number of heads.
        tokens: T.
        seed: Seed of the random stream and weights.
        causal: Mask future positions.

    Returns:
        ``d_head``, ``qk_rank`` and ``ov_rank`` (per head; at most d_head), ``qk_shape`` and
        ``ov_shape``, ``score_gap`` (largest |X W_QK X^T − (X W_Q)(X W_K)^T| over heads),
        ``output_gap`` (largest |Σ_h A^h X W_OV^h − [z^1 | … | z^H] W_O|) and ``head_norms``
        (each head's share of the output, Frobenius norm).

    Examples:
        >>> r = circuits(d_model=16, n_head=4)
        >>> r["qk_rank"], r["ov_rank"], r["score_gap"] < 1e-12, r["output_gap"] < 1e-12
        ([4, 4, 4, 4], [4, 4, 4, 4], True, True)
    """
    C = _as_int("d_model", d_model, 2, 256)
    H = _as_int("n_head", n_head, 1, C)
    if C % H:
        raise ValueError(f"d_model ({C}) must be a multiple of n_head ({H})")
    T = _as_int("tokens", tokens, 1, 256)
    seed = _as_int("seed", seed, 0, 2**31 - 1)
    D = C // H
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, C))  # (T, C)
    w_q, w_k, w_v, w_o = (rng.standard_normal((C, C)) / np.sqrt(C) for _ in range(4))
    mask = np.triu(np.ones((T, T), dtype=bool), 1) if causal else np.zeros((T, T), dtype=bool)

    # The usual way: project, split into heads, attend, concatenate, project.
    q, k, v = ((x @ w).reshape(T, H, D).transpose(1, 0, 2) for w in (w_q, w_k, w_v))  # (H, T, D)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(D)  # (H, T, T)
    attn = _softmax(np.where(mask, -np.inf, scores))  # (H, T, T)
    z = (attn @ v).transpose(1, 0, 2).reshape(T, C)  # (T, C)
    usual = z @ w_o  # (T, C)

    # The circuits' way: one C × C matrix for where to look, one for what to move, per head.
    qk_rank, ov_rank, score_gap, shares = [], [], 0.0, []
    for h in range(H):
        cols = slice(h * D, (h + 1) * D)
        w_qk = w_q[:, cols] @ w_k[:, cols].T  # (C, C)
        w_ov = w_v[:, cols] @ w_o[cols, :]  # (C, C)
        qk_rank.append(int(np.linalg.matrix_rank(w_qk)))
        ov_rank.append(int(np.linalg.matrix_rank(w_ov)))
        score_gap = max(score_gap, float(np.abs(x @ w_qk @ x.T / np.sqrt(D) - scores[h]).max()))
        shares.append(attn[h] @ x @ w_ov)  # (T, C)
    shares = np.stack(shares)  # (H, T, C)
    return {
        "d_head": D,
        "qk_rank": qk_rank,
        "ov_rank": ov_rank,
        "qk_shape": [C, C],
        "ov_shape": [C, C],
        "score_gap": score_gap,
        "output_gap": float(np.abs(shares.sum(axis=0) - usual).max()),
        "split_gap": float(np.abs(split_output(z, w_o, H) - shares).max()),
        "head_norms": [float(np.linalg.norm(s)) for s in shares],
    }
