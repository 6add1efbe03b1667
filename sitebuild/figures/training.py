"""Figures of training: four optimizers' paths on one bowl (``demos.optim.compare``), where gradients fall in float16's range, with and without loss
scaling (``demos.mixed_precision.flush``), and each GPU's model state under ZeRO's stages
(``demos.sharding.model_state_memory``)."""

from __future__ import annotations

import json

import numpy as np

from demos.mixed_precision import flush
from demos.optim import compare
from demos.sharding import model_state_memory
from sitebuild.figures.svg import Svg

LOSS_SCALE = 2.0**16
ZERO_PARAMS, ZERO_GPUS = 7.5e9, 64  # ZeRO's Figure 1


def gradient_range():
    """Two histograms of log2 |gradient|: as computed, and times the loss scale, with float16's limits marked."""
    rows = [flush(1.0, "float16"), flush(LOSS_SCALE, "float16")]
    bins = rows[0]["bins"]
    left, width, height = 40, 300, 70
    total = 30 + 2 * (height + 46)
    s = Svg(360, total)
    x_of = lambda v: left + width * (v - bins[0]) / (bins[-1] - bins[0])  # noqa: E731
    peak = max(max(r["counts"]) for r in rows)
    for i, r in enumerate(rows):
        top = 22 + i * (height + 46)
        title = "gradients as computed" if i == 0 else "× 2¹⁶ (loss scaling)"
        s.text(left, top - 6, title, cls="label small bold", anchor="start")
        lost = r["zero"]
        for j, n in enumerate(r["counts"]):
            h = height * n / peak
            below = bins[j + 1] <= r["log2_smallest_subnormal"]
            s.box(x_of(bins[j]) + 1, top + height - h, x_of(bins[j + 1]) - x_of(bins[j]) - 2, h, cls="box accent" if below else "box", rx=0)
        for value, label in ((r["log2_smallest_subnormal"], "2⁻²⁴"), (r["log2_max"], "65504")):
            s.line(x_of(value), top - 2, x_of(value), top + height + 4, cls="line dash")
            s.text(x_of(value), top + height + 16, label, cls="label small")
        numbers = {"scale": r["scale"], "zero": f"{lost:.4f}", "overflow": f"{r['overflow']:.4f}"}
        s.text(left + width, top - 6, f"{100 * lost:.1f}% become 0", cls="label small bold", anchor="end", data=numbers)
    s.text(left + width / 2, total - 8, "log₂ |gradient| (shaded: below float16's smallest number)", cls="label small dim")
    alt = (
        f"Two histograms of gradient magnitudes on a log scale with float16's limits marked. As computed, {100 * rows[0]['zero']:.1f}% of "
        f"the gradients fall below 2 to the minus 24 and become zero; multiplied by 2 to the 16 before rounding, "
        f"{100 * rows[1]['zero']:.1f}% do, and none passes 65504."
    )
    caption = (
        "A made-up sample of gradients spread over many powers of two, rounded to float16 (demos.mixed_precision.flush). "
        "Loss scaling moves the whole histogram to the right, into the range."
    )
    return s.render("gradient-range", alt), alt, caption


