"""Looking inside a Transformer: the arithmetic behind five interpretability tools.

The "Looking inside the model" pages run GPT-2 itself in the browser; this module holds the
small pieces of arithmetic those tools are made of, on numbers small enough to check by hand:

    logit_lens                 a residual stream read through the final LayerNorm and the unembedding
    kl_divergence              how far a distribution moved (head ablation's measure)
    ablate_heads               zero or mean ablation of heads' outputs
    logit_difference           how much a model prefers one token to another
    restored_fraction          how much of that preference a patch brings back
    repeated_sequence          a random token sequence written twice
    ideal_pattern              the attention of an idealised head (induction, previous token, ...)
    induction_score            each head's attention to "the token after the earlier copy"
    copy_losses                mean loss on the first and the second copy
    uniform_loss               the loss of a model that guesses evenly
    direct_logit_attribution   each component's share of one token's logit

`model_export/interpret.py` computes the same quantities on a whole GPT-2 with PyTorch hooks;
the tests check these functions against it and against PyTorch's own operations.

Plain data in, plain data out (lists, dicts, Python numbers); float64 inside. Shapes below use
`N` for rows (layers or components), `T` positions, `C` the residual width, `V` the vocabulary,
`nh` heads and `hd` the width of one head.
"""

import math

import numpy as np

from demos._checks import as_array, as_finite, as_int, as_number

MAX_VOCAB = 100_000  # repeated_sequence and uniform_loss: GPT-2's 50,257 fits with room to spare
KINDS = ("induction", "previous", "first", "self", "uniform")


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _array(name, x, ndim):
    """`x` as a finite float64 array with `ndim` dimensions (an int or a tuple of allowed ones)."""
    a = as_finite(name, as_array(name, x, "numbers" if ndim == 1 else "rows of numbers"))
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if a.ndim not in allowed:
        want = " or ".join(f"{n}-dimensional" for n in allowed)
        raise ValueError(f"{name} must be {want}, got shape {a.shape}.")
    if a.size == 0:
        raise ValueError(f"{name} is empty.")
    return a


def _width(name, a, width, what="the residual stream"):
    if a.shape[-1] != width:
        raise ValueError(f"{name} is {a.shape[-1]} wide, but {what} is {width} wide.")


def _distribution(name, x):
    p = _array(name, x, 1)
    if (p < 0).any():
        raise ValueError(f"{name} has a negative entry; probabilities are never negative.")
    if abs(p.sum() - 1.0) > 1e-6:
        raise ValueError(f"{name} sums to {p.sum():.6g}; a distribution must sum to 1.")
    return p


def _eps(eps):
    eps = as_number("eps", eps)
    if eps <= 0:
        raise ValueError(f"eps must be positive (GPT-2 uses 1e-5), got {eps}.")
    return eps


def _top(probs, k):
    """The `k` most probable tokens of each row, most probable first: ids (N, k) and probabilities."""
    order = np.argsort(-probs, axis=-1, kind="stable")[:, :k]  # (N, k)
    return order, np.take_along_axis(probs, order, axis=-1)


# ----------------------------------------------------------------------------
# the logit lens


