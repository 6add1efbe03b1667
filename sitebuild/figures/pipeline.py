"""Figures of the pipeline's stages: the embedding sum, the tied output head and the generation loop.

Shapes come from ``model_export.gpt2.GPT2Config()`` (through ``block.small_shapes``), the row
labels from the running example's token ids: the widgets' default prompt (``DEFAULT_PROMPT`` in
``site_src/widgets/pipeline/prompt.js``, its one owner) through GPT-2's merges and vocabulary.
"""

from __future__ import annotations

import re

from sitebuild.figures.block import small_shapes
from sitebuild.figures.sections import gpt2_tokenize
from sitebuild.figures.svg import Svg
from sitebuild.paths import SITE_SRC

LOOP_STEPS = 3


def running_example() -> str:
    """The widgets' default prompt, the book's running example (read from prompt.js)."""
    text = (SITE_SRC / "widgets" / "pipeline" / "prompt.js").read_text(encoding="utf-8")
    match = re.search(r'export const DEFAULT_PROMPT = "([^"]+)";', text)
    if not match:
        raise ValueError("site_src/widgets/pipeline/prompt.js: DEFAULT_PROMPT not found")
    return match[1]


def parity_ids() -> list[int]:
    """The running example's token ids, "Data visualization empowers users to" (no leading space)."""
    return gpt2_tokenize()(running_example())[1]


def embedding_sum():
    """Token ids pick rows of wte, positions pick rows of wpe; the sum is the (T, n_embd) input."""
    d = small_shapes()
    C, V, P = d["n_embd"], d["vocab_size"], d["n_positions"]
    ids = parity_ids()
    T = len(ids)
    s = Svg(360, 92 + 20 * T + 40)
    cols = ((10, "wte", f"{V} × {C}", f"{V} x {C}"), (134, "wpe", f"{P} × {C}", f"{P} x {C}"))
    for x, name, sub, shape in cols:
        s.box(x, 8, 100, 40, name, sub=sub, cls="box muted", data={"table": name, "shape": shape})
        s.arrow(x + 50, 48, x + 50, 70)
    s.text(66, 59, "row id", cls="label small", anchor="start")
    s.text(190, 59, "row t", cls="label small", anchor="start")
    s.box(248, 8, 102, 40, "x (the sum)", sub=f"{T} × {C}", cls="box primary", data={"shape": f"{T} x {C}"})
    y0 = 76
    for t, tok in enumerate(ids):
        y = y0 + 20 * t
        s.box(10, y, 100, 16, f"wte[{tok}]", cls="box", rx=2, data={"id": tok, "t": t})
        s.text(122, y + 8, "+", cls="label bold")
        s.box(134, y, 96, 16, f"wpe[{t}]", cls="box", rx=2, data={"position": t})
        s.text(239, y + 8, "=", cls="label bold")
        s.box(248, y, 102, 16, f"x[{t}]: {C}", cls="box accent", rx=2, data={"row": t, "width": C})
    yb = y0 + 20 * T + 14
    s.text(180, yb, f"one row per token, each {C} numbers wide", cls="label small dim")
    s.text(180, yb + 16, f"ids: the running example's {T} tokens", cls="label small dim")
    alt = (
        f"Two tables side by side: the token embedding wte, {V} rows by {C}, and the position embedding wpe, {P} rows by {C}. "
        f"The {T} token ids {', '.join(map(str, ids))} each pick a row of wte, the positions 0 to {T - 1} pick rows of wpe, "
        f"and each pair of rows is added into one row of the {T} by {C} sum that enters the first block."
    )
    caption = (
        f"The embedding sum for the running example (GPT-2 small's tables). Row t of the input is wte[id_t] + wpe[t]: "
        f"a look-up in each table, one addition, and the width stays {C}."
    )
    data = {"n-embd": C, "vocab-size": V, "n-positions": P, "ids": " ".join(map(str, ids))}
    return s.render("embedding-sum", alt, data), alt, caption


