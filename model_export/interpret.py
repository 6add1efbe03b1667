"""Looking inside GPT-2 with PyTorch hooks: the reference the "Looking inside" pages are tested against.

Each function takes our ``gpt2.GPT2`` (any weights) and a prompt, and computes one quantity of
the interpretability pages the way the literature defines it, with forward hooks on the module
instead of extra graph inputs. The browser computes the same quantities with the probes of
``probes.py``; the tests compare the two.

    run_with_hooks   one forward pass that records (and optionally edits) every head's output z,
                     every block's input (the residual stream), attention and MLP outputs
    logit_lens       every layer's residual stream read through ln_f and the unembedding
    fit_translators  affine maps from each layer's stream to the last one (a linear lens)
    lens_fidelity    how far each layer's reading is from the output, with or without them
    ablate_heads     zero or mean ablation of a set of heads: the next-token distribution after
    patch_residual   the residual stream at (layer, position) copied from a clean run
    patch_head       one head's output at every position copied from a clean run
    induction        per-head induction scores and per-token loss on a repeated random sequence
    first_token_attention  each head's share of attention on the first position (a sink)
    logit_attribution  each head's and MLP's direct effect on a token's logit
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .gpt2 import GPT2


@dataclass
class Edits:
    """Changes to make during a forward pass; each maps (layer, ...) to the new value.

    Attributes:
        heads: ``{(layer, head): z}`` with z (T, hd) the head's output to use instead of its own.
        resid: ``{(layer, position): x}`` with x (C,) the residual stream entering the block.
    """

    heads: dict = field(default_factory=dict)
    resid: dict = field(default_factory=dict)


@dataclass
class Recorded:
    """What one forward pass computed, batch of one, as float64 NumPy arrays.

    Attributes:
        logits: (T, V).
        resid: n_layer + 1 arrays (T, C): each block's input (before an edit), then ln_f's input.
        z: n_layer arrays (nh, T, hd): each head's output (after an edit).
        attn: n_layer arrays (nh, T, T): the attention probabilities.
        attn_out: n_layer arrays (T, C): what attention added to the residual stream.
        mlp_out: n_layer arrays (T, C): what the MLP added.
    """

    logits: np.ndarray
    resid: list
    z: list
    attn: list
    attn_out: list
    mlp_out: list


@torch.no_grad()
def run_with_hooks(model: GPT2, ids: list[int], edits: Edits | None = None) -> Recorded:
    """One forward pass over ``ids`` with hooks that record and edit the activations."""
    edits = edits or Edits()
    nh, hd = model.config.n_head, model.config.head_dim
    seen = {"resid": {}, "z": {}, "attn_out": {}, "mlp_out": {}}
    hooks = []

    def block_input(layer):  # the residual stream entering block `layer`
        def hook(module, args):
            x = args[0].clone()  # (1, T, C)
            seen["resid"][layer] = x[0].double().numpy().copy()
            for (at, pos), value in edits.resid.items():
                if at == layer:
                    x[0, pos] = torch.as_tensor(value, dtype=x.dtype)
            return (x, *args[1:])

        return hook

    def head_outputs(layer):  # c_proj's input is the heads' outputs side by side
        def hook(module, args):
            y = args[0].clone()  # (1, T, C)
            z = y.view(y.shape[0], y.shape[1], nh, hd).transpose(1, 2)  # (1, nh, T, hd), a view of y
            for (at, head), value in edits.heads.items():
                if at == layer:
                    z[0, head] = torch.as_tensor(value, dtype=y.dtype)
            seen["z"][layer] = z[0].double().numpy().copy()
            return (y,)

        return hook

    def record(key, layer):
        def hook(module, args, output):
            out = output[0] if isinstance(output, tuple) else output  # attn returns (y, k, v, probs)
            seen[key][layer] = out[0].double().numpy().copy()

        return hook

    for layer, block in enumerate(model.blocks):
        hooks += [
            block.register_forward_pre_hook(block_input(layer)),
            block.attn.c_proj.register_forward_pre_hook(head_outputs(layer)),
            block.attn.register_forward_hook(record("attn_out", layer)),
            block.mlp.register_forward_hook(record("mlp_out", layer)),
        ]
    hooks.append(model.ln_f.register_forward_pre_hook(lambda m, args: seen["resid"].__setitem__(len(model.blocks), args[0][0].double().numpy().copy())))
    was = model.output_attentions
    model.output_attentions = True
    try:
        x = torch.tensor([ids])  # (1, T)
        outputs = model(x, torch.ones_like(x), torch.arange(len(ids))[None])
    finally:
        model.output_attentions = was
        for h in hooks:
            h.remove()
    L = len(model.blocks)
    attentions = outputs[1 + 2 * L : 1 + 3 * L]
    return Recorded(
        logits=outputs[0][0].double().numpy(),
        resid=[seen["resid"][i] for i in range(L + 1)],
        z=[seen["z"][i] for i in range(L)],
        attn=[a[0].double().numpy() for a in attentions],
        attn_out=[seen["attn_out"][i] for i in range(L)],
        mlp_out=[seen["mlp_out"][i] for i in range(L)],
    )


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities over the last axis, float64."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) in nats, for two distributions over the same vocabulary."""
    mask = p > 0
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(np.maximum(q[mask], 1e-300)))))


