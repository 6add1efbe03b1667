"""Figures of the three families (their attention masks), BPE merges (``demos.bpe``) and RoPE (``demos.rope``)."""

from __future__ import annotations

import math

from demos.bpe import train_bpe
from demos.rope import apply_rope, rope_frequencies
from demos.rope_scaling import wavelengths
from sitebuild.figures.attention import _mask_grid, allowed_matrix
from sitebuild.figures.svg import Svg

FAMILY_T = 5
BPE_CORPUS, BPE_MERGES = "low lower lowest newer wider", 6
ROPE_D, ROPE_PAIR, ROPE_POSITIONS = 8, 0, [1, 2, 3, 4]  # positions counted from 1, as the book does


def three_families():
    """Encoder-only, decoder-only and encoder–decoder, each drawn as who may attend to whom."""
    full, causal = allowed_matrix(FAMILY_T), allowed_matrix(FAMILY_T, causal=True)
    cell = 12
    s = Svg(360, 200)
    columns = (
        ("encoder-only", "BERT", 55, [("self-attention", full, "full", 25)]),
        ("decoder-only", "GPT", 160, [("causal self-attn", causal, "causal", 130)]),
        ("encoder–decoder", "T5, BART", 294, [("encoder", full, "full", 232), ("decoder", causal, "causal", 296)]),
    )
    for title, examples, cx, grids in columns:
        s.text(cx, 12, title, cls="label bold")
        s.text(cx, 28, examples, cls="label small dim")
        for name, grid, kind, gx in grids:
            _mask_grid(s, gx, 44, grid, cell, kind)
            s.text(gx + FAMILY_T * cell / 2, 44 + FAMILY_T * cell + 12, name, cls="label small")
    y = 44 + FAMILY_T * cell + 26
    s.arrow(232 + FAMILY_T * cell / 2, y, 296 + FAMILY_T * cell / 2, y)
    s.text(294, y + 12, "cross-attention", cls="label small")
    s.text(55, 160, "understands", cls="label small", anchor="middle")
    s.text(160, 160, "generates", cls="label small", anchor="middle")
    s.text(294, 160, "input → output", cls="label small", anchor="middle")
    s.text(180, 186, "rows: queries · columns: keys · filled: may attend", cls="label small dim")
    alt = (
        f"Three panels of {FAMILY_T} by {FAMILY_T} attention masks. Encoder-only models such as BERT fill the whole grid: every token "
        "sees both sides. Decoder-only models such as GPT fill the lower triangle: each token sees only the past. "
        "Encoder–decoder models such as T5 have a full grid for the encoder, a triangle for the decoder, and cross-attention between them."
    )
    caption = "The three families, told apart by their masks. The blocks are the same; what each token may read differs."
    return s.render("three-families", alt), alt, caption


def bpe_merges():
    """``train_bpe``'s merges on a five-word corpus, step by step, and the words' final tokens."""
    r = train_bpe(BPE_CORPUS, BPE_MERGES)
    steps, words = r["steps"], r["words"]
    s = Svg(360, 40 + 26 * len(steps) + 30 + 24 * len(words))
    s.text(4, 12, f"corpus: “{BPE_CORPUS}” (Ġ marks a space)", cls="label small dim", anchor="start")
    s.text(30, 32, "merge", cls="label small bold")
    s.text(130, 32, "new token", cls="label small bold")
    s.text(230, 32, "count", cls="label small bold")
    s.text(310, 32, "vocab", cls="label small bold")
    for i, st in enumerate(steps):
        y = 44 + i * 26
        s.text(30, y + 10, f"{i + 1}", cls="label small")
        s.box(60, y, 36, 20, st["pair"][0], cls="box muted", rx=2)
        s.text(100, y + 10, "+", cls="label small", anchor="start")
        s.box(110, y, 36, 20, st["pair"][1], cls="box muted", rx=2)
        s.text(152, y + 10, "→", cls="label small", anchor="start")
        s.box(168, y, 44, 20, st["token"], cls="box primary", rx=2, data={"merge": i + 1, "pair": " ".join(st["pair"]), "token": st["token"]})
        s.text(230, y + 10, st["count"], cls="label small", data={"count": st["count"]})
        s.text(310, y + 10, st["vocab_size"], cls="label small", data={"vocab-size": st["vocab_size"]})
    y0 = 44 + 26 * len(steps) + 10
    s.text(4, y0, "the words after these merges:", cls="label small dim", anchor="start")
    for i, w in enumerate(words):
        y = y0 + 12 + i * 24
        s.text(60, y + 10, w["word"], cls="label small", anchor="end")
        x = 70
        for tok in w["tokens"]:
            bw = 12 + 8 * len(tok)
            s.box(x, y, bw, 20, tok, cls="box accent", rx=2)
            x += bw + 3
        s.add(f'<g data-word="{w["word"]}" data-tokens="{" ".join(w["tokens"])}"></g>')
    alt = (
        f"BPE training on the corpus “{BPE_CORPUS}”: a table of {len(steps)} merges, each joining the most frequent adjacent pair "
        f"({', '.join(st['pair'][0] + '+' + st['pair'][1] for st in steps)}), then each word split into its final tokens."
    )
    caption = (
        f"Byte-pair encoding learns its vocabulary one merge at a time (demos.bpe.train_bpe, {BPE_MERGES} merges). "
        "Frequent pieces such as “low” and “er” become tokens; rare words stay in pieces."
    )
    return s.render("bpe-merges", alt), alt, caption


def rope_points() -> list[tuple[float, float]]:
    """A query pair (1, 0) rotated to each of ``ROPE_POSITIONS`` by ``apply_rope`` (only pair 0 drawn)."""
    x = [[1.0] + [0.0] * (ROPE_D - 1)] * len(ROPE_POSITIONS)
    return [(row[2 * ROPE_PAIR], row[2 * ROPE_PAIR + 1]) for row in apply_rope(x, ROPE_POSITIONS)]