def _layer_norm(x, weight, bias, eps):
    """LayerNorm over the last axis: (..., C) -> (..., C)."""
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # biased variance, as torch and GPT-2
    return (x - mu) / sigma * weight + bias


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logit_lens(resid, ln_weight, ln_bias, unembed, eps=1e-5, top_k=10):
    """Read residual streams as if each were the last one: final LayerNorm, then the unembedding.

    The model's own prediction is ``softmax(ln_f(x_L) @ W_U.T)`` of the last stream ``x_L``.
    The lens applies the same map to every earlier stream ``x_0 .. x_{L-1}``, so each layer
    gets a "prediction so far".

    Args:
        resid: (N, C) one position's residual stream at N depths, shallowest first: the
            embeddings, then the output of each block. The last row is the one the model
            itself reads.
        ln_weight: (C,) the final LayerNorm's gain g.
        ln_bias: (C,) its bias b.
        unembed: (V, C) the unembedding; GPT-2 ties it to the token embedding, one row per token.
        eps: LayerNorm's epsilon.
        top_k: How many of the most probable tokens to list per row (at most V are).

    Returns:
        dict with ``probs`` (N, V); ``top`` (N,) each row's most probable token and
        ``top_prob`` (N,) its probability; ``top_k_tokens`` and ``top_k_probs`` (N, k);
        ``final_token``, the last row's top token; ``final_rank`` (N,) its rank in each row
        (1 = top) and ``final_prob`` (N,) its probability there; ``settles_at``, the first row
        from which the final token is top in every later row.

    Raises:
        ValueError: If the shapes do not fit together or an entry is not a finite number.
    """
    x = _array("resid", resid, 2)  # (N, C)
    g, b = _array("ln_weight", ln_weight, 1), _array("ln_bias", ln_bias, 1)  # (C,)
    w_u = _array("unembed", unembed, 2)  # (V, C)
    C = x.shape[1]
    for name, a in (("ln_weight", g), ("ln_bias", b), ("unembed", w_u)):
        _width(name, a, C)
    k = min(as_int("top_k", top_k, 1, MAX_VOCAB, ","), w_u.shape[0])  # at most V tokens to list
    logits = _layer_norm(x, g, b, _eps(eps)) @ w_u.T  # (N, C) @ (C, V) -> (N, V)
    probs = _softmax(logits)  # (N, V)
    top = probs.argmax(axis=-1)  # (N,)
    final = int(top[-1])
    # rank 1 = most probable; a tie counts in the token's favour
    rank = 1 + (probs > probs[:, final : final + 1]).sum(axis=-1)  # (N,)
    is_top = top == final
    settles = len(is_top)
    while settles > 0 and is_top[settles - 1]:
        settles -= 1
    ids, p = _top(probs, k)
    return {
        "probs": probs.tolist(),
        "top": top.tolist(),
        "top_prob": probs.max(axis=-1).tolist(),
        "top_k_tokens": ids.tolist(),
        "top_k_probs": p.tolist(),
        "final_token": final,
        "final_rank": rank.tolist(),
        "final_prob": probs[:, final].tolist(),
        "settles_at": settles,
    }


# ----------------------------------------------------------------------------
# head ablation


def kl_divergence(p, q):
    """KL(p ‖ q) in nats: how much a distribution q, e.g. after an ablation, differs from p, before.

    ``KL(p ‖ q) = Σ_i p_i (log p_i − log q_i)``, summed over the tokens p gives mass. It is 0
    exactly when q = p and is not symmetric, so both directions are returned.

    Args:
        p: (V,) the reference distribution (the model as it is).
        q: (V,) the changed one.

    Returns:
        dict with ``kl``, KL(p ‖ q), and ``reverse``, KL(q ‖ p); either is ``inf`` where the
        second distribution gives 0 to a token the first does not.

    Raises:
        ValueError: If p or q is not a distribution (non-negative, summing to 1) or they differ in length.
    """
    p, q = _distribution("p", p), _distribution("q", q)  # (V,)
    if p.shape != q.shape:
        raise ValueError(f"p has {p.size} entries and q {q.size}; both must cover the same tokens.")

    def kl(a, b):
        mass = a > 0
        if (b[mass] == 0).any():
            return math.inf
        return float(np.sum(a[mass] * (np.log(a[mass]) - np.log(b[mass]))))

    return {"kl": kl(p, q), "reverse": kl(q, p)}