@torch.no_grad()
def logit_lens(model: GPT2, ids: list[int]) -> np.ndarray:
    """Next-token probabilities read from every layer's residual stream.

    Returns:
        (n_layer + 1, T, V): row l is ``softmax(lm_head(ln_f(resid[l])))``; the last row is the
        model's own prediction.
    """
    run = run_with_hooks(model, ids)
    resid = torch.tensor(np.stack(run.resid), dtype=torch.float32)  # (L + 1, T, C)
    return softmax(model.lm_head(model.ln_f(resid)).double().numpy())  # (L + 1, T, V)


def residual_streams(model: GPT2, windows: list[list[int]]) -> np.ndarray:
    """Every depth's residual stream over several prompts, positions stacked: (L + 1, N, C)."""
    return np.concatenate([np.stack(run_with_hooks(model, ids).resid) for ids in windows], axis=1)


def _with_one(streams: np.ndarray) -> np.ndarray:
    """(L + 1, N, C) streams with a constant 1 appended to each row: (L + 1, N, C + 1)."""
    return np.concatenate([streams, np.ones(streams.shape[:2] + (1,))], axis=-1)


def fit_translators(streams: np.ndarray) -> np.ndarray:
    """One affine map per depth from that depth's stream to the last one, fitted by least
    squares (Yom Din et al., 2024); the tuned lens (Belrose et al., 2023) trains such maps on the
    KL divergence to the output instead.

    Args:
        streams: (L + 1, N, C) from ``residual_streams``.

    Returns:
        (L + 1, C + 1, C): ``[h, 1] @ maps[l]`` estimates the last stream from depth l's ``h``.
    """
    return np.stack([np.linalg.lstsq(x, streams[-1], rcond=None)[0] for x in _with_one(streams)])


