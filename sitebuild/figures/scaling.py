"""Scaling figures from ``demos.size``: Kaplan's loss against parameters, and the compute-optimal frontier."""

from __future__ import annotations

import math

from demos.size import KAPLAN_ALPHA_N, KAPLAN_N_C, chinchilla_tokens, kaplan_loss, presets, training_flops
from sitebuild.figures.svg import Svg

N_RANGE, D_RANGE = (1e8, 1e12), (1e9, 1e13)
BUDGETS = (1e20, 1e22, 1e24)
MODELS = ("gpt3-175b", "gpt3-13b", "llama-7b", "llama-65b")
LAW_N_RANGE, LAW_L_RANGE = (10**5.6, 10**12.5), (1.3, 4.6)  # axes a little wider than the marked decades
LAW_DECADES = tuple(10**e for e in range(6, 13))


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


def log_axis(limits, start, length):
    """Where a value goes on a logarithmic axis from ``start`` that spans ``limits`` in ``length`` (negative: upwards)."""
    lo, hi = (math.log10(v) for v in limits)
    return lambda value: start + length * (math.log10(value) - lo) / (hi - lo)


def compute_optimal():
    """Log-log axes of parameters N and tokens D: the 20-tokens line, equal-compute lines and models."""
    f = frontier_points()
    s = Svg(360, 300)
    x0, y0, w, h = 50, 20, 290, 230
    lx = [math.log10(v) for v in N_RANGE]
    ly = [math.log10(v) for v in D_RANGE]

    px, py = log_axis(N_RANGE, x0, w), log_axis(D_RANGE, y0 + h, -h)

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


def scaling_law():
    """Kaplan et al.'s L(N) = (N_c / N)^α_N on log-log axes, one marked point per decade of N."""
    s = Svg(360, 280)
    x0, y0, w, h = 44, 24, 296, 206
    lx = [math.log10(v) for v in LAW_N_RANGE]

    px, py = log_axis(LAW_N_RANGE, x0, w), log_axis(LAW_L_RANGE, y0 + h, -h)

    s.add(f'<rect class="box" x="{x0}" y="{y0}" width="{w}" height="{h}"/>')
    for e in range(math.ceil(lx[0]), math.floor(lx[1]) + 1):
        s.text(px(10**e), y0 + h + 12, f"10{_sup(e)}", cls="label small")
    for v in (1.5, 2, 3, 4):
        s.line(x0, py(v), x0 + 4, py(v), cls="line thin")
        s.text(x0 - 4, py(v), f"{v:g}", cls="label small", anchor="end")
    s.text(x0 + w / 2, y0 + h + 28, "non-embedding parameters N", cls="label small bold")
    s.text(4, 10, "test loss L (nats per token)", cls="label small bold", anchor="start")
    ns = [10 ** (lx[0] + (lx[1] - lx[0]) * i / 48) for i in range(49)]
    s.polyline([(px(n), py(kaplan_loss(round(n)))) for n in ns], cls="curve")
    for n in LAW_DECADES:
        loss = kaplan_loss(n)
        s.circle(px(n), py(loss), 3.5, cls="box accent", data={"n": n, "loss": f"{loss:.4f}"})
        s.text(px(n) + 4, py(loss) - 10, f"{loss:.2f}", cls="label small", anchor="start")
    s.text(x0 + w - 6, y0 + 14, f"L = (N_c / N)^{KAPLAN_ALPHA_N:g}", cls="label small bold", anchor="end")
    s.text(
        x0 + w - 6,
        y0 + 30,
        f"N_c = {KAPLAN_N_C / 10 ** math.floor(math.log10(KAPLAN_N_C)):g}·10{_sup(math.floor(math.log10(KAPLAN_N_C)))}",
        cls="label small",
        anchor="end",
    )
    s.text(x0 + w - 6, y0 + 46, f"×2 N → ×{2**-KAPLAN_ALPHA_N:.3f} L", cls="label small", anchor="end", data={"doubling": f"{2**-KAPLAN_ALPHA_N:.4f}"})
    first, last = kaplan_loss(LAW_DECADES[0]), kaplan_loss(LAW_DECADES[-1])
    alt = (
        f"A log-log plot of test loss against non-embedding parameters from 10^6 to 10^12: a straight falling line, the power law "
        f"L = (N_c / N) to the power {KAPLAN_ALPHA_N:g}, with one point per factor of ten, from a loss of {first:.2f} nats at a million "
        f"parameters to {last:.2f} at a trillion. Every doubling of N multiplies the loss by about {2**-KAPLAN_ALPHA_N:.2f}."
    )
    caption = (
        f"Kaplan et al.'s 2020 fit of loss against model size (demos.size.kaplan_loss, α_N = {KAPLAN_ALPHA_N:g}, "
        f"N_c = {KAPLAN_N_C / 1e13:g} × 10¹³ non-embedding parameters): on log axes a power law is a straight line."
    )
    return s.render("scaling-law", alt, {"alpha-n": f"{KAPLAN_ALPHA_N:g}", "n-c": f"{KAPLAN_N_C:.3e}"}), alt, caption
