"""How a Transformer's weights are updated: SGD, momentum, Adam, AdamW, the learning-rate
schedule and gradient clipping.

    SGD:       p <- p - lr * g
    momentum:  m <- mu * m + g;            p <- p - lr * m
    Adam:      m <- b1 m + (1 - b1) g;     v <- b2 v + (1 - b2) g^2
               p <- p - lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t)
    AdamW:     p <- p - lr * wd * p, then the Adam step (weight decay decoupled from the gradient,
               Loshchilov & Hutter, 2019); biases and LayerNorm gains get no decay.

The schedule GPT-3 (Brown et al., 2020) and LLaMA (Touvron et al., 2023) describe: a linear
warm-up to the peak learning rate, then a cosine decay to a floor (10% of the peak in both
papers). Clipping rescales all gradients together when their global L2 norm exceeds a bound
(1.0 in both papers).

`adamw_step`, `lr_at` and `clip_grad_norm` act on dicts of NumPy arrays (the training loop's
`params` and `grads`); they follow `torch.optim.AdamW`, `LinearLR` then `CosineAnnealingLR`,
and `torch.nn.utils.clip_grad_norm_`, which the tests hold them to. `compare` runs the four
optimizers on a stretched bowl and returns their paths, for a figure.
"""

import math

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
MAX_STEPS = 10_000


def lr_at(step: int, max_lr: float, warmup: int, max_steps: int, min_lr: float = 0.0) -> float:
    """The learning rate at `step` (0-based): linear warm-up, then cosine decay to `min_lr`.

    Args:
        step: The optimizer step, from 0.
        max_lr: The peak, reached at step `warmup`.
        warmup: Warm-up steps (0: none); step s < warmup gets max_lr * (s + 1) / warmup.
        max_steps: Where the cosine reaches `min_lr` (and stays).
        min_lr: The floor.

    Returns:
        The learning rate.

    Examples:
        >>> [round(lr_at(s, 1.0, 2, 6), 3) for s in range(7)]
        [0.5, 1.0, 1.0, 0.854, 0.5, 0.146, 0.0]
    """
    if step < warmup:
        return max_lr * (step + 1) / warmup
    if step >= max_steps:
        return min_lr
    ratio = (step - warmup) / max(max_steps - warmup, 1)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def decays(name: str, value: np.ndarray) -> bool:
    """Whether AdamW decays a parameter: matrices do; biases and LayerNorm gains (vectors) do not."""
    return value.ndim >= 2


def clip_grad_norm(grads: dict, max_norm: float) -> float:
    """Scale every gradient by max_norm / (norm + 1e-6) when their global L2 norm is above `max_norm`.

    Returns:
        The global norm before clipping.
    """
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    scale = max_norm / (norm + 1e-6)
    if scale < 1.0:
        for g in grads.values():
            g *= scale
    return norm


def adamw_step(params: dict, grads: dict, state: dict, lr: float, betas=(0.9, 0.95), eps: float = 1e-8, weight_decay: float = 0.1) -> None:
    """One AdamW step, in place: decoupled weight decay, then Adam with bias correction.

    Args:
        params: Parameter arrays, updated in place.
        grads: Their gradients.
        state: The optimizer's memory (`{}` at first): step count and each parameter's moments.
        lr: This step's learning rate.
        betas: (b1, b2), the moments' decay (GPT-3 and LLaMA: 0.9 and 0.95).
        eps: Added to sqrt(v_hat).
        weight_decay: wd (GPT-3 and LLaMA: 0.1), applied to the matrices only (`decays`).
    """
    b1, b2 = betas
    state["step"] = t = state.get("step", 0) + 1
    for name, p in params.items():
        g = grads[name]
        m = state.setdefault("m." + name, np.zeros_like(p))
        v = state.setdefault("v." + name, np.zeros_like(p))
        if weight_decay and decays(name, p):
            p *= 1.0 - lr * weight_decay
        m *= b1
        m += (1.0 - b1) * g
        v *= b2
        v += (1.0 - b2) * g * g
        denom = np.sqrt(v) / math.sqrt(1.0 - b2**t) + eps
        p -= (lr / (1.0 - b1**t)) * m / denom


def _bowl(xy, stretch):
    """f(x, y) = (x^2 + stretch * y^2) / 2 and its gradient."""
    x, y = xy
    return 0.5 * (x * x + stretch * y * y), np.array([x, stretch * y])


def compare(steps: int = 60, lr: float = 0.1, stretch: float = 10.0, start=(-4.0, 2.0), weight_decay: float = 0.1) -> dict:
    """SGD, momentum, Adam and AdamW from the same start on a stretched bowl (x^2 + stretch y^2) / 2.

    A steep direction (y) and a shallow one (x) are what makes plain SGD zig-zag or crawl;
    momentum averages the zig-zag away, Adam divides each coordinate by its own gradient scale.

    Args:
        steps: Updates per optimizer (1 to 10,000).
        lr: The learning rate of all four (momentum 0.9; Adam and AdamW betas 0.9, 0.999).
        stretch: How much steeper y is than x (at least 1).
        start: (x, y) where all four begin.
        weight_decay: AdamW's decay (pulls the point toward the origin, apart from the gradient).

    Returns:
        `{name: {"path": [[x, y], ...] (steps + 1 points), "loss": [f, ...]}}` for each optimizer.

    Examples:
        >>> out = compare(steps=5)
        >>> len(out["adam"]["path"]), out["sgd"]["loss"][-1] < out["sgd"]["loss"][0]
        (6, True)
    """
    steps = _as_int("steps", steps, 1, MAX_STEPS)
    lr = _between("lr", lr, 1e-6, 10.0)
    stretch = _between("stretch", stretch, 1.0, 1e4)
    weight_decay = _between("weight_decay", weight_decay, 0.0, 1.0)
    out = {}
    for name in OPTIMIZERS:
        p = {"xy": np.array([float(start[0]), float(start[1])])}
        state, velocity = {}, np.zeros(2)
        path, losses = [p["xy"].tolist()], [float(_bowl(p["xy"], stretch)[0])]
        for _ in range(steps):
            _, g = _bowl(p["xy"], stretch)
            if name == "sgd":
                p["xy"] -= lr * g
            elif name == "momentum":
                velocity = 0.9 * velocity + g
                p["xy"] -= lr * velocity
            else:
                # the point is one "matrix" parameter, so AdamW decays it
                adamw_step({"xy": p["xy"][None]}, {"xy": g[None]}, state, lr, (0.9, 0.999), 1e-8, weight_decay if name == "adamw" else 0.0)
            path.append(p["xy"].tolist())
            losses.append(float(_bowl(p["xy"], stretch)[0]))
        out[name] = {"path": path, "loss": losses}
    return out
