"""Generate the NumPy fixture used by ``tests/js/kernels.test.js``.

The pipeline figures recompute a GPT-2 block in the browser with the float32 kernels of
``site_src/widgets/pipeline/kernels.js``. This script computes the same things with NumPy
(and with ``demos.norms.layer_norm`` and ``demos.ffn.gelu`` where the lessons have them) on
small random float32 inputs, and writes them as one table of cases to
``fixtures/pipeline_kernels.json``::

    {"seed": ..., "cases": [{"name": ..., "kernel": "layerNorm", "args": {...}, "expected": ...}, ...]}

``kernel`` is the name of the JavaScript export; ``args`` are its arguments by name (every
list is a float32 tensor, nested by its shape, that the test flattens row-major; numbers are
sizes or ``eps``); ``expected`` is what it returns, nested by shape. Float32 values are
written as their shortest round-trip decimals; ``-inf`` (the masked scores) as ``null``.

Where the JavaScript stores a Float32Array, the reference is computed in float64 from the
float32 inputs and rounded to float32 once, as the kernels do; the values it keeps in
float64 (``rowStats``, ``maxAbsDiff``, the per-head tables of ``traceBlock``) stay float64.
``tests/js/test_kernel_fixture.py`` checks that the committed file is what this script
computes now.

Run from the repository root::

    .venv/bin/python tests/js/make_kernel_fixture.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from demos.ffn import gelu as demo_gelu
from demos.norms import layer_norm as demo_layer_norm

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
FIXTURE_PATH = HERE / "fixtures" / "pipeline_kernels.json"

SEED = 20261202


# --------------------------------------------------------------------------
# Reference kernels (float32 in, float64 arithmetic, float32 or float64 out)
# --------------------------------------------------------------------------


def f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def layer_norm(x, weight, bias, eps=1e-5) -> np.ndarray:
    """(T, C) -> (T, C) float32, through ``demos.norms.layer_norm``."""
    out = demo_layer_norm(x.astype(np.float64).tolist(), weight.astype(np.float64).tolist(), bias.astype(np.float64).tolist(), eps=eps)
    return f32(out)


def row_stats(x) -> list[dict]:
    """Per-row mean and population standard deviation, float64."""
    x = x.astype(np.float64)
    return [{"mean": float(r.mean()), "std": float(r.std())} for r in x]


def linear(x, w, b) -> np.ndarray:
    """x (T, in) @ W (in, out) + b (out,), float32."""
    return f32(x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64))


def gelu(x) -> np.ndarray:
    """GPT-2's GELU (tanh form), float32, through ``demos.ffn.gelu``."""
    return f32(demo_gelu(x.astype(np.float64).tolist(), approximate="tanh"))


def add(a, b) -> np.ndarray:
    return f32(a.astype(np.float64) + b.astype(np.float64))


def max_abs_diff(a, b) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))


def causal_softmax(scores) -> np.ndarray:
    """Softmax over the last axis of (..., T, T) scores with future positions masked."""
    T = scores.shape[-1]
    masked = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def trace_block(x, w, probs, H, eps) -> dict:
    """Every tensor of ``traceBlock``: one GPT-2 block on x (T, C), attention by ``probs`` (H, T, T)."""
    T, C = x.shape
    hd = C // H
    ln1 = layer_norm(x, w["ln_1.weight"], w["ln_1.bias"], eps)
    qkv = linear(ln1, w["attn.c_attn.weight"], w["attn.c_attn.bias"])  # (T, 3C)
    q, k, v = (qkv[:, i * C : (i + 1) * C] for i in range(3))  # (T, C) each
    heads = []
    merged = np.zeros((T, C), dtype=np.float64)
    for h in range(H):
        cols = slice(h * hd, (h + 1) * hd)
        scores = q[:, cols].astype(np.float64) @ k[:, cols].astype(np.float64).T  # (T, T)
        scaled = scores / math.sqrt(hd)
        masked = np.where(np.tril(np.ones((T, T), dtype=bool)), scaled, -np.inf)
        p = probs[h].astype(np.float64)  # (T, T)
        out = p @ v[:, cols].astype(np.float64)  # (T, hd)
        merged[:, cols] = out
        heads.append({"scores": scores, "scaled": scaled, "masked": masked, "softmax": causal_softmax(scaled), "probs": p, "out": out})
    merged = f32(merged)
    attn_out = linear(merged, w["attn.c_proj.weight"], w["attn.c_proj.bias"])
    mid = add(x, attn_out)
    ln2 = layer_norm(mid, w["ln_2.weight"], w["ln_2.bias"], eps)
    fc = linear(ln2, w["mlp.c_fc.weight"], w["mlp.c_fc.bias"])  # (T, 4C)
    act = gelu(fc)
    mlp_out = linear(act, w["mlp.c_proj.weight"], w["mlp.c_proj.bias"])
    nxt = add(mid, mlp_out)
    return {
        "T": T,
        "C": C,
        "H": H,
        "hd": hd,
        "x": x,
        "ln1": ln1,
        "qkv": qkv,
        "q": f32(q),
        "k": f32(k),
        "v": f32(v),
        "heads": heads,
        "merged": merged,
        "attnOut": attn_out,
        "mid": mid,
        "ln2": ln2,
        "fc": fc,
        "act": act,
        "mlpOut": mlp_out,
        "next": nxt,
    }


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


