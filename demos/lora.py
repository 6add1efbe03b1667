"""LoRA: fine-tune a few low-rank matrices beside frozen weights (Hu et al., 2022).

A weight matrix W (d_in × d_out) stays frozen; the update is a product of two thin matrices,
A (d_in × r) and B (r × d_out), scaled by α / r:

    h = x W + (α / r) x A B        # (T, d_out); A starts random, B at zero, so h starts as x W

Only A and B are trained: r (d_in + d_out) numbers instead of d_in d_out. After training the
update can be added into W, W' = W + (α / r) A B, so the model runs as fast as before.

`forward` computes both ways; `count` and `memory` do the arithmetic for a model (GPT-2 small,
a 7-billion-parameter LLaMA, GPT-3): trainable parameters, the optimizer state they need, and
the size of what is saved.
"""

from demos._checks import as_array as _as_array
from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

# Per model: width d, layers, MLP hidden width, total parameters (as the papers report them).
MODELS = {
    "gpt2-small": {"d_model": 768, "n_layer": 12, "d_ff": 3072, "params": 124_439_808},
    "llama-7b": {"d_model": 4096, "n_layer": 32, "d_ff": 11008, "params": 6_738_415_616},
    "gpt3-175b": {"d_model": 12288, "n_layer": 96, "d_ff": 49152, "params": 175_000_000_000},
}
# The matrices LoRA may adapt in each block, as (rows, columns) in units of (d_model, d_ff).
MATRICES = {"q": ("d", "d"), "k": ("d", "d"), "v": ("d", "d"), "o": ("d", "d"), "up": ("d", "ff"), "down": ("ff", "d")}
FULL_BYTES = 16  # per trained parameter with mixed-precision Adam: 16-bit weight and gradient, 12 of float32 state
FROZEN_BYTES = 2  # per frozen 16-bit weight
SAVED_BYTES = 2  # per parameter in a 16-bit checkpoint


def forward(x: list, w: list, a: list, b: list, alpha: float = 1.0) -> dict:
    """One adapted matrix: x W + (α / r) x A B, and the same through the merged W'.

    Args:
        x: Inputs (T, d_in).
        w: The frozen weight (d_in, d_out).
        a: A (d_in, r).
        b: B (r, d_out).
        alpha: α; the update is scaled by α / r.

    Returns:
        output (T, d_out), merged (W', d_in × d_out), merged_output (x W'), rank r, and
        trainable (r (d_in + d_out)) beside frozen (d_in d_out).

    Examples:
        >>> forward([[1.0, 0.0]], [[1.0], [0.0]], [[1.0], [1.0]], [[2.0]], alpha=1.0)["output"]
        [[3.0]]
    """
    x, w, a, b = (_as_array(n, v) for n, v in (("x", x), ("w", w), ("a", a), ("b", b)))
    if x.ndim != 2 or w.ndim != 2 or a.shape[:1] != w.shape[:1] or b.shape != (a.shape[1], w.shape[1]) or x.shape[1] != w.shape[0]:
        raise ValueError("Shapes must be x (T, d_in), w (d_in, d_out), a (d_in, r), b (r, d_out).")
    r = a.shape[1]
    scale = _between("alpha", alpha, -1e6, 1e6) / r
    output = x @ w + scale * (x @ a) @ b  # (T, d_out): the thin path never forms A B
    merged = w + scale * a @ b  # (d_in, d_out)
    return {
        "output": output.tolist(),
        "merged": merged.tolist(),
        "merged_output": (x @ merged).tolist(),
        "rank": r,
        "trainable": int(a.size + b.size),
        "frozen": int(w.size),
    }


def _as_model(model):
    if model not in MODELS:
        raise ValueError(f"The model must be one of {', '.join(MODELS)}, got {model!r}.")
    return MODELS[model]


def _as_targets(targets):
    names = [t.strip() for t in (targets.split(",") if isinstance(targets, str) else targets)]
    bad = [t for t in names if t not in MATRICES]
    if not names or bad or len(set(names)) != len(names):
        raise ValueError(f"The targets must be distinct names among {', '.join(MATRICES)}, got {targets!r}.")
    return names


def count(model: str = "gpt2-small", rank: int = 8, targets: str = "q,v") -> dict:
    """Trainable parameters of LoRA on `targets` in every block of `model`.

    Args:
        model: A name in MODELS.
        rank: r.
        targets: The adapted matrices, comma-separated: q, k, v, o (attention), up, down (MLP).

    Returns:
        per_matrix (r (d_in + d_out) for each target), per_layer, trainable (all layers),
        params (the model's), and share (trainable / params).

    Examples:
        >>> count("gpt2-small", 8, "q,v")["trainable"]
        294912
    """
    spec = _as_model(model)
    rank = _as_int("rank", rank, 1, 65_536, grouping=",")
    sizes = {"d": spec["d_model"], "ff": spec["d_ff"]}
    per_matrix = {t: rank * (sizes[MATRICES[t][0]] + sizes[MATRICES[t][1]]) for t in _as_targets(targets)}
    per_layer = sum(per_matrix.values())
    trainable = per_layer * spec["n_layer"]
    return {
        "model": model,
        "per_matrix": per_matrix,
        "per_layer": per_layer,
        "trainable": trainable,
        "params": spec["params"],
        "share": trainable / spec["params"],
    }


def memory(model: str = "llama-7b", rank: int = 8, targets: str = "q,v") -> dict:
    """Model-state memory and checkpoint size, full fine-tuning against LoRA (bytes).

    Full fine-tuning trains every parameter with mixed-precision Adam (FULL_BYTES each). LoRA
    keeps the model frozen in 16 bits (FROZEN_BYTES each) and trains only its own parameters;
    its checkpoint holds only them.

    Returns:
        full (bytes of weights, gradients and optimizer state), lora (the same under LoRA),
        full_checkpoint, lora_checkpoint, and trainable.

    Examples:
        >>> round(memory("llama-7b", 8, "q,v")["full"] / 1e9)
        108
    """
    c = count(model, rank, targets)
    params, trainable = c["params"], c["trainable"]
    return {
        "model": model,
        "trainable": trainable,
        "full": FULL_BYTES * params,
        "lora": FROZEN_BYTES * params + FULL_BYTES * trainable,
        "full_checkpoint": SAVED_BYTES * params,
        "lora_checkpoint": SAVED_BYTES * trainable,
    }
