"""Backpropagation through a tiny GPT, written out stage by stage.

The model is GPT-2's architecture at toy size: token and position embeddings, `n_layer`
pre-norm blocks (LayerNorm, causal multi-head attention, residual add, LayerNorm, MLP with
GELU in its tanh form, residual add), a final LayerNorm, and the unembedding tied to the
token embedding. `mlp=False` drops the MLPs: an attention-only model, the kind in which
induction heads were first studied (Olsson et al., 2022).

`forward` runs the model and keeps, for each stage, what the backward pass needs;
`backward` walks the same stages in reverse and returns the gradient of the mean
cross-entropy loss for every parameter. Each stage's backward is a few lines:

    loss = mean over counted positions of -log softmax(logits)[target]
    d logits   = (softmax(logits) - onehot(target)) / N                      (softmax + cross-entropy)
    d x_f, d wte += d logits @ wte, d logits^T @ x_f                       (tied unembedding)
    LayerNorm:   d x = rstd * (d xhat - mean(d xhat) - xhat * mean(d xhat * xhat)),  d xhat = d y * gamma
    GELU:        d z = d a * gelu'(z)
    attention:   d P = d Y @ V^T,  d S = P * (d P - sum(d P * P)),  d Q = d S @ K / sqrt(D), ...
    residual:    the gradient flows through the add unchanged, into both branches

`init_params` follows GPT-2 (Radford et al., 2019) as nanoGPT writes it: weights drawn from
N(0, 0.02), the two projections that write into the residual stream scaled by 1/sqrt(2 n_layer),
biases zero, LayerNorm gains one.

Everything is float64 NumPy; `params` is a dict of arrays named like nanoGPT's
(`wte`, `wpe`, `h.0.ln_1.weight`, `h.0.attn.c_attn.weight` (C, 3C), …, `ln_f.weight`).
Shapes in comments: B batch, T tokens, C width, H heads, D = C / H, V vocabulary.
"""

import math
from dataclasses import dataclass

import numpy as np

from demos._checks import as_array as _as_float_array
from demos._checks import as_finite as _as_finite
from demos._checks import as_int as _as_int

LN_EPS = 1e-5
INIT_STD = 0.02
GELU_C = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class TinyConfig:
    """The size of a tiny GPT.

    Attributes:
        vocab_size: V, the number of token ids.
        block_size: The longest sequence (rows of the position embedding).
        n_layer: Number of blocks.
        n_head: Heads per attention layer.
        n_embd: C, the width of the residual stream (a multiple of `n_head`).
        mlp: Whether each block has its MLP (False: attention-only).
    """

    vocab_size: int
    block_size: int
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    mlp: bool = True


