"""The compute-optimal frontier: Chinchilla's tokens per parameter against real models (``demos.size``)."""

from __future__ import annotations

import math

from demos.size import chinchilla_tokens, presets, training_flops
from sitebuild.figures.svg import Svg

N_RANGE, D_RANGE = (1e8, 1e12), (1e9, 1e13)
BUDGETS = (1e20, 1e22, 1e24)
MODELS = ("gpt3-175b", "gpt3-13b", "llama-7b", "llama-65b")


def _sup(e: int) -> str:
    """An exponent in superscript digits: 12 -> '¹²'."""
    return str(e).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def frontier_points() -> dict:
    """The rule ``D = chinchilla_tokens(N)``, the marked models' ``(N, D, C)`` and the budgets' lines."""
    by_id = {p["id"]: p for p in presets()}
    models = [{"id": m, "name": by_id[m]["name"], "n": by_id[m]["published"], "d": by_id[m]["train_tokens"]} for m in MODELS]
    for m in models:
        m["c"] = training_flops(m["n"], m["d"])
    ns = [10 ** (8 + i / 4) for i in range(17)]
    return {"rule": [(n, chinchilla_tokens(int(n))) for n in ns], "models": models}


def compute_optimal():
    """Log-log axes of parameters N and tokens D: the 20-tokens line, equal-compute lines and models."""
    f = frontier_points()
    s = Svg(360, 300)
    x0, y0, w, h = 50, 20, 290, 230
    lx = [math.log10(v) for v in N_RANGE]
    ly = [math.log10(v) for v in D_RANGE]

    def px(n):
        return x0 + w * (math.log10(n) - lx[0]) / (lx[1] - lx[0])

    def py(d):
        return y0 + h - h * (math.log10(d) - ly[0]) / (ly[1] - ly[0])

    s.add(f'<rect class="box" x="{x0}" y="{y0}" width="{w}" height="{h}"/>')
    for e in range(int(lx[0]), int(lx[1]) + 1):
        s.text(px(10**e), y0 + h + 12, f"10{_sup(e)}", cls="label small")
    for e in range(int(ly[0]), int(ly[1]) + 1):
        s.text(x0 - 4, py(10**e), f"10{_sup(e)}", cls="label small", anchor="end")
    s.text(x0 + w / 2, y0 + h + 28, "parameters N", cls="label small bold")
    s.text(4, 10, "training tokens D", cls="label small bold", anchor="start")
    for c in BUDGETS:
        pts = []
        for i in range(41):
            n = 10 ** (lx[0] + (lx[1] - lx[0]) * i / 40)
            d = c / training_flops(int(n), 1)
            if D_RANGE[0] <= d <= D_RANGE[1]:
                pts.append((px(n), py(d)))
        s.polyline(pts, cls="line dash", data={"budget": f"{c:.0e}"})
        s.text(pts[0][0] + 4, pts[0][1] + 8, f"C = 10{_sup(round(math.log10(c)))}", cls="label small dim", anchor="start")
    s.polyline([(px(n), py(d)) for n, d in f["rule"] if d <= D_RANGE[1]], cls="curve", data={"tokens-per-param": f"{f['rule'][0][1] / f['rule'][0][0]:g}"})
    s.text(px(1.5e9), py(chinchilla_tokens(int(1.5e9))) - 12, "D = 20 N", cls="label small bold", anchor="end")
    for m in f["models"]:
        x, y = px(m["n"]), py(m["d"])
        s.circle(x, y, 4, cls="box accent", data={"model": m["id"], "n": m["n"], "d": m["d"], "c": f"{m['c']:.3e}"})
        below = m["id"].startswith("gpt3")
        s.text(x + (-6 if below else 6), y + 12, m["name"], cls="label small", anchor="end" if below else "start")
    alt = (
        "A log-log plot of training tokens against parameters. A solid line marks Chinchilla's compute-optimal rule of about 20 tokens "
        "per parameter; dashed lines join models of equal training compute 6ND. "
        + "; ".join(f"{m['name']} ({m['n'] / 1e9:g}B parameters, {m['d'] / 1e9:g}B tokens)" for m in f["models"])
        + " are marked; GPT-3 lies far below the line, the LLaMA models on or above it."
    )
    caption = (
        "The compute-optimal line (demos.size.chinchilla_tokens) and equal-compute lines C = 6ND (demos.size.training_flops). "
        "Along a dashed line the budget is fixed; Chinchilla's finding is where on it the loss is lowest."
    )
    return s.render("compute-optimal", alt), alt, caption
