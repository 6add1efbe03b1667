"""Figures of decoding: beam search's tree (``demos.decoding``) and top-k against top-p (``demos.sampling``)."""

from __future__ import annotations

from demos.decoding import beam_search
from demos.sampling import next_token_distribution, softmax
from demos.speculative import expected_tokens
from sitebuild.figures.svg import Svg

BEAM_WIDTH = 2
# The two steps of the top-k and top-p pages (their widgets show the same logits).
STEPS = {"confident": [6, 2, 1.5, 1, 0.5, 0, -0.5, -1], "uncertain": [1.3, 1.2, 1.1, 1, 0.9, 0.8, 0.7, 0.6]}
TOP_K, TOP_P = 3, 0.9
TEMPERATURE_LOGITS, TEMPERATURES = [2, 1, 0], (0.5, 1, 2)  # the temperature page's table


def beam_tree():
    """Every candidate beam search scores on the toy bigram model, step by step, kept or cut."""
    result = beam_search(BEAM_WIDTH)
    steps = result["steps"]
    row_h, s = 56, Svg(360, 30 + 56 * len(steps) + 24)
    centres: dict[tuple, tuple[float, float]] = {}
    for i, step in enumerate(steps):
        y = 24 + i * row_h
        s.text(4, y + 14, f"step {i + 1}", cls="label small dim", anchor="start")
        w = min(62, 300 / len(step))
        for j, cand in enumerate(step):
            x = 52 + j * w
            words = tuple(cand["tokens"])
            parent = tuple(cand["parent"])
            if parent in centres and cand["new"]:
                px, py = centres[parent]
                s.line(px, py, x + (w - 4) / 2, y, cls="line thin" if not cand["kept"] else "line")
            cls = "box primary" if cand["kept"] else "box muted"
            label = words[-1] if cand["new"] else "(done)"
            data = {"tokens": " ".join(words), "logprob": f"{cand['logprob']:.3f}", "kept": str(cand["kept"]).lower()}
            s.box(x, y, w - 4, 30, label, sub=f"{cand['logprob']:.2f}", cls=cls, data=data)
            if cand["kept"]:
                centres[words] = (x + (w - 4) / 2, y + 30)
    best = result["best"]
    s.text(
        180,
        30 + row_h * len(steps) + 8,
        f"best: “{' '.join(best['tokens'])}”, p = {best['prob']:.3f}",
        cls="label bold",
        data={"best": " ".join(best["tokens"]), "prob": f"{best['prob']:.3f}"},
    )
    alt = (
        f"Beam search with {BEAM_WIDTH} beams on the book's toy bigram model, one row per step. Each row shows the candidates "
        f"scored at that step with their log-probabilities; the {BEAM_WIDTH} best are kept and extended, the rest are cut. "
        f"The search ends with “{' '.join(best['tokens'])}”, probability {best['prob']:.3f}."
    )
    caption = (
        f"Beam search, width {BEAM_WIDTH}, on demos.decoding's toy model. "
        "Each box is a candidate's last word and its log-probability; dark boxes survive the cut, a finished beam is carried along unchanged (“done”)."
    )
    return s.render("beam-tree", alt), alt, caption


def filter_table() -> dict:
    """For each step and filter, ``demos.sampling``'s kept tokens and final probabilities."""
    return {
        (step, kind): next_token_distribution(logits, top_k=TOP_K if kind == "top-k" else 0, top_p=TOP_P if kind == "top-p" else 1.0)
        for step, logits in STEPS.items()
        for kind in ("top-k", "top-p")
    }


def top_k_top_p():
    """Top-k and top-p applied to a confident and an uncertain distribution."""
    table = filter_table()
    s = Svg(360, 300)
    bar_w, chart_h = 16, 90
    for r, step in enumerate(STEPS):
        for c, kind in enumerate(("top-k", "top-p")):
            x0, y0 = 30 + c * 172, 30 + r * 140
            d = table[step, kind]
            title = f"{step}, {kind} = {TOP_K if kind == 'top-k' else TOP_P}"
            s.text(x0 + 64, y0 - 14, title, cls="label small bold")
            s.line(x0, y0 + chart_h, x0 + 8 * bar_w + 4, y0 + chart_h)
            for i, (p, kept) in enumerate(zip(d["base_probs"], d["kept"])):
                h = max(1.0, p * chart_h)
                s.box(
                    x0 + i * bar_w + 2,
                    y0 + chart_h - h,
                    bar_w - 3,
                    h,
                    cls="bar on" if kept else "bar off",
                    rx=1,
                    data={"token": i, "p": f"{p:.3f}", "kept": str(kept).lower()},
                )
            s.text(
                x0 + 64,
                y0 + chart_h + 14,
                f"keeps {d['num_kept']} ({d['kept_mass']:.0%} of the mass)",
                cls="label small",
                data={"num-kept": d["num_kept"], "kept-mass": f"{d['kept_mass']:.3f}"},
            )
    s.text(180, 294, "bars: probability before filtering; filled: kept", cls="label small dim")
    kk = {key: table[key]["num_kept"] for key in table}
    alt = (
        f"Four bar charts of eight token probabilities. On the confident step top-k={TOP_K} keeps {kk['confident', 'top-k']} tokens and "
        f"top-p={TOP_P} keeps {kk['confident', 'top-p']}; on the uncertain, flat step top-k still keeps {kk['uncertain', 'top-k']} "
        f"while top-p keeps {kk['uncertain', 'top-p']}."
    )
    caption = (
        "Top-k against top-p on the two steps of this chapter (computed by demos.sampling). "
        f"A fixed k keeps {TOP_K} tokens whatever the shape; the nucleus shrinks when the model is sure and grows when it is not."
    )
    return s.render("top-k-top-p", alt), alt, caption


