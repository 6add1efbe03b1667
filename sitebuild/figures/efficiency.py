"""Figures of efficiency: the KV cache across decode steps (``demos.kv_cache``) and MoE routing (``demos.moe``)."""

from __future__ import annotations

import numpy as np

from demos.kv_cache import kv_cache_bytes
from demos.moe import route
from demos.quantization import outlier_product
from sitebuild.figures.block import small_shapes
from sitebuild.figures.svg import Svg

KV_PROMPT = ["The", "cat", "sat"]
KV_NEW = ["on", "the", "mat"]
KV_DTYPE = "float16"
MOE_TOKENS, MOE_EXPERTS, MOE_TOP_K, MOE_WIDTH, MOE_SEED = 8, 4, 2, 8, 0


def kv_sizes() -> list[dict]:
    """Per decode step: tokens in GPT-2 small's cache and its size, from ``kv_cache_bytes``."""
    d = small_shapes()
    rows = []
    for step in range(len(KV_NEW) + 1):
        n = len(KV_PROMPT) + step
        rows.append({"step": step, "tokens": n, "bytes": kv_cache_bytes(d["n_layer"], d["n_head"], d["head_dim"], n, KV_DTYPE)["total_bytes"]})
    return rows


def kv_cache():
    """The cache growing by one key and one value per step while each step computes one new row."""
    rows = kv_sizes()
    words = KV_PROMPT + KV_NEW
    s = Svg(360, 40 + 62 * len(rows))
    cell = 38
    s.text(4, 12, "cached keys and values (one column per token)", cls="label small dim", anchor="start")
    for i, row in enumerate(rows):
        y = 26 + i * 62
        title = "prefill" if i == 0 else f"decode step {i}"
        s.text(4, y + 6, title, cls="label small bold", anchor="start")
        for t in range(row["tokens"]):
            new = (i == 0) or t == row["tokens"] - 1
            s.box(6 + t * (cell + 2), y + 14, cell, 30, words[t], cls="box accent" if new else "box", rx=2)
        size = {"tokens": row["tokens"], "bytes": row["bytes"]}
        s.text(354, y + 6, f"{row['tokens']} tokens · {row['bytes'] / 1024:.0f} KiB", cls="label small", anchor="end", data=size)
    per_token = rows[1]["bytes"] - rows[0]["bytes"]
    s.text(180, 30 + 62 * len(rows), f"+{per_token:,} bytes per token (GPT-2 small, 16-bit)", cls="label small", data={"bytes-per-token": per_token})
    alt = (
        f"Four rows, one per step. The prefill computes keys and values for the prompt {' '.join(KV_PROMPT)}; each decode step "
        f"adds one column, for the new token, and reads the others from the cache. GPT-2 small's cache grows from "
        f"{rows[0]['bytes'] / 1024:.0f} KiB to {rows[-1]['bytes'] / 1024:.0f} KiB, {per_token:,} bytes per token."
    )
    caption = (
        "The KV cache across decode steps (sizes from demos.kv_cache.kv_cache_bytes, GPT-2 small in 16-bit). "
        "Shaded: what the step computes; plain: what it only reads."
    )
    return s.render("kv-cache", alt, {"per-token": per_token}), alt, caption


def moe_inputs() -> tuple[np.ndarray, np.ndarray]:
    """The figure's token vectors and router weights: a seeded random draw."""
    rng = np.random.default_rng(MOE_SEED)
    return rng.standard_normal((MOE_TOKENS, MOE_WIDTH)), rng.standard_normal((MOE_WIDTH, MOE_EXPERTS))