def zero_memory():
    """One bar per ZeRO stage: bytes of weights, gradients and optimizer state on each GPU."""
    stages = [model_state_memory(ZERO_PARAMS, ZERO_GPUS, stage) for stage in range(4)]
    names = ["data parallel", "stage 1: optimizer", "stage 2: + gradients", "stage 3: + weights"]
    parts = [("weights", "box primary"), ("gradients", "box muted"), ("optimizer", "box")]
    left, width, bar = 130, 160, 26
    s = Svg(360, 40 + 40 * len(stages) + 40)
    scale = width / stages[0]["total"]
    for i, m in enumerate(stages):
        y = 24 + i * 40
        s.text(left - 6, y + bar / 2 + 4, names[i], cls="label small", anchor="end")
        x = left
        for key, cls in parts:
            w = m[key] * scale
            s.box(x, y, max(w, 0.5), bar, cls=cls, rx=0)
            x += w
        s.text(x + 4, y + bar / 2 + 4, f"{m['total_gb']:.3g} GB", cls="label small bold", anchor="start", data={"stage": i, "gb": f"{m['total_gb']:.4f}"})
    y = 40 + 40 * len(stages)
    for j, (key, cls) in enumerate(parts):
        s.box(left + j * 70, y - 6, 10, 10, cls=cls, rx=0)
        s.text(left + j * 70 + 14, y + 3, key, cls="label small", anchor="start")
    s.text(180, y + 26, f"{ZERO_PARAMS / 1e9:g} billion parameters, {ZERO_GPUS} GPUs, 16 bytes per parameter in all", cls="label small dim")
    alt = (
        f"Four bars, one per ZeRO stage, for {ZERO_PARAMS / 1e9:g} billion parameters on {ZERO_GPUS} GPUs: "
        + ", ".join(f"{n} {m['total_gb']:.3g} GB" for n, m in zip(names, stages))
        + " per GPU."
    )
    caption = (
        "Model state per GPU under ZeRO's stages (demos.sharding.model_state_memory; the numbers of ZeRO's Figure 1). "
        "Each stage splits one more part across the GPUs instead of copying it."
    )
    return s.render("zero-memory", alt), alt, caption


OPTIMIZER_STEPS, OPTIMIZER_LR = 30, 0.19  # a rate just under SGD's limit on this bowl, 2 / 10
OPTIMIZER_NAMES = {"sgd": "SGD", "momentum": "momentum", "adam": "Adam", "adamw": "AdamW"}