def param_shapes(cfg: TinyConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in the model's order."""
    C, V = cfg.n_embd, cfg.vocab_size
    shapes = {"wte": (V, C), "wpe": (cfg.block_size, C)}
    for layer in range(cfg.n_layer):
        p = f"h.{layer}."
        shapes |= {
            p + "ln_1.weight": (C,),
            p + "ln_1.bias": (C,),
            p + "attn.c_attn.weight": (C, 3 * C),
            p + "attn.c_attn.bias": (3 * C,),
            p + "attn.c_proj.weight": (C, C),
            p + "attn.c_proj.bias": (C,),
        }
        if cfg.mlp:
            shapes |= {
                p + "ln_2.weight": (C,),
                p + "ln_2.bias": (C,),
                p + "mlp.c_fc.weight": (C, 4 * C),
                p + "mlp.c_fc.bias": (4 * C,),
                p + "mlp.c_proj.weight": (4 * C, C),
                p + "mlp.c_proj.bias": (C,),
            }
    return shapes | {"ln_f.weight": (C,), "ln_f.bias": (C,)}


def init_params(cfg: TinyConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """GPT-2's initialization: N(0, 0.02) weights, residual projections N(0, 0.02 / sqrt(2 L)).

    Args:
        cfg: The model's size.
        seed: Seed of the NumPy generator that draws the weights.

    Returns:
        A dict of float64 arrays, one per parameter (see `param_shapes`).
    """
    rng = np.random.default_rng(seed)
    residual_std = INIT_STD / math.sqrt(2 * cfg.n_layer)
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            params[name] = np.ones(shape)
        elif name.endswith("bias"):
            params[name] = np.zeros(shape)
        else:
            std = residual_std if name.endswith("c_proj.weight") else INIT_STD
            params[name] = rng.normal(0.0, std, size=shape)
    return params


# ----- the stages, forward and backward -----


def layer_norm(x, weight, bias):
    """LayerNorm over the last axis; returns the output and what its backward needs."""
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(x.var(-1, keepdims=True) + LN_EPS)
    xhat = (x - mean) * rstd
    return xhat * weight + bias, (xhat, rstd, weight)


def layer_norm_backward(dy, cache):
    """Gradients of LayerNorm: (dx, dweight, dbias)."""
    xhat, rstd, weight = cache
    dxhat = dy * weight
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, (dy * xhat).reshape(-1, xhat.shape[-1]).sum(0), dy.reshape(-1, dy.shape[-1]).sum(0)


def gelu(z):
    """GELU, tanh form (GPT-2's)."""
    return 0.5 * z * (1.0 + np.tanh(GELU_C * (z + 0.044715 * z**3)))


def gelu_backward(da, z):
    """d z from d a for a = gelu(z)."""
    t = np.tanh(GELU_C * (z + 0.044715 * z**3))
    return da * (0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * z * z))


def attention(x, w_attn, b_attn, w_proj, b_proj, n_head):
    """Causal multi-head self-attention; returns the output and what its backward needs."""
    B, T, C = x.shape
    D = C // n_head
    qkv = x @ w_attn + b_attn  # (B, T, 3C)
    q, k, v = (qkv[..., i * C : (i + 1) * C].reshape(B, T, n_head, D).transpose(0, 2, 1, 3) for i in range(3))  # (B, H, T, D)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D)  # (B, H, T, T)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)  # the causal mask
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    heads = probs @ v  # (B, H, T, D)
    merged = heads.transpose(0, 2, 1, 3).reshape(B, T, C)
    return merged @ w_proj + b_proj, (x, q, k, v, probs, merged, w_attn, w_proj, n_head)


def attention_backward(dy, cache):
    """Gradients of attention: dx, and (dw_attn, db_attn, dw_proj, db_proj)."""
    x, q, k, v, probs, merged, w_attn, w_proj, n_head = cache
    B, T, C = x.shape
    D = C // n_head
    dw_proj = merged.reshape(-1, C).T @ dy.reshape(-1, C)
    db_proj = dy.reshape(-1, C).sum(0)
    dheads = (dy @ w_proj.T).reshape(B, T, n_head, D).transpose(0, 2, 1, 3)  # (B, H, T, D)
    dprobs = dheads @ v.transpose(0, 1, 3, 2)  # (B, H, T, T)
    dv = probs.transpose(0, 1, 3, 2) @ dheads
    dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) / math.sqrt(D)  # masked entries: probs = 0
    dq = dscores @ k
    dk = dscores.transpose(0, 1, 3, 2) @ q
    dqkv = np.concatenate([g.transpose(0, 2, 1, 3).reshape(B, T, C) for g in (dq, dk, dv)], axis=-1)  # (B, T, 3C)
    dw_attn = x.reshape(-1, C).T @ dqkv.reshape(-1, 3 * C)
    db_attn = dqkv.reshape(-1, 3 * C).sum(0)
    return dqkv @ w_attn.T, (dw_attn, db_attn, dw_proj, db_proj)


def mlp(x, w_fc, b_fc, w_proj, b_proj):
    """The MLP: widen to 4C, GELU, narrow back to C."""
    z = x @ w_fc + b_fc  # (B, T, 4C)
    a = gelu(z)
    return a @ w_proj + b_proj, (x, z, a, w_fc, w_proj)


def mlp_backward(dy, cache):
    """Gradients of the MLP: dx, and (dw_fc, db_fc, dw_proj, db_proj)."""
    x, z, a, w_fc, w_proj = cache
    C, F = w_fc.shape
    dw_proj = a.reshape(-1, F).T @ dy.reshape(-1, C)
    db_proj = dy.reshape(-1, C).sum(0)
    dz = gelu_backward(dy @ w_proj.T, z)
    dw_fc = x.reshape(-1, C).T @ dz.reshape(-1, F)
    return dz @ w_fc.T, (dw_fc, dz.reshape(-1, F).sum(0), dw_proj, db_proj)


def cross_entropy(logits, targets, ignore=-1):
    """Mean next-token cross-entropy in nats over positions whose target is not `ignore`.

    Returns:
        The loss, the per-position losses (B, T) (0 where ignored) and d logits.
    """
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))  # (B, T, V)
    counted = targets != ignore
    safe = np.where(counted, targets, 0)
    per_position = -np.take_along_axis(log_probs, safe[..., None], -1)[..., 0] * counted
    n = max(int(counted.sum()), 1)
    dlogits = np.exp(log_probs)
    np.put_along_axis(dlogits, safe[..., None], np.take_along_axis(dlogits, safe[..., None], -1) - 1.0, -1)
    dlogits *= counted[..., None] / n
    return float(per_position.sum() / n), per_position, dlogits


# ----- the whole model -----


