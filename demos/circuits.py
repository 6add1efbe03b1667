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

`trained_circuits` reads the circuits of a model that has learned something: the two-layer,
attention-only model of `demos.training`'s induction task, trained by the project in PyTorch
(`bench/induction_phase.py --save`: batch 128, learning rate 0.01, 8,000 steps, seed 0; the
weights are committed as ``demos/data/induction_model.npz`` with that record), or the same
model before training. Its vocabulary is 16 letters (and BOS), so a circuit over tokens is a
16 × 16 table one can read. Each circuit is a direct path. Elhage et al. (2021) leave
LayerNorm out of their circuits; here each LayerNorm is taken as linear: centred, times its
gain, divided by the mean scale of the stream it normalizes on the held-out sequences.
"""

import json
from pathlib import Path

import numpy as np

from demos import backprop, training
from demos._checks import as_int as _as_int

INDUCTION_MODEL = Path(__file__).with_name("data") / "induction_model.npz"
WEIGHTS = ("trained", "initial")  # the committed trained weights, or the same model at step 0


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


# ----- the circuits of a trained induction head -----

_MODELS: dict = {}


def induction_model(weights: str = "trained") -> tuple[dict, backprop.TinyConfig, dict]:
    """The induction task's model: its parameters, its size and how it was trained.

    Args:
        weights: "trained" (the committed weights) or "initial" (`backprop.init_params` with
            the training run's seed: where that run started).

    Returns:
        ``(params, cfg, recipe)``: float64 arrays named as `demos.backprop` names them, the
        model's size, and the training run's record (``seed``, ``batch``, ``lr``, ``steps``,
        its last evaluation as ``final``, …).
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}.")
    if not _MODELS:
        spec = training.DEFAULTS["induction"]
        with np.load(INDUCTION_MODEL) as stored:
            recipe = json.loads(str(stored["recipe"]))
            task = training.Task("induction", recipe["seed"])  # the run's held-out batch
            cfg = backprop.TinyConfig(len(task.vocab), task.block, spec["n_layer"], spec["n_head"], spec["n_embd"], False)
            _MODELS["trained"] = {name: stored[name].astype(np.float64) for name in backprop.param_shapes(cfg)}
        _MODELS["initial"] = backprop.init_params(cfg, recipe["seed"])
        _MODELS["run"] = (cfg, recipe, task)
    cfg, recipe, _ = _MODELS["run"]
    return _MODELS[weights], cfg, recipe


def _head_weights(params, layer, head, D):
    """Head `head`'s slices of layer `layer`: W_Q, W_K, W_V (C, D) and W_O (D, C)."""
    C = params["wte"].shape[1]
    w = params[f"h.{layer}.attn.c_attn.weight"]  # (C, 3C): W_Q | W_K | W_V
    w_q, w_k, w_v = (w[:, i * C + head * D : i * C + (head + 1) * D] for i in range(3))
    return w_q, w_k, w_v, params[f"h.{layer}.attn.c_proj.weight"][head * D : (head + 1) * D]


def _centred(x, gain, scale):
    """A LayerNorm taken as linear: centre, times the gain, over the stream's mean `scale`."""
    return (x - x.mean(-1, keepdims=True)) * gain / scale


def _diagonal_share(m):
    """The share of rows whose largest entry is on the diagonal."""
    return float(np.mean(m.argmax(axis=1) == np.arange(len(m))))