def ablate_heads(z, heads, mode="zero"):
    """Switch heads off: replace their outputs by zeros, or by their mean over the positions.

    A head's output z (its weighted sum of values, before the output projection c_proj) is
    what it adds to the layer. Zero ablation sets it to 0; mean ablation to its average over
    this prompt's positions, which keeps the head's constant part and removes only what
    depends on the position. (Studies often average over a whole dataset instead.)

    Args:
        z: (nh, T, hd) one layer's head outputs.
        heads: Indexes of the heads to switch off, e.g. ``[0, 3]``.
        mode: ``"zero"`` or ``"mean"``.

    Returns:
        dict with ``z`` (nh, T, hd) the edited outputs and ``change``, the largest absolute
        change of any entry.

    Raises:
        ValueError: If z is not three-dimensional, a head index is out of range or the mode is unknown.
    """
    z = _array("z", z, 3)  # (nh, T, hd)
    if mode not in ("zero", "mean"):
        raise ValueError(f'mode must be "zero" or "mean", got {mode!r}.')
    if isinstance(heads, (str, bytes, dict)) or not hasattr(heads, "__iter__"):
        raise ValueError(f"heads must be a list of head indexes, got {type(heads).__name__}.")
    chosen = [as_int("a head index", h, 0, z.shape[0] - 1) for h in heads]
    out = z.copy()
    for h in chosen:
        out[h] = 0.0 if mode == "zero" else z[h].mean(axis=0, keepdims=True)  # (T, hd) <- (1, hd)
    return {"z": out.tolist(), "change": float(np.abs(out - z).max())}


# ----------------------------------------------------------------------------
# activation patching


def logit_difference(logits, good, bad):
    """How much the model prefers token ``good`` to token ``bad`` at the last position.

    Args:
        logits: (V,) or (T, V) logits; with T rows the last one is read.
        good: The id of the right answer (e.g. " Paris").
        bad: The id of the wrong one (e.g. " Rome").

    Returns:
        dict with ``difference`` (logit of good minus logit of bad), ``good`` and ``bad`` (the two logits).

    Raises:
        ValueError: If an id is outside the vocabulary.
    """
    z = _array("logits", logits, (1, 2))
    last = z if z.ndim == 1 else z[-1]  # (V,)
    g = as_int("good", good, 0, last.size - 1)
    b = as_int("bad", bad, 0, last.size - 1)
    return {"difference": float(last[g] - last[b]), "good": float(last[g]), "bad": float(last[b])}


def restored_fraction(ld_patched, ld_clean, ld_corrupt):
    """How much of the clean run's logit difference a patch restores in the corrupted run.

    ``(LD_patched − LD_corrupt) / (LD_clean − LD_corrupt)``: 0 when the patch changes nothing,
    1 when the corrupted run behaves as the clean one. It can leave [0, 1]: below 0 when the
    patch pushes the wrong way, above 1 when it overshoots.

    Args:
        ld_patched: One logit difference, or a grid of them (e.g. (L, T), one per patched site).
        ld_clean: The logit difference of the clean prompt.
        ld_corrupt: That of the corrupted prompt.

    Returns:
        dict with ``fraction`` (the shape of ld_patched), ``max`` (the largest fraction) and
        ``argmax`` (its index in the grid, a list; empty for a single number).

    Raises:
        ValueError: If the clean and corrupted differences are equal (nothing to restore).
    """
    clean, corrupt = as_number("ld_clean", ld_clean), as_number("ld_corrupt", ld_corrupt)
    if clean == corrupt:
        raise ValueError("ld_clean equals ld_corrupt: the corruption changed nothing, so there is nothing to restore.")
    single = not isinstance(ld_patched, (list, tuple, np.ndarray))
    patched = np.array(as_number("ld_patched", ld_patched)) if single else _array("ld_patched", ld_patched, (1, 2, 3))
    fraction = (patched - corrupt) / (clean - corrupt)  # same shape as ld_patched
    best = np.unravel_index(int(np.argmax(fraction)), fraction.shape)
    return {"fraction": fraction.tolist(), "max": float(fraction.max()), "argmax": [int(i) for i in best]}


# ----------------------------------------------------------------------------
# induction heads