def lm_head():
    """The last position's vector, through ln_f and the tied wteᵀ, to one logit per vocabulary entry."""
    d = small_shapes()
    C, V = d["n_embd"], d["vocab_size"]
    s = Svg(360, 300)
    # The last block's output, T rows; only the last one is used for the next token.
    rows, cols, cell = 6, 12, 9
    gx, gy = 14, 22
    s.text(gx, 10, f"after block {d['n_layer']}: T × {C}", cls="label small bold", anchor="start", data={"shape": f"T x {C}"})
    s.grid(gx, gy, rows, cols, cell, lambda r, c: "cell hi" if r == rows - 1 else "cell off")
    s.text(gx + cols * cell + 6, gy + (rows - 0.5) * cell, "← last position", cls="label small", anchor="start")
    s.arrow(gx + cols * cell / 2, gy + rows * cell + 2, gx + cols * cell / 2, 96)
    cx = 80
    s.box(cx - 66, 98, 132, 26, f"x_T: {C}", cls="box accent", data={"shape": f"{C}"})
    s.arrow(cx, 124, cx, 142)
    s.box(cx - 66, 144, 132, 30, "ln_f", sub="final LayerNorm", cls="box muted")
    s.arrow(cx, 174, cx, 192)
    s.box(cx - 66, 194, 132, 30, "× wteᵀ", sub=f"{C} × {V}", cls="box primary", data={"shape": f"{C} x {V}"})
    s.arrow(cx, 224, cx, 242)
    # The tied table, the same one stage 2 reads rows of.
    s.box(224, 144, 126, 40, "wte (stage 2)", sub=f"{V} × {C}", cls="box muted", data={"table": "wte", "shape": f"{V} x {C}"})
    s.line(224, 164, 190, 164, cls="line dash")
    s.arrow(190, 164, 190, 209, cls="arrow")
    s.arrow(190, 209, cx + 68, 209, cls="arrow")
    s.text(287, 198, "the same matrix:", cls="label small", anchor="middle")
    s.text(287, 212, "tied, not learned twice", cls="label small", anchor="middle")
    # The logits, one per vocabulary entry, as a long thin strip.
    s.box(10, 244, 340, 22, f"logits: {V}", cls="box primary", rx=2, data={"shape": f"{V}", "logits": V})
    s.text(10, 280, "id 0", cls="label small dim", anchor="start")
    s.text(350, 280, f"id {V - 1}", cls="label small dim", anchor="end")
    s.text(180, 280, "one score per vocabulary entry", cls="label small dim")
    alt = (
        f"The last block's output has T rows of {C}; only the last row is taken. It goes through the final LayerNorm ln_f and is "
        f"multiplied by the transpose of the token-embedding table wte ({V} by {C}), the same matrix stage 2 reads rows from, "
        f"giving {V} logits, one score for each vocabulary entry."
    )
    caption = (
        f"The output head of GPT-2 small: the last position's {C} numbers, normalised by ln_f, dotted with every row of wte (tied weights) to give {V} logits."
    )
    return s.render("lm-head", alt, {"n-embd": C, "vocab-size": V}), alt, caption


def loop_steps(prompt_len: int, steps: int = LOOP_STEPS) -> list[dict]:
    """Token counts of each generation step with a KV cache: the prefill feeds the prompt, later steps one token."""
    out = []
    length = prompt_len
    for i in range(steps):
        fed = prompt_len if i == 0 else 1
        out.append({"step": i + 1, "cached": length - fed, "fed": fed, "context": length, "after": length + 1})
        length += 1
    return out


def autoregression_loop():
    """Three steps of generation: forward, last position's logits, sample, append; the cache keeps the rest."""
    T = len(parity_ids())
    steps = loop_steps(T)
    cell, tx = 13, 8
    s = Svg(360, 30 + 74 * len(steps) + 28)
    s.text(tx, 10, "tokens:", cls="label small dim", anchor="start")
    s.grid(tx + 44, 4, 1, 1, 12, lambda r, c: "cell hi")
    s.text(tx + 60, 10, "through the network", cls="label small", anchor="start")
    s.grid(tx + 180, 4, 1, 1, 12, lambda r, c: "cell on")
    s.text(tx + 196, 10, "from the KV cache", cls="label small", anchor="start")
    for i, st in enumerate(steps):
        y = 30 + 74 * i
        s.text(tx, y + 6, f"step {st['step']}" + (" (prefill)" if i == 0 else ""), cls="label small bold", anchor="start")
        gy = y + 16
        for k in range(st["context"]):
            cls = "cell on" if k < st["cached"] else "cell hi"
            s.add(f'<rect class="{cls}" x="{tx + k * cell}" y="{gy}" width="{cell - 2}" height="{cell - 2}"/>')
        gx_end = tx + st["context"] * cell
        s.box(gx_end + 4, gy - 1, cell, cell, cls="box accent", rx=1)
        s.text(gx_end + 4 + cell / 2, gy + cell + 8, "new", cls="label small")
        s.box(134, y + 2, 76, 38, "forward", sub=f"{st['fed']} in", cls="box primary", data={"step": st["step"], "fed": st["fed"], "cached": st["cached"]})
        s.arrow(210, y + 21, 224, y + 21)
        s.box(226, y + 2, 60, 38, "logits", sub="last pos.", cls="box muted")
        s.arrow(286, y + 21, 292, y + 21)
        s.box(294, y + 2, 60, 38, "sample", sub=f"→ {st['after']} tokens", cls="box accent", data={"context": st["context"], "after": st["after"]})
        s.text(tx, y + 52, f"{st['context']} in context, {st['cached']} cached, {st['fed']} computed", cls="label small dim", anchor="start")
        if i + 1 < len(steps):
            s.path(f"M 324 {y + 40} L 324 {y + 62} L {gx_end + 4 + cell / 2} {y + 62}", cls="line")
            s.arrow(gx_end + 4 + cell / 2, y + 62, gx_end + 4 + cell / 2, y + 88)
            s.text(300, y + 56, "append", cls="label small", anchor="end")
    yb = 30 + 74 * len(steps) + 8
    s.text(180, yb, "each step adds one token; after the prefill only it is computed", cls="label small dim")
    counts = ", ".join(f"step {st['step']}: {st['fed']} of {st['context']}" for st in steps)
    alt = (
        f"Three steps of generation from a {T}-token prompt. Step 1, the prefill, runs all {T} tokens through the network, "
        "takes the logits of the last position, samples a token and appends it. Each later step runs only the newest token, "
        f"reading the earlier tokens' keys and values from the KV cache. Tokens computed per step: {counts}."
    )
    caption = (
        f"The generation loop with a KV cache, from the running example's {T} tokens: forward, logits of the last position, "
        "sample, append, repeat. After the prefill each step computes one token."
    )
    return s.render("autoregression-loop", alt, {"prompt": T, "steps": len(steps)}), alt, caption