def temperature():
    """One three-token distribution at three temperatures (``demos.sampling.softmax``)."""
    s = Svg(360, 190)
    chart_h, bar_w = 110, 26
    for c, t in enumerate(TEMPERATURES):
        probs = softmax(TEMPERATURE_LOGITS, temperature=t)
        x0 = 20 + c * 118
        s.text(x0 + 45, 12, f"T = {t:g}", cls="label bold")
        s.line(x0, 30 + chart_h, x0 + 3 * (bar_w + 4), 30 + chart_h)
        for i, p in enumerate(probs):
            h = p * chart_h
            x = x0 + 2 + i * (bar_w + 4)
            s.box(x, 30 + chart_h - h, bar_w, h, cls="bar on", rx=1, data={"temperature": f"{t:g}", "token": i, "p": f"{p:.3f}"})
            s.text(x + bar_w / 2, 30 + chart_h - h - 8, f"{p:.2f}", cls="label small")
            s.text(x + bar_w / 2, 30 + chart_h + 12, f"z={TEMPERATURE_LOGITS[i]}", cls="label small dim")
    s.text(180, 182, "same logits 2, 1, 0; divided by T before the softmax", cls="label small dim")
    alt = (
        "Three bar charts of the same three tokens with logits 2, 1 and 0. At temperature 0.5 the first token takes most of the "
        "probability; at 1 the bars are the model's own distribution; at 2 they are closer to an even split."
    )
    caption = "Temperature on one distribution (demos.sampling.softmax): below 1 it sharpens, above 1 it flattens; the order of the tokens never changes."
    return s.render("temperature", alt), alt, caption


SPEC_ALPHAS = (0.5, 0.7, 0.8, 0.9)  # acceptance rates drawn
SPEC_GAMMAS = tuple(range(0, 11))  # draft tokens per target pass


def speculative_tokens():
    """Expected tokens per target pass against the number of draft tokens, one line per acceptance rate."""
    left, top, width, height = 40, 24, 250, 150
    s = Svg(360, top + height + 44)
    s.text(left, 12, "expected tokens per target pass, (1 − α^(γ+1)) / (1 − α)", cls="label small dim", anchor="start")
    peak = expected_tokens(max(SPEC_ALPHAS), max(SPEC_GAMMAS))
    x_of = lambda g: left + width * g / max(SPEC_GAMMAS)  # noqa: E731
    y_of = lambda v: top + height * (1 - (v - 1) / (peak - 1))  # noqa: E731
    for v in range(1, int(peak) + 1):
        s.line(left, y_of(v), left + width, y_of(v), cls="line thin")
        s.text(left - 4, y_of(v) + 3, str(v), cls="label small", anchor="end")
    for g in SPEC_GAMMAS[::2]:
        s.text(x_of(g), top + height + 14, str(g), cls="label small")
    for k, alpha in enumerate(SPEC_ALPHAS):
        values = [expected_tokens(alpha, g) for g in SPEC_GAMMAS]
        s.polyline([(x_of(g), y_of(v)) for g, v in zip(SPEC_GAMMAS, values)], cls="curve" if k % 2 else "curve alt")
        s.text(
            x_of(max(SPEC_GAMMAS)) + 2,
            y_of(values[-1]) + 3,
            f"α = {alpha}",
            cls="label small",
            anchor="start",
            data={"alpha": alpha, "at-10": f"{values[-1]:.4f}"},
        )
    s.text(left + width / 2, top + height + 32, "draft tokens per target pass (γ)", cls="label small dim")
    alt = (
        "Expected tokens per pass of the target model against the number of draft tokens, for acceptance rates "
        + ", ".join(f"{a} (reaching {expected_tokens(a, max(SPEC_GAMMAS)):.2f} at γ = {max(SPEC_GAMMAS)})" for a in SPEC_ALPHAS)
        + ". Each curve levels off towards 1 / (1 − α)."
    )
    caption = "Speculative decoding's expected gain (demos.speculative.expected_tokens, Leviathan et al., 2023)."
    return s.render("speculative-tokens", alt), alt, caption