def forward(params, cfg: TinyConfig, idx, targets=None):
    """Run the model on token ids `idx` (B, T).

    Returns:
        `(logits, loss, cache)`: logits (B, T, V); the mean cross-entropy against `targets`
        (B, T, -1 where not counted) or None; what `backward` needs (its `"probs"` entry holds
        each layer's attention probabilities (B, H, T, T), its `"losses"` the per-position loss).
    """
    B, T = idx.shape
    x = params["wte"][idx] + params["wpe"][:T]  # (B, T, C)
    blocks = []
    for layer in range(cfg.n_layer):
        p = f"h.{layer}."
        h, ln1 = layer_norm(x, params[p + "ln_1.weight"], params[p + "ln_1.bias"])
        y, att = attention(
            h, params[p + "attn.c_attn.weight"], params[p + "attn.c_attn.bias"], params[p + "attn.c_proj.weight"], params[p + "attn.c_proj.bias"], cfg.n_head
        )
        x = x + y  # the residual stream
        ln2 = ffn = None
        if cfg.mlp:
            h, ln2 = layer_norm(x, params[p + "ln_2.weight"], params[p + "ln_2.bias"])
            y, ffn = mlp(h, params[p + "mlp.c_fc.weight"], params[p + "mlp.c_fc.bias"], params[p + "mlp.c_proj.weight"], params[p + "mlp.c_proj.bias"])
            x = x + y
        blocks.append((ln1, att, ln2, ffn))
    xf, lnf = layer_norm(x, params["ln_f.weight"], params["ln_f.bias"])
    logits = xf @ params["wte"].T  # (B, T, V): the unembedding is the token embedding, transposed
    cache = {"idx": idx, "blocks": blocks, "lnf": lnf, "xf": xf, "probs": [b[1][4] for b in blocks]}
    if targets is None:
        return logits, None, cache
    loss, cache["losses"], cache["dlogits"] = cross_entropy(logits, targets)
    return logits, loss, cache


def backward(params, cfg: TinyConfig, cache) -> dict[str, np.ndarray]:
    """The gradient of `forward`'s loss for every parameter (run `forward` with targets first)."""
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    dlogits = cache["dlogits"]  # (B, T, V)
    V, C = params["wte"].shape
    grads["wte"] += dlogits.reshape(-1, V).T @ cache["xf"].reshape(-1, C)  # through the tied unembedding
    dx, grads["ln_f.weight"], grads["ln_f.bias"] = layer_norm_backward(dlogits @ params["wte"], cache["lnf"])
    for layer in reversed(range(cfg.n_layer)):
        p = f"h.{layer}."
        ln1, att, ln2, ffn = cache["blocks"][layer]
        if cfg.mlp:
            dh, mlp_grads = mlp_backward(dx, ffn)
            for suffix, g in zip(("mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"), mlp_grads):
                grads[p + suffix] = g
            dh, grads[p + "ln_2.weight"], grads[p + "ln_2.bias"] = layer_norm_backward(dh, ln2)
            dx = dx + dh  # the residual add passes the gradient to both branches
        dh, att_grads = attention_backward(dx, att)
        for suffix, g in zip(("attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"), att_grads):
            grads[p + suffix] = g
        dh, grads[p + "ln_1.weight"], grads[p + "ln_1.bias"] = layer_norm_backward(dh, ln1)
        dx = dx + dh
    T = dx.shape[1]
    grads["wpe"][:T] = dx.sum(0)
    np.add.at(grads["wte"], cache["idx"].ravel(), dx.reshape(-1, C))  # the embedding lookup: scatter-add
    return grads


def softmax_cross_entropy(logits: list, target: int) -> dict:
    """The loss of one prediction and its gradient with respect to the logits.

    For logits z and the right token y: loss = -log softmax(z)[y], and
    d loss / d z_i = softmax(z)_i - [i = y]. The right token's logit is pushed up by 1 - p_y,
    every other logit down by its own probability; the pushes sum to zero.

    Args:
        logits: The scores of every token (2 to 1,000 numbers).
        target: Index of the right token.

    Returns:
        `{"loss": nats, "bits": the same in bits, "probs": softmax(z), "grad": d loss / d z}`.

    Examples:
        >>> out = softmax_cross_entropy([2.0, 1.0, 0.0], 0)
        >>> round(out["loss"], 4), [round(g, 4) for g in out["grad"]]
        (0.4076, [-0.3348, 0.2447, 0.09])
    """
    z = _as_finite("logits", _as_float_array("logits", logits))
    if z.ndim != 1 or not 2 <= z.size <= 1000:
        raise ValueError(f"logits must be a list of 2 to 1,000 numbers, got shape {z.shape}.")
    target = _as_int("target", target, 0, z.size - 1)
    loss, _, grad = cross_entropy(z[None, None], np.array([[target]]))
    return {"loss": loss, "bits": loss / math.log(2), "probs": (grad[0, 0] + np.eye(z.size)[target]).tolist(), "grad": grad[0, 0].tolist()}
