"""Training on many GPUs: what each GPU holds when the work is split three ways, and the memory
arithmetic of sharding the optimizer state.

- **Data parallelism**: every GPU holds the whole model, runs its own slice of the batch, and the
  GPUs average their gradients (an all-reduce) before the optimizer steps; `data_parallel_grads`
  shows that the average of the slices' gradients is the whole batch's gradient.
- **Tensor parallelism** (Megatron-LM, Shoeybi et al., 2019): each matrix of a block is split
  across GPUs. The MLP's first matrix is split by columns (each GPU computes some hidden units,
  GELU needs no exchange), its second by rows (each GPU produces a partial sum of the output);
  one all-reduce adds the partial sums. `tensor_parallel_mlp` computes it shard by shard.
- **Pipeline parallelism** (GPipe, Huang et al., 2019): each GPU holds a run of consecutive layers.
- **Sharded optimizer state** (ZeRO, Rajbhandari et al., 2020; PyTorch's FSDP does the same):
  mixed-precision Adam keeps, per parameter, 2 bytes of 16-bit weights, 2 of 16-bit gradients
  and K = 12 of float32 state (a master copy, Adam's m and v). Data parallelism copies all 16
  bytes to every GPU; ZeRO's stage 1 splits the K bytes across the N_d data-parallel GPUs, stage 2
  the gradients too, stage 3 the weights too. `model_state_memory` does the arithmetic.

Activations (which grow with the batch and the context) come on top and are not counted here.
"""

import numpy as np

from demos._checks import as_array as _as_array
from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _between

WEIGHT_BYTES = 2  # a 16-bit weight
GRAD_BYTES = 2  # a 16-bit gradient
OPTIMIZER_BYTES = 12  # K: float32 master copy (4), Adam's m (4) and v (4)
STAGES = (0, 1, 2, 3)
MAX_GPUS = 1_000_000


def model_state_memory(params: float = 7.5e9, data: int = 64, stage: int = 0, tensor: int = 1, pipeline: int = 1) -> dict:
    """Bytes of model state (weights, gradients, optimizer state) on each GPU.

    The model is split `tensor` × `pipeline` ways (each GPU holds that share of the parameters,
    ignoring the few that tensor parallelism copies, such as LayerNorm's), and each share is
    copied on `data` GPUs, whose ZeRO `stage` decides what they split among themselves.

    Args:
        params: Ψ, the model's parameter count.
        data: N_d, the data-parallel degree.
        stage: ZeRO stage: 0 (none: plain data parallelism), 1 (optimizer state split),
            2 (and gradients), 3 (and weights).
        tensor: Tensor-parallel degree.
        pipeline: Pipeline-parallel degree.

    Returns:
        Per GPU, in bytes: weights, gradients, optimizer, total; gpus (data × tensor × pipeline)
        and total_gb (total / 10^9).

    Examples:
        >>> round(model_state_memory(7.5e9, 64, stage=0)["total_gb"], 1)
        120.0
    """
    psi = _between("params", params, 1.0, 1e15)
    data = _as_int("data", data, 1, MAX_GPUS, grouping=",")
    stage = _as_int("stage", stage, 0, 3)
    tensor = _as_int("tensor", tensor, 1, MAX_GPUS, grouping=",")
    pipeline = _as_int("pipeline", pipeline, 1, MAX_GPUS, grouping=",")
    share = psi / (tensor * pipeline)  # parameters of this GPU's model-parallel piece
    weights = WEIGHT_BYTES * share / (data if stage >= 3 else 1)
    grads = GRAD_BYTES * share / (data if stage >= 2 else 1)
    optimizer = OPTIMIZER_BYTES * share / (data if stage >= 1 else 1)
    total = weights + grads + optimizer
    return {
        "weights": weights,
        "gradients": grads,
        "optimizer": optimizer,
        "total": total,
        "total_gb": total / 1e9,
        "gpus": data * tensor * pipeline,
    }


def _gelu(z):
    return 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3)))