def repeated_sequence(half, vocab_size=50257, seed=0, bos=None):
    """A random sequence of ``half`` token ids written twice, optionally after a start token.

    Random tokens carry no meaning, so the only way to predict the second copy is to find the
    first one in the context: the setting in which induction heads show themselves. The same
    ``half``, ``vocab_size``, ``seed`` and ``bos`` give the same ids as
    ``model_export.interpret.repeated_tokens``.

    Args:
        half: Length of one copy.
        vocab_size: Ids are drawn uniformly from 0 .. vocab_size − 1.
        seed: Seed of NumPy's ``default_rng``.
        bos: A token id to put first (GPT-2's ``<|endoftext|>`` is 50256), or None.

    Returns:
        dict with ``ids`` (T,) where T = 2 · half (+ 1 with bos), and ``second_start``, the
        position where the second copy begins.
    """
    half = as_int("half", half, 1, 512)
    vocab_size = as_int("vocab_size", vocab_size, 1, MAX_VOCAB, ",")
    rng = np.random.default_rng(as_int("seed", seed, 0, 2**32 - 1))
    first = rng.integers(0, vocab_size, half).tolist()
    prefix = [] if bos is None else [as_int("bos", bos, 0, MAX_VOCAB, ",")]
    ids = prefix + first + first
    return {"ids": ids, "second_start": len(ids) - half}