def normal(rng, *shape, scale=1.0, loc=0.0) -> np.ndarray:
    return f32(rng.normal(loc, scale, size=shape))


def block_weights(rng, C) -> dict[str, np.ndarray]:
    """A block's weights by role, as ``blockWeights`` returns them (linear weights (in, out))."""
    return {
        "ln_1.weight": normal(rng, C, scale=0.2, loc=1.0),
        "ln_1.bias": normal(rng, C, scale=0.1),
        "attn.c_attn.weight": normal(rng, C, 3 * C, scale=0.4),
        "attn.c_attn.bias": normal(rng, 3 * C, scale=0.1),
        "attn.c_proj.weight": normal(rng, C, C, scale=0.3),
        "attn.c_proj.bias": normal(rng, C, scale=0.1),
        "ln_2.weight": normal(rng, C, scale=0.2, loc=1.0),
        "ln_2.bias": normal(rng, C, scale=0.1),
        "mlp.c_fc.weight": normal(rng, C, 4 * C, scale=0.4),
        "mlp.c_fc.bias": normal(rng, 4 * C, scale=0.1),
        "mlp.c_proj.weight": normal(rng, 4 * C, C, scale=0.2),
        "mlp.c_proj.bias": normal(rng, C, scale=0.1),
    }


def block_case(rng, name, T, C, H, eps=1e-5) -> dict:
    """A traceBlock case whose probabilities are the causal softmax of the block's own scores
    (as the model's would be), rounded to float32."""
    x = normal(rng, T, C)
    w = block_weights(rng, C)
    hd = C // H
    qkv = linear(layer_norm(x, w["ln_1.weight"], w["ln_1.bias"], eps), w["attn.c_attn.weight"], w["attn.c_attn.bias"])
    q = qkv[:, :C].astype(np.float64).reshape(T, H, hd).transpose(1, 0, 2)  # (H, T, hd)
    k = qkv[:, C : 2 * C].astype(np.float64).reshape(T, H, hd).transpose(1, 0, 2)
    probs = f32(causal_softmax(q @ k.transpose(0, 2, 1) / math.sqrt(hd)))  # (H, T, T)
    return case(name, "traceBlock", {"x": x, "w": w, "probs": probs, "T": T, "C": C, "H": H, "eps": eps}, trace_block(x, w, probs, H, eps))


def case(name, kernel, args, expected) -> dict:
    return {"name": name, "kernel": kernel, "args": args, "expected": expected}