@torch.no_grad()
def lens_fidelity(model: GPT2, streams: np.ndarray, maps: np.ndarray | None = None) -> dict:
    """How close each depth's lens reading is to the model's output, over all N positions.

    Args:
        streams: (L + 1, N, C) residual streams of held-out text.
        maps: translators from ``fit_translators``; None reads the streams as they are (the
            logit lens).

    Returns:
        ``{"kl": (L + 1,), "top1": (L + 1,)}``: mean KL(output || reading) in nats, and the
        share of positions whose top-1 token is the output's.
    """
    read = lambda h: torch.log_softmax(model.lm_head(model.ln_f(torch.tensor(h, dtype=torch.float32))), -1)  # noqa: E731
    readable = streams if maps is None else _with_one(streams) @ maps  # (L + 1, N, C)
    kl, same = np.zeros(len(streams)), np.zeros(len(streams))
    for chunk in np.array_split(np.arange(streams.shape[1]), max(1, streams.shape[1] // 256)):  # bounds the (n, V) arrays
        final = read(streams[-1, chunk])  # (n, V) the output's log-probabilities
        final_p = final.exp()  # (n, V), once per chunk, not per depth
        for depth, h in enumerate(readable[:, chunk]):
            reading = read(h)
            kl[depth] += float((final_p * (final - reading)).sum())
            same[depth] += float((reading.argmax(-1) == final.argmax(-1)).sum())
    n = streams.shape[1]
    return {"kl": kl / n, "top1": same / n}


def head_means(run: Recorded) -> dict:
    """Mean ablation's replacement: each head's output averaged over the prompt's positions."""
    T = run.z[0].shape[1]
    return {(layer, head): np.repeat(z[head].mean(axis=0, keepdims=True), T, axis=0) for layer, z in enumerate(run.z) for head in range(z.shape[0])}


def ablate_heads(model: GPT2, ids: list[int], heads: list[tuple[int, int]], mode: str = "zero") -> tuple[np.ndarray, np.ndarray]:
    """The next-token distribution before and after switching ``heads`` off.

    Args:
        heads: (layer, head) pairs.
        mode: "zero" (the head's output becomes 0) or "mean" (its mean over the positions).

    Returns:
        ``(before, after)``, each (V,) probabilities at the last position.
    """
    clean = run_with_hooks(model, ids)
    means = head_means(clean)
    hd = clean.z[0].shape[2]
    edits = Edits(heads={key: (means[key] if mode == "mean" else np.zeros((len(ids), hd))) for key in heads})
    return softmax(clean.logits[-1]), softmax(run_with_hooks(model, ids, edits).logits[-1])


def logit_difference(logits: np.ndarray, good: int, bad: int) -> float:
    """``logit[good] - logit[bad]`` at the last position: how much the model prefers good."""
    return float(logits[-1, good] - logits[-1, bad])


def restored(patched: float, clean: float, corrupted: float) -> float:
    """How much of the clean logit difference a patch brings back: 0 = none, 1 = all of it."""
    return (patched - corrupted) / (clean - corrupted) if clean != corrupted else 0.0


def _patch_map(model: GPT2, clean: list[int], corrupted: list[int], good: int, bad: int, sites: list, edit) -> np.ndarray:
    """The restored logit difference for each site: the corrupted prompt run with ``edit(base,
    site)`` (an ``Edits`` from the clean run ``base``)."""
    if len(clean) != len(corrupted):
        raise ValueError(f"the prompts have {len(clean)} and {len(corrupted)} tokens; patching needs the same length")
    base = run_with_hooks(model, clean)
    ld_clean = logit_difference(base.logits, good, bad)
    ld_corrupt = logit_difference(run_with_hooks(model, corrupted).logits, good, bad)
    patched = [logit_difference(run_with_hooks(model, corrupted, edit(base, site)).logits, good, bad) for site in sites]
    return np.array([restored(ld, ld_clean, ld_corrupt) for ld in patched])


def patch_residual(model: GPT2, clean: list[int], corrupted: list[int], good: int, bad: int) -> np.ndarray:
    """Residual-stream patching: (n_layer, T) restored logit difference.

    Entry (l, t) runs the corrupted prompt with the stream entering block l at position t
    replaced by the clean run's.
    """
    L, T = len(model.blocks), len(clean)
    sites = [(layer, pos) for layer in range(L) for pos in range(T)]
    edit = lambda base, site: Edits(resid={site: base.resid[site[0]][site[1]]})  # noqa: E731
    return _patch_map(model, clean, corrupted, good, bad, sites, edit).reshape(L, T)


def patch_heads(model: GPT2, clean: list[int], corrupted: list[int], good: int, bad: int) -> np.ndarray:
    """Per-head patching: (n_layer, nh) restored logit difference, each head's output at every
    position copied from the clean run into the corrupted one."""
    L, nh = len(model.blocks), model.config.n_head
    sites = [(layer, head) for layer in range(L) for head in range(nh)]
    edit = lambda base, site: Edits(heads={site: base.z[site[0]][site[1]]})  # noqa: E731
    return _patch_map(model, clean, corrupted, good, bad, sites, edit).reshape(L, nh)


def repeated_tokens(half: int, vocab_size: int, seed: int = 0, bos: int | None = None) -> list[int]:
    """A random sequence of ``half`` tokens written twice (after ``bos`` when given)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, vocab_size, half).tolist()
    return ([bos] if bos is not None else []) + first + first


def induction(model: GPT2, ids: list[int], half: int) -> dict:
    """Induction heads on ``ids``, a sequence whose last ``2 * half`` tokens are a half repeated.

    Returns:
        ``scores`` (n_layer, nh): each head's mean attention, from the second copy's positions,
        to the token after the same token's first occurrence (position t - half + 1);
        ``loss`` (T - 1,): each next-token loss (nats); ``attn`` the layers' attention.
    """
    run = run_with_hooks(model, ids)
    start = len(ids) - half  # first position of the second copy
    queries = np.arange(start, len(ids))
    scores = np.stack([a[:, queries, queries - half + 1].mean(axis=1) for a in run.attn])  # (L, nh)
    logp = np.log(softmax(run.logits[:-1]))  # (T - 1, V)
    loss = -logp[np.arange(len(ids) - 1), ids[1:]]  # (T - 1,)
    return {"scores": scores, "loss": loss, "attn": run.attn}


def first_token_attention(model: GPT2, ids: list[int], skip: int = 16) -> np.ndarray:
    """Each head's mean attention weight on the first position (index 0), from index ``skip`` on.

    A head with nothing to read must still give each row a total of 1; a trained model parks
    that weight on the first position, an *attention sink* (Xiao et al., 2024). Evenly spread
    attention would give it only ``1 / (t + 1)`` from index t.

    Returns:
        (n_layer, nh) mean weights.
    """
    run = run_with_hooks(model, ids)
    return np.stack([a[:, skip:, 0].mean(axis=1) for a in run.attn])  # (L, nh)


@torch.no_grad()
def logit_attribution(model: GPT2, ids: list[int], token: int) -> dict:
    """Direct logit attribution at the last position for ``token``.

    Each component's output c (C,) is read through the unembedding with the final LayerNorm's
    scale frozen at its value on the whole stream: ``((c - mean(c)) / sigma) . (g * w_token)``,
    sigma the standard deviation of ln_f's input. The parts sum to the token's logit minus
    ``b . w_token`` (the LayerNorm bias's share).

    Returns:
        ``heads`` (n_layer, nh), ``mlps`` (n_layer,), ``embeddings`` and ``attn_bias`` (the sum
        over layers of c_proj's bias), and ``logit``.
    """
    run = run_with_hooks(model, ids)
    eps = model.ln_f.eps
    final = run.resid[-1][-1]  # (C,)
    sigma = np.sqrt(final.var() + eps)
    direction = model.ln_f.weight.double().numpy() * model.lm_head.weight[token].double().numpy()  # (C,)
    read = lambda c: float(((c - c.mean()) / sigma) @ direction)  # noqa: E731
    L, nh, hd = len(model.blocks), model.config.n_head, model.config.head_dim
    heads = np.zeros((L, nh))
    bias = 0.0
    for layer, block in enumerate(model.blocks):
        w = block.attn.c_proj.weight.double().numpy()  # (C, C) as nn.Linear: out, in
        for head in range(nh):
            heads[layer, head] = read(w[:, head * hd : (head + 1) * hd] @ run.z[layer][head][-1])
        bias += read(block.attn.c_proj.bias.double().numpy())
    return {
        "heads": heads,
        "mlps": np.array([read(m[-1]) for m in run.mlp_out]),
        "embeddings": read(run.resid[0][-1]),
        "attn_bias": bias,
        "logit": float(run.logits[-1, token]),
    }