def ideal_pattern(kind, half, prefix=0):
    """The attention pattern of an idealised head on a sequence whose last 2 · half tokens repeat.

    Kinds: ``"induction"`` (from each second-copy position t to t − half + 1, the token after the
    current token's earlier copy; elsewhere to itself), ``"previous"`` (to t − 1), ``"first"``
    (to position 0), ``"self"`` (to t) and ``"uniform"`` (evenly over 0 .. t). All are causal.

    Args:
        kind: One of the kinds above.
        half: Length of one copy.
        prefix: Tokens before the first copy (1 for a start token).

    Returns:
        dict with ``attn`` (T, T), rows the query positions, and ``score``, its induction score
        (see `induction_score`).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}.")
    half = as_int("half", half, 1, 256)
    T = as_int("prefix", prefix, 0, 256) + 2 * half
    rows = np.arange(T)
    attn = np.zeros((T, T))  # (T, T) query x key
    if kind == "uniform":
        attn = np.tril(np.ones((T, T))) / (rows + 1)[:, None]
    else:
        target = {"previous": np.maximum(rows - 1, 0), "first": np.zeros(T, int), "self": rows}.get(kind, rows.copy())
        if kind == "induction":
            second = rows >= T - half
            target[second] = rows[second] - half + 1
        attn[rows, target] = 1.0
    return {"attn": attn.tolist(), "score": induction_score(attn[None], half)["scores"][0]}


def induction_score(attn, half):
    """Each head's mean attention from the second copy to "the token after the earlier copy".

    On a sequence whose last 2 · half tokens are a half written twice, position t of the
    second copy holds the same token as position t − half; an induction head looks for that
    earlier occurrence and attends to the token that followed it, t − half + 1, whose value
    it copies forward as the prediction.

    Args:
        attn: (nh, T, T) one layer's attention probabilities, or (L, nh, T, T) every layer's;
            rows are queries.
        half: Length of one copy; T must be at least 2 · half.

    Returns:
        dict with ``scores`` (nh,) or (L, nh), each in [0, 1]; ``best``, the index of the
        highest-scoring head ([head] or [layer, head]); and ``best_score``.

    Raises:
        ValueError: If the attention is not square over positions or too short for two copies.
    """
    a = _array("attn", attn, (3, 4))  # (..., nh, T, T)
    T = a.shape[-1]
    if a.shape[-2] != T:
        raise ValueError(f"attn must be square over positions (queries x keys), got {a.shape[-2]} x {T}.")
    half = as_int("half", half, 1, 512)
    if T < 2 * half:
        raise ValueError(f"attn covers {T} positions, too few for two copies of {half}.")
    queries = np.arange(T - half, T)  # the second copy
    scores = a[..., queries, queries - half + 1].mean(axis=-1)  # (..., nh)
    best = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return {"scores": scores.tolist(), "best": [int(i) for i in best], "best_score": float(scores.max())}


def copy_losses(loss, half):
    """Mean next-token loss while predicting the first copy and while predicting the second.

    ``loss[i]`` is the loss of predicting token i + 1 from tokens 0 .. i, so a sequence of T
    tokens has T − 1 losses. The first token of each copy is left out of both means: nothing
    in the context predicts it.

    Args:
        loss: (T − 1,) per-token losses in nats, of a sequence whose last 2 · half tokens repeat.
        half: Length of one copy (at least 2).

    Returns:
        dict with ``first`` and ``second`` (mean losses over the two copies) and ``drop``,
        first − second.
    """
    loss = _array("loss", loss, 1)  # (T - 1,)
    T = loss.size + 1
    half = as_int("half", half, 2, 512)
    if T < 2 * half:
        raise ValueError(f"loss covers {T} tokens, too few for two copies of {half}.")
    start = T - 2 * half  # first token of the first copy
    first = loss[start : start + half - 1]  # predicting tokens start + 1 .. start + half - 1
    second = loss[start + half :]  # predicting tokens start + half + 1 .. T - 1
    return {"first": float(first.mean()), "second": float(second.mean()), "drop": float(first.mean() - second.mean())}


def uniform_loss(vocab_size=50257):
    """The loss of a model that gives every token the same probability: ln V nats.

    Args:
        vocab_size: V.

    Returns:
        dict with ``loss`` (ln V) and ``probability`` (1 / V).
    """
    V = as_int("vocab_size", vocab_size, 1, MAX_VOCAB, ",")
    return {"loss": math.log(V), "probability": 1.0 / V}


# ----------------------------------------------------------------------------
# direct logit attribution


def direct_logit_attribution(components, final_resid, ln_weight, unembed_row, ln_bias=None, eps=1e-5):
    """Each component's direct share of one token's logit, with the final LayerNorm's scale frozen.

    The last residual stream x is a sum of what every part wrote: the embeddings, each head,
    each MLP. Its logit for the token is ``LN(x) · w`` with ``w`` the token's unembedding row,
    ``LN(x) = (x − mean x) / σ ⊙ g + b``. Holding σ at its value on the whole stream makes that
    linear in x, so a component c gets ``((c − mean c) / σ) · (g ⊙ w)``, and the shares add up
    to the logit less the bias's part ``b · w``.

    Args:
        components: (K, C) what each part wrote at the last position.
        final_resid: (C,) the last residual stream (ln_f's input); normally the sum of the components.
        ln_weight: (C,) the final LayerNorm's gain g.
        unembed_row: (C,) the unembedding row w of the token.
        ln_bias: (C,) its bias b (zeros when None).
        eps: LayerNorm's epsilon.

    Returns:
        dict with ``contributions`` (K,); ``total``, their sum; ``bias_share``, b · w;
        ``logit``, LN(x) · w; ``sigma``; and ``unexplained``, logit − bias_share − total
        (0 when the components add up to final_resid).
    """
    c = _array("components", components, 2)  # (K, C)
    x = _array("final_resid", final_resid, 1)  # (C,)
    g, w = _array("ln_weight", ln_weight, 1), _array("unembed_row", unembed_row, 1)
    b = np.zeros_like(x) if ln_bias is None else _array("ln_bias", ln_bias, 1)
    for name, a in (("components", c), ("ln_weight", g), ("unembed_row", w), ("ln_bias", b)):
        _width(name, a, x.size, "final_resid")
    eps = _eps(eps)
    sigma = float(np.sqrt(x.var() + eps))  # frozen: the whole stream's spread
    direction = g * w  # (C,)
    parts = ((c - c.mean(axis=-1, keepdims=True)) / sigma) @ direction  # (K, C) @ (C,) -> (K,)
    logit = float(_layer_norm(x, g, b, eps) @ w)
    bias_share = float(b @ w)
    total = float(parts.sum())
    return {
        "contributions": parts.tolist(),
        "total": total,
        "bias_share": bias_share,
        "logit": logit,
        "sigma": sigma,
        "unexplained": logit - bias_share - total,
    }