def build_cases() -> list[dict]:
    """The table of cases, in a fixed order from one seeded generator."""
    rng = np.random.default_rng(SEED)
    cases = []

    x = normal(rng, 4, 8, scale=2.0, loc=0.5)
    w, b = normal(rng, 8, scale=0.5, loc=1.0), normal(rng, 8, scale=0.5)
    cases.append(case("layerNorm random (4, 8)", "layerNorm", {"x": x, "T": 4, "C": 8, "weight": w, "bias": b, "eps": 1e-5}, layer_norm(x, w, b)))
    x = np.stack([np.full(6, 3.0), 1000.0 + normal(rng, 6, scale=0.01), normal(rng, 6, scale=1e-3)]).astype(np.float32)
    w, b = normal(rng, 6, loc=1.0), normal(rng, 6)
    cases.append(
        case(
            "layerNorm constant, offset and tiny rows, eps 1e-3",
            "layerNorm",
            {"x": x, "T": 3, "C": 6, "weight": w, "bias": b, "eps": 1e-3},
            layer_norm(x, w, b, eps=1e-3),
        )
    )
    x, w, b = normal(rng, 1, 1), normal(rng, 1), normal(rng, 1)
    cases.append(case("layerNorm one feature (bias only)", "layerNorm", {"x": x, "T": 1, "C": 1, "weight": w, "bias": b, "eps": 1e-5}, layer_norm(x, w, b)))

    x = normal(rng, 3, 16, scale=3.0, loc=-2.0)
    cases.append(case("rowStats random (3, 16)", "rowStats", {"x": x, "T": 3, "C": 16}, row_stats(x)))
    x = np.stack([np.full(5, -7.25), 500.0 + normal(rng, 5)]).astype(np.float32)
    cases.append(case("rowStats constant and offset rows", "rowStats", {"x": x, "T": 2, "C": 5}, row_stats(x)))

    x, W, b = normal(rng, 3, 8), normal(rng, 8, 5, scale=0.5), normal(rng, 5, scale=0.1)
    cases.append(case("linear (3, 8) @ (8, 5)", "linear", {"x": x, "T": 3, "W": W, "b": b}, linear(x, W, b)))
    x, W, b = normal(rng, 1, 16, scale=4.0), normal(rng, 16, 3, scale=0.25), normal(rng, 3)
    cases.append(case("linear one row (1, 16) @ (16, 3)", "linear", {"x": x, "T": 1, "W": W, "b": b}, linear(x, W, b)))
    x, W, b = normal(rng, 4, 1), normal(rng, 1, 2), f32(np.zeros(2))
    cases.append(case("linear one input feature, zero bias", "linear", {"x": x, "T": 4, "W": W, "b": b}, linear(x, W, b)))

    x = f32([-10, -5, -3, -1, -0.5, -1e-4, 0, 1e-4, 0.5, 1, 3, 5, 10])
    cases.append(case("gelu fixed points", "gelu", {"x": x}, gelu(x)))
    x = normal(rng, 64, scale=2.0)
    cases.append(case("gelu random (64,)", "gelu", {"x": x}, gelu(x)))

    a, b = normal(rng, 3, 7), normal(rng, 3, 7, scale=100.0)
    cases.append(case("add (3, 7)", "add", {"a": a, "b": b}, add(a, b)))

    a = normal(rng, 20)
    b = a + normal(rng, 20, scale=1e-3)
    cases.append(case("maxAbsDiff close arrays", "maxAbsDiff", {"a": a, "b": b}, max_abs_diff(a, b)))
    cases.append(case("maxAbsDiff identical arrays", "maxAbsDiff", {"a": a, "b": a}, 0.0))

    x = normal(rng, 3, 6)
    cases.append(case("slice2d all columns", "slice2d", {"x": x, "T": 3, "C": 6}, x))
    cases.append(case("slice2d columns [2, 5)", "slice2d", {"x": x, "T": 3, "C": 6, "c0": 2, "c1": 5}, x[:, 2:5]))

    cases.append(block_case(rng, "traceBlock T=5, C=8, H=2", T=5, C=8, H=2))
    cases.append(block_case(rng, "traceBlock one token, T=1, C=4, H=4, eps 1e-2", T=1, C=4, H=4, eps=1e-2))
    return cases


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def plain(value):
    """JSON-ready: arrays as nested lists (float32 ones as their shortest round-trip decimals),
    -inf as None."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return [plain(v) for v in value] if value.ndim > 1 else [float(str(v)) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, float) and math.isinf(value):
        assert value < 0, "only masked scores are infinite"
        return None
    return value


def fixture() -> dict:
    """The whole fixture, as written to FIXTURE_PATH."""
    return {"seed": SEED, "cases": [plain(c) for c in build_cases()]}


def dumps(data: dict) -> str:
    """One case per line (readable diffs)."""
    cases = ",\n".join(json.dumps(c) for c in data["cases"])
    return f'{{"seed": {data["seed"]}, "cases": [\n{cases}\n]}}\n'


def main() -> None:
    data = fixture()
    FIXTURE_PATH.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE_PATH.write_text(dumps(data), encoding="utf-8")
    print(f"{len(data['cases'])} kernel cases -> {FIXTURE_PATH.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