def moe_routing():
    """Tokens routed to their top-2 experts, with each expert's load and the balancing loss."""
    x, w = moe_inputs()
    r = route(x.tolist(), w.tolist(), MOE_TOP_K)
    s = Svg(360, 40 + 30 * MOE_TOKENS + 40)
    s.text(50, 12, "tokens", cls="label bold")
    s.text(270, 12, f"experts (top-{MOE_TOP_K})", cls="label bold")
    ey = [40 + (30 * MOE_TOKENS - 40) * e / max(1, MOE_EXPERTS - 1) for e in range(MOE_EXPERTS)]
    for t, (experts, gates) in enumerate(zip(r["experts"], r["gates"])):
        y = 30 + t * 30
        for rank, e in enumerate(experts):
            s.line(80, y + 10, 230, ey[e] + 14, cls="line" if rank == 0 else "line thin dash")
        s.box(20, y, 60, 20, f"token {t + 1}", cls="box", data={"experts": ",".join(map(str, experts)), "gates": ",".join(f"{g:.3f}" for g in gates)})
    for e in range(MOE_EXPERTS):
        n = r["tokens_per_expert"][e]
        s.box(230, ey[e], 80, 28, f"expert {e + 1}", cls="box primary", data={"expert": e, "tokens": n})
        s.text(316, ey[e] + 14, f"{n}", cls="label bold", anchor="start", data={"load": n})
    y = 40 + 30 * MOE_TOKENS
    s.text(180, y, f"loads {', '.join(map(str, r['tokens_per_expert']))} of {MOE_TOKENS * MOE_TOP_K} slots", cls="label small")
    s.text(180, y + 18, f"balancing loss N·Σ fᵢPᵢ = {r['aux_loss']:.3f} (1 when even)", cls="label small bold", data={"aux-loss": f"{r['aux_loss']:.3f}"})
    alt = (
        f"{MOE_TOKENS} tokens on the left, {MOE_EXPERTS} experts on the right. Each token sends a solid line to its first choice and a "
        f"dashed line to its second. The experts receive {', '.join(map(str, r['tokens_per_expert']))} of the "
        f"{MOE_TOKENS * MOE_TOP_K} routing slots; the load-balancing loss is {r['aux_loss']:.3f}."
    )
    caption = (
        f"Top-{MOE_TOP_K} routing by demos.moe.route (a random router, seed {MOE_SEED}). An uneven load raises the auxiliary loss above 1, "
        "which training pushes back down."
    )
    return s.render("moe-routing", alt), alt, caption


QUANT_OUTLIERS = (1, 2, 5, 10, 20, 50, 100, 200)  # how many times larger the outlier dimension is
QUANT_LINES = {
    "per_tensor": ("one scale per tensor", "curve warn"),
    "vector_wise": ("vector-wise", "curve dim"),
    "llm_int8": ("LLM.int8()", "curve"),
    "smoothquant": ("SmoothQuant", "curve dash"),
}


def quantization_outliers():
    """The int8 product's relative error against the size of one outlier dimension, per method."""
    runs = [outlier_product(outlier=o) for o in QUANT_OUTLIERS]
    left, top, width, height = 44, 16, 300, 150
    s = Svg(360, top + height + 70)
    peak = max(r["errors"][m] for r in runs for m in QUANT_LINES)
    x_of = lambda i: left + width * i / (len(QUANT_OUTLIERS) - 1)  # noqa: E731  (log-spaced ticks, evenly drawn)
    y_of = lambda e: top + height * (1 - e / peak)  # noqa: E731
    for frac in (0, 0.5, 1):
        s.line(left, y_of(frac * peak), left + width, y_of(frac * peak), cls="line thin")
        s.text(left - 4, y_of(frac * peak) + 3, f"{100 * frac * peak:.0f}%", cls="label small", anchor="end")
    for i, o in enumerate(QUANT_OUTLIERS):
        s.text(x_of(i), top + height + 14, f"{o}×", cls="label small")
    for k, (method, (label, cls)) in enumerate(QUANT_LINES.items()):
        points = [(x_of(i), y_of(r["errors"][method])) for i, r in enumerate(runs)]
        s.polyline(points, cls=cls)
        for (x, y), o, r in zip(points, QUANT_OUTLIERS, runs):
            s.circle(x, y, 2, cls="box", data={"method": method, "outlier": o, "error": f"{r['errors'][method]:.5f}"})
        s.legend_entry(left + (k % 2) * 160, top + height + 32 + 14 * (k // 2), label, cls)
    s.text(left + width / 2, top + height + 66, "size of the outlier dimension (times the others)", cls="label small dim")
    last = runs[QUANT_OUTLIERS.index(50)]["errors"]
    alt = (
        "Relative error of a 64 by 256 times 256 by 256 int8 matrix product as one input dimension grows from 1 to 200 times the others. "
        f"At 50 times, one scale per tensor is off by {100 * last['per_tensor']:.1f}%, vector-wise by {100 * last['vector_wise']:.1f}%, "
        f"SmoothQuant by {100 * last['smoothquant']:.1f}% and LLM.int8() by {100 * last['llm_int8']:.2f}%."
    )
    caption = "One planted outlier dimension and four ways to run the product in int8 (demos.quantization.outlier_product, seed 0)."
    return s.render("quantization-outliers", alt), alt, caption