def tensor_parallel_mlp(x: list, w_fc: list, b_fc: list, w_proj: list, b_proj: list, shards: int = 2) -> dict:
    """A GPT-2 MLP computed as `shards` GPUs compute it under tensor parallelism.

    GPU i holds columns i of `w_fc` (and of `b_fc`) and the matching rows of `w_proj`, computes
    GELU(x W_fc[:, cols] + b_fc[cols]) W_proj[cols, :], a partial output; the all-reduce adds the
    partial outputs, and the bias `b_proj` is added once.

    Args:
        x: Inputs (T, C).
        w_fc: (C, 4C); b_fc: (4C,); w_proj: (4C, C); b_proj: (C,).
        shards: The tensor-parallel degree (divides 4C).

    Returns:
        partials (each GPU's partial output, (T, C) each), output (their sum plus b_proj),
        and per_gpu_params (the weights each GPU holds).

    Examples:
        >>> c = np.eye(2).tolist(); out = tensor_parallel_mlp(c, np.ones((2, 4)).tolist(), [0] * 4, np.ones((4, 2)).tolist(), [0, 0], 2)
        >>> len(out["partials"])
        2
    """
    x = _as_array("x", x)
    w_fc, b_fc = _as_array("w_fc", w_fc), _as_array("b_fc", b_fc)
    w_proj, b_proj = _as_array("w_proj", w_proj), _as_array("b_proj", b_proj)
    if x.ndim != 2 or w_fc.shape[0] != x.shape[1] or w_proj.shape != w_fc.shape[::-1] or b_fc.shape != (w_fc.shape[1],) or b_proj.shape != (x.shape[1],):
        raise ValueError("Shapes must be x (T, C), w_fc (C, H), b_fc (H,), w_proj (H, C), b_proj (C,).")
    hidden = w_fc.shape[1]
    shards = _as_int("shards", shards, 1, hidden)
    if hidden % shards:
        raise ValueError(f"shards must divide the hidden width {hidden}, got {shards}.")
    cols = np.split(np.arange(hidden), shards)  # GPU i's hidden units
    partials = [_gelu(x @ w_fc[:, c] + b_fc[c]) @ w_proj[c, :] for c in cols]  # (T, C) each, no exchange
    output = np.sum(partials, axis=0) + b_proj  # the all-reduce, then the bias once
    return {
        "partials": [p.tolist() for p in partials],
        "output": output.tolist(),
        "per_gpu_params": int(w_fc.shape[0] * len(cols[0]) + len(cols[0]) + len(cols[0]) * w_proj.shape[1]),
    }


def data_parallel_grads(x: list, y: list, w: list, gpus: int = 2) -> dict:
    """The gradient of a mean squared error for a linear model, computed whole and as `gpus`
    GPUs compute it: each on its equal slice of the batch, then averaged (the all-reduce).

    Args:
        x: Inputs (B, C), B divisible by `gpus`.
        y: Targets (B, D).
        w: Weights (C, D); the prediction is x @ w, the loss mean((x @ w - y)^2).
        gpus: The data-parallel degree.

    Returns:
        whole (the full batch's gradient), per_gpu (each slice's), averaged (their mean).

    Examples:
        >>> out = data_parallel_grads([[1.0], [2.0]], [[0.0], [0.0]], [[1.0]], 2)
        >>> out["whole"] == out["averaged"]
        True
    """
    x, y, w = _as_array("x", x), _as_array("y", y), _as_array("w", w)
    if x.ndim != 2 or y.ndim != 2 or w.shape != (x.shape[1], y.shape[1]) or len(x) != len(y):
        raise ValueError("Shapes must be x (B, C), y (B, D), w (C, D).")
    gpus = _as_int("gpus", gpus, 1, len(x))
    if len(x) % gpus:
        raise ValueError(f"gpus must divide the batch of {len(x)}, got {gpus}.")

    def grad(xs, ys):  # d/dw mean((xs w - ys)^2)
        return 2.0 * xs.T @ (xs @ w - ys) / ys.size

    per_gpu = [grad(xs, ys) for xs, ys in zip(np.split(x, gpus), np.split(y, gpus))]
    return {"whole": grad(x, y).tolist(), "per_gpu": [g.tolist() for g in per_gpu], "averaged": np.mean(per_gpu, axis=0).tolist()}