def rope_rotation():
    """RoPE as a rotation: one 2-D pair of a query turned by m·θ at position m."""
    pts = rope_points()
    theta = rope_frequencies(ROPE_D)[ROPE_PAIR]
    s = Svg(360, 250)
    cx, cy, R = 130, 125, 95
    s.circle(cx, cy, R, cls="line dash")
    s.line(cx - R - 10, cy, cx + R + 10, cy, cls="line thin")
    s.line(cx, cy - R - 10, cx, cy + R + 10, cls="line thin")
    for m, (a, b) in zip(ROPE_POSITIONS, pts):
        x, y = cx + R * a, cy - R * b
        s.arrow(cx, cy, x, y, cls="arrow")
        lx, ly = cx + (R + 16) * a, cy - (R + 16) * b
        s.text(lx, ly, f"m={m}", cls="label small bold", data={"m": m, "x": f"{a:.4f}", "y": f"{b:.4f}"})
    s.path(f"M {cx + 30} {cy} A 30 30 0 0 0 {cx + 30 * math.cos(theta):.2f} {cy - 30 * math.sin(theta):.2f}", cls="line")
    s.text(cx + 44, cy - 12, "θ", cls="label small")
    s.text(250, 60, f"pair {ROPE_PAIR}: θ = {theta:g} rad", cls="label small bold", anchor="start", data={"theta": theta})
    s.lines(250, 80, ["position m turns", "the pair by m·θ"], step=16, anchor="start")
    s.lines(250, 130, ["q at m and k at n:", "their dot product", "depends on m − n", "only"], step=16, anchor="start")
    alt = (
        f"A unit circle with four arrows: the same query pair (1, 0) at positions {ROPE_POSITIONS[0]} to {ROPE_POSITIONS[-1]}, each turned by a further "
        f"θ = {theta:g} radian. Rotating query and key by their positions makes their dot product depend only on the distance between them."
    )
    caption = (
        f"RoPE as a rotation (points from demos.rope.apply_rope, head width {ROPE_D}, pair {ROPE_PAIR}). Later pairs turn more slowly, by θᵢ = 10000^(−2i/d)."
    )
    return s.render("rope-rotation", alt), alt, caption


ROPE_SCALING = {"factor": 4.0, "head_dim": 128, "base": 10000.0, "original": 4096}  # a LLaMA head's RoPE at Llama 2's 4,096 positions, stretched to 16,384
ROPE_SCALING_LINES = {
    "none": ("trained", "curve dim"),
    "linear": ("position interpolation", "curve warn"),
    "ntk": ("NTK-aware", "curve dash"),
    "yarn": ("YaRN", "curve"),
}


def rope_scaling():
    """Each RoPE pair's wavelength (log scale) as trained and under the three stretching methods."""
    w = wavelengths(**ROPE_SCALING)
    left, top, width, height = 46, 14, 290, 160
    s = Svg(360, top + height + 74)
    lo, hi = math.log10(min(w["none"])), math.log10(max(max(w[m]) for m in ROPE_SCALING_LINES))
    x_of = lambda i: left + width * i / (len(w["pair"]) - 1)  # noqa: E731
    y_of = lambda v: top + height * (1 - (math.log10(v) - lo) / (hi - lo))  # noqa: E731
    for exp in range(math.ceil(lo), math.floor(hi) + 1):
        s.line(left, y_of(10**exp), left + width, y_of(10**exp), cls="line thin")
        s.text(left - 4, y_of(10**exp) + 3, f"10{'⁰¹²³⁴⁵⁶⁷⁸⁹'[exp]}", cls="label small", anchor="end")
    for length, label in ((w["original"], f"trained length {w['original']:,}"), (w["extended"], f"new length {w['extended']:,}")):
        s.line(left, y_of(length), left + width, y_of(length), cls="line dash", data={"length": length})
        s.text(left + 4, y_of(length) - 6, label, cls="label small", anchor="start")
    for k, (method, (label, cls)) in enumerate(ROPE_SCALING_LINES.items()):
        points = [(x_of(i), y_of(v)) for i, v in zip(w["pair"], w[method])]
        s.polyline(points, cls=cls, data={"method": method, "first": f"{w[method][0]:.4f}", "last": f"{w[method][-1]:.1f}"})
        s.legend_entry(left + (k % 2) * 150, top + height + 32 + 14 * (k // 2), label, cls)
    s.text(left + width / 2, top + height + 14, f"pair of dimensions (0 … {len(w['pair']) - 1})", cls="label small dim")
    s.text(left + width / 2, top + height + 66, "wavelength in positions (log scale)", cls="label small dim")
    slow = sum(v > w["original"] for v in w["none"])
    alt = (
        f"Wavelengths of the {len(w['pair'])} RoPE pairs of a LLaMA head, from {w['none'][0]:.1f} to {w['none'][-1]:,.0f} positions; {slow} pairs never "
        f"complete a turn in the {w['original']:,} trained positions. Position interpolation multiplies every wavelength by {ROPE_SCALING['factor']:g}; "
        "NTK-aware scaling keeps the fastest pairs and stretches the slowest; YaRN keeps the fast pairs, stretches the slow ones fully, and ramps between."
    )
    shape = f"base {ROPE_SCALING['base']:,.0f}, width {ROPE_SCALING['head_dim']}"
    caption = f"Stretching the RoPE of a LLaMA-shaped head ({shape}) from {w['original']:,} to {w['extended']:,} positions (demos.rope_scaling.wavelengths)."
    return s.render("rope-scaling", alt, {"slow-pairs": slow}), alt, caption