def trained_circuits(weights: str = "trained") -> dict:
    """Every head's QK and OV circuits in the induction task's model, and what it does on held-out data.

    Each circuit is the direct path of Elhage et al. (2021): a letter's embedding (or a
    position's) through the head's LayerNorm, taken as linear, and its weights:

    * **QK on letters** (16, 16): the score a query holding letter a (rows) gives a key holding
      letter b (columns), ``LN(e_a) W_Q (LN(e_b) W_K)ᵀ``; ``own_letter`` is the share of rows
      whose largest score is on the diagonal (the head looks for its own letter);
    * **QK on positions** (T, T): the attention of position i to position j that the positions'
      term of the score alone would give (the causal softmax of ``LN(p_i) W_Q (LN(p_j) W_K)ᵀ / √D``);
      ``previous`` is its mean weight on the previous position;
    * **OV** (16, 16): the logits the head's output raises (columns) when it attends to a
      position holding letter b (rows), ``LN_f(LN(e_b) W_V W_O) W_U``; ``copying`` is the share
      of rows whose largest logit is the attended letter, ``eigen_copying`` Σλ / Σ|λ| over its
      eigenvalues (1 for a head that copies, −1 for one that lowers what it attends to).

    And from the model's own forward pass on held-out sequences ``[BOS, 8 letters, the same 8]``:
    how much of each head's attention, from the second copy, goes to the earlier copy of the
    current letter (``earlier_copy``), to the letter after it (``after_copy``, the induction
    score) and to the previous position (``previous``); and the loss on each copy.

    Args:
        weights: "trained" or "initial" (see `induction_model`).

    Returns:
        ``weights``, ``recipe``, ``letters`` (16), ``positions`` (T), ``heads`` (one dict per
        head, layer by layer: ``layer``, ``head``, ``qk``, ``own_letter``, ``positional``,
        ``previous``, ``ov``, ``copying``, ``eigen_copying``, ``held_out`` {``earlier_copy``,
        ``after_copy``, ``previous``} and ``attention``, its attention on the first held-out
        sequence), ``example`` (that sequence's tokens) and ``loss`` {``first``, ``second``}
        (nats; a uniform guess among the 16 letters costs ln 16 ≈ 2.77).

    Examples:
        >>> r = trained_circuits("trained")
        >>> len(r["heads"]), len(r["heads"][0]["ov"]), len(r["heads"][0]["positional"])
        (4, 16, 24)
    """
    params, cfg, recipe = induction_model(weights)
    task = _MODELS["run"][2]
    C, H, T = cfg.n_embd, cfg.n_head, cfg.block_size
    D = C // H
    letters = params["wte"][1:]  # (16, C): the tokens after BOS

    idx, targets, copies = task.eval  # (B, 2n): [BOS, n letters, the same n] without the last
    _, _, cache = backprop.forward(params, cfg, idx, targets)
    first, second = (float(cache["losses"][mask].mean()) for mask in copies)
    scales = [float((1 / cache["blocks"][layer][0][1]).mean()) for layer in range(cfg.n_layer)]  # each block's stream
    final_scale = float((1 / cache["lnf"][1]).mean())
    n = (idx.shape[1]) // 2  # the repeated half
    queries = np.arange(n + 1, idx.shape[1])  # second-copy positions with an earlier copy in view
    induction = training.induction_scores(cache["probs"], n)  # per layer and head: attention to the letter after the earlier copy

    heads = []
    for layer in range(cfg.n_layer):
        gain = params[f"h.{layer}.ln_1.weight"]
        by_letter = _centred(letters, gain, scales[layer])  # (16, C)
        by_position = _centred(params["wpe"], gain, scales[layer])  # (T, C)
        for h in range(H):
            w_q, w_k, w_v, w_o = _head_weights(params, layer, h, D)
            qk = (by_letter @ w_q) @ (by_letter @ w_k).T / np.sqrt(D)  # (16, 16)
            scores = (by_position @ w_q) @ (by_position @ w_k).T / np.sqrt(D)  # (T, T)
            positional = _softmax(np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf))
            ov = _centred(by_letter @ w_v @ w_o, params["ln_f.weight"], final_scale) @ letters.T  # (16, 16)
            eig = np.linalg.eigvals(ov)
            attn = cache["probs"][layer][:, h]  # (B, 2n, 2n)
            heads.append(
                {
                    "layer": layer,
                    "head": h,
                    "qk": qk.tolist(),
                    "own_letter": _diagonal_share(qk),
                    "positional": positional.tolist(),
                    "previous": float(np.diagonal(positional, -1).mean()),
                    "ov": ov.tolist(),
                    "copying": _diagonal_share(ov),
                    "eigen_copying": float(eig.real.sum() / np.abs(eig).sum()),
                    "held_out": {
                        "earlier_copy": float(attn[:, queries, queries - n].mean()),
                        "after_copy": float(induction[layer][h]),
                        "previous": float(attn[:, queries, queries - 1].mean()),
                    },
                    "attention": attn[0].tolist(),
                }
            )
    return {
        "weights": weights,
        "recipe": recipe,
        "letters": task.vocab[1:],
        "positions": T,
        "heads": heads,
        "example": [task.vocab[i] for i in idx[0]],
        "loss": {"first": first, "second": second},
    }