def optimizer_paths():
    """Four panels, one per optimizer: its path on the stretched bowl of ``demos.optim.compare``."""
    runs = compare(steps=OPTIMIZER_STEPS, lr=OPTIMIZER_LR)
    panel_w, panel_h, span_x, span_y = 170, 100, 4.6, 2.6
    s = Svg(360, 2 * (panel_h + 30) + 10)
    for i, (key, label) in enumerate(OPTIMIZER_NAMES.items()):
        ox, oy = 6 + (i % 2) * (panel_w + 12), 20 + (i // 2) * (panel_h + 30)
        cx, cy = ox + panel_w / 2, oy + panel_h / 2

        def at(x, y, cx=cx, cy=cy):
            return cx + x * (panel_w / 2) / span_x, cy - y * (panel_h / 2) / span_y

        for level in (0.5, 2, 4.5, 8):  # (x² + 10 y²) / 2 = level: an ellipse
            rx, ry = np.sqrt(2 * level), np.sqrt(2 * level / 10)
            (x0, _), (_, y1) = at(-rx, 0), at(0, ry)
            s.path(
                f"M {x0:.1f} {cy:.1f} a {rx * panel_w / 2 / span_x:.1f} {cy - y1:.1f} 0 1 0 {2 * (cx - x0):.1f} 0 "
                f"a {rx * panel_w / 2 / span_x:.1f} {cy - y1:.1f} 0 1 0 {-2 * (cx - x0):.1f} 0",
                cls="line thin",
            )
        points = [at(x, y) for x, y in runs[key]["path"]]
        s.polyline(points, cls="curve")
        s.circle(*points[0], 2.5, cls="box")
        final = runs[key]["loss"][-1]
        s.text(ox, oy - 6, label, cls="label small bold", anchor="start")
        s.text(
            ox + panel_w, oy - 6, f"loss {final:.2g} after {OPTIMIZER_STEPS}", cls="label small", anchor="end", data={"optimizer": key, "loss": f"{final:.6g}"}
        )
    alt = (
        f"Four panels of the same elongated bowl, ten times steeper up and down than sideways, each with one optimizer's path over "
        f"{OPTIMIZER_STEPS} steps from the same start. "
        + "; ".join(f"{label} ends at loss {runs[key]['loss'][-1]:.2g}" for key, label in OPTIMIZER_NAMES.items())
        + "."
    )
    caption = (
        f"SGD, momentum, Adam and AdamW with the same learning rate ({OPTIMIZER_LR}) on the bowl (x² + 10y²)/2 "
        f"(demos.optim.compare, {OPTIMIZER_STEPS} steps from the dot). The rate is just under the largest the steep direction allows "
        "(2/10), so SGD zig-zags across the valley; momentum swings past the minimum and back; Adam and AdamW step about the "
        "learning rate in each coordinate whatever the gradient's size, so they head straight for the minimum and then hover near it."
    )
    return s.render("optimizer-paths", alt), alt, caption


BOOK_CURVE_LINES = {
    "text_loss": ("prose, training (mean of 50 steps)", "curve dim"),
    "held_out_loss": ("prose, held-out pages", "curve"),
    "second_copy_loss": ("second copy of random tokens", "curve warn"),
}


def book_model_curve():
    """The book's own model's training curves, read from its committed log (``model-export train``)."""
    from model_export.train import LOG_FILE
    from model_export.weights import BOOK_MODEL_DIR

    log = [json.loads(line) for line in (BOOK_MODEL_DIR / LOG_FILE).read_text().splitlines()]
    evals = [e for e in log if "held_out_loss" in e]
    vocab = json.loads((BOOK_MODEL_DIR / "config.json").read_text())["vocab_size"]
    uniform = float(np.log(vocab))
    steps, top = log[-1]["step"], 12.0
    left, width, height, first = 36, 300, 150, 20
    s = Svg(360, first + height + 90)
    x_of = lambda step: left + width * step / steps  # noqa: E731
    y_of = lambda loss: first + height * (1 - min(loss, top) / top)  # noqa: E731
    for loss in range(0, 13, 3):
        s.line(left, y_of(loss), left + width, y_of(loss), cls="line thin")
        s.text(left - 4, y_of(loss) + 3, str(loss), cls="label small", anchor="end")
    s.line(left, y_of(uniform), left + width, y_of(uniform), cls="line dash")
    s.text(left + width, y_of(uniform) + 11, f"ln {vocab:,}: a uniform guess", cls="label small dim", anchor="end")
    window = 50
    curves = {
        "text_loss": [(e["step"], np.mean([x["text_loss"] for x in log[max(0, e["step"] - window) : e["step"]]])) for e in evals],
        "held_out_loss": [(e["step"], e["held_out_loss"]) for e in evals],
        "second_copy_loss": [(e["step"], e["second_copy_loss"]) for e in evals],
    }
    for k, (key, (label, cls)) in enumerate(BOOK_CURVE_LINES.items()):
        points = [(x_of(step), y_of(loss)) for step, loss in curves[key]]
        s.polyline(points, cls=cls, data={"curve": key, "last": f"{curves[key][-1][1]:.4f}"})
        s.legend_entry(left, first + height + 34 + 14 * k, label, cls)
    for step in (0, steps // 2, steps):
        s.text(x_of(step), first + height + 14, f"{step:,}", cls="label small")
    s.text(left + width / 2, first + height + 26, "optimiser step", cls="label small dim")
    s.text(left - 30, first - 8, "loss (nats)", cls="label small dim", anchor="start")
    last = evals[-1]
    alt = (
        f"Three loss curves over {steps:,} training steps of the book's own model. The prose's held-out loss ends at "
        f"{last['held_out_loss']:.2f} nats, the training prose's near it, and the loss on the second copy of random tokens at "
        f"{last['second_copy_loss']:.2f} nats, against {uniform:.1f} for a uniform guess."
    )
    caption = (
        f"The book's model learning (model_export/book_model/{LOG_FILE}): the training loss on windows of the book's prose, the loss on "
        "the held-out pages, and the loss predicting the second copy of random tokens written twice, measured every "
        f"{evals[1]['step'] - evals[0]['step']} steps."
    )
    return s.render("book-model-curve", alt), alt, caption
