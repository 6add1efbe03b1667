"""Figures of attention: masks, heads, cross-attention, GQA/MQA and FlashAttention's tiles.

The masks are the ``allowed`` matrices ``demos.attention.scaled_dot_product_attention`` returns;
the sizes come from ``model_export.gpt2.GPT2Config``, ``demos.kv_cache`` and ``demos.flash``.
"""

from __future__ import annotations

import math

import numpy as np

from demos.attention import scaled_dot_product_attention
from demos.flash import memory_traffic
from demos.kv_cache import compare_attention_variants, kv_cache_bytes, latent_cache_bytes, presets
from sitebuild.figures.block import small_shapes
from sitebuild.figures.svg import Svg

MASK_TOKENS = ["The", "cat", "sat", "down", "<pad>", "<pad>"]
WINDOW_T, WINDOW = 10, 3
TILE_T, TILE = 16, 4
GQA_PRESET, GQA_CONTEXT = "llama-7b-gqa", 4096


def allowed_matrix(t: int, causal: bool = False, padding: list[bool] | None = None, attn_mask=None) -> list[list[bool]]:
    """The allowed (query, key) pairs ``scaled_dot_product_attention`` uses for these masks."""
    x = [[1.0]] * t
    return scaled_dot_product_attention(x, x, x, causal=causal, key_padding_mask=padding, attn_mask=attn_mask)["allowed"]


def mask_grids() -> dict:
    """The three grids of the masks figure: causal, padding, and both."""
    t = len(MASK_TOKENS)
    pad = [w == "<pad>" for w in MASK_TOKENS]
    return {"causal": allowed_matrix(t, causal=True), "padding": allowed_matrix(t, padding=pad), "both": allowed_matrix(t, causal=True, padding=pad)}


def _mask_grid(s: Svg, x: float, y: float, allowed, cell: float, name: str) -> None:
    rows = "".join("".join("1" if a else "0" for a in row) + ("/" if i < len(allowed) - 1 else "") for i, row in enumerate(allowed))
    s.add(f'<g class="mask" data-mask="{name}" data-allowed="{rows}">')
    s.grid(x, y, len(allowed), len(allowed[0]), cell, lambda r, c: "cell on" if allowed[r][c] else "cell off")
    s.add("</g>")


def attention_masks():
    """Causal, padding and combined masks on one padded sentence."""
    grids = mask_grids()
    t, cell = len(MASK_TOKENS), 14
    s = Svg(360, 180)
    for i, (name, title) in enumerate((("causal", "causal"), ("padding", "padding"), ("both", "causal + padding"))):
        x0 = 44 + i * 108
        s.text(x0 + t * cell / 2, 12, title, cls="label bold")
        _mask_grid(s, x0, 26, grids[name], cell, name)
        s.text(x0 + t * cell / 2, 26 + t * cell + 12, "keys →", cls="label small dim")
    for r, w in enumerate(MASK_TOKENS):
        s.text(40, 26 + r * cell + cell / 2, w, cls="label small", anchor="end")
    s.text(2, 12, "queries ↓", cls="label small dim", anchor="start")
    s.box(44, 150, 12, 12, cls="cell on")
    s.text(62, 156, "may attend", cls="label small", anchor="start")
    s.box(150, 150, 12, 12, cls="cell off")
    s.text(168, 156, "masked (−∞ before softmax)", cls="label small", anchor="start")
    alt = (
        "Three 6 by 6 grids of which query (row) may attend to which key (column) for the tokens The, cat, sat, down and two "
        "padding tokens. Causal: a lower triangle, each token sees itself and earlier tokens. Padding: the two padding "
        "columns are masked for every row. Both: the lower triangle without the padding columns."
    )
    caption = "The attention masks on one padded sentence, as computed by demos.attention. A masked score becomes −∞, so its softmax weight is exactly 0."
    return s.render("attention-masks", alt), alt, caption


def multi_head():
    """Splitting the width into heads and merging them back, with GPT-2 small's sizes."""
    d = small_shapes()
    C, H, hd = d["n_embd"], d["n_head"], d["head_dim"]
    s = Svg(360, 250)
    s.box(20, 10, 320, 30, f"x: T × {C}", cls="box", data={"shape": f"T x {C}"})
    s.arrow(180, 40, 180, 58)
    s.text(186, 49, f"reshape to T × {H} × {hd}, then swap: {H} × T × {hd}", cls="label small", anchor="middle")
    w = 320 / H
    for h in range(H):
        x = 20 + h * w
        s.box(x + 1, 62, w - 2, 70, cls="box primary", data={"head": h, "shape": f"T x {hd}"}, rx=2)
    s.text(20 + w / 2, 97, "h0", cls="label small")
    s.text(20 + (H - 0.5) * w, 97, f"h{H - 1}", cls="label small")
    s.text(180, 97, f"{H} heads, each T × {hd}", cls="label small bold")
    s.text(180, 146, "each head attends on its own (its own T × T weights)", cls="label small dim")
    s.arrow(180, 156, 180, 176)
    s.box(20, 180, 320, 28, f"concatenate: T × {H}·{hd} = T × {C}", cls="box", data={"shape": f"T x {C}"})
    s.arrow(180, 208, 180, 222)
    s.box(20, 222, 320, 24, f"output projection W_O: {C} × {C}", cls="box muted")
    alt = (
        f"Multi-head attention's split and merge in GPT-2 small: the T by {C} input is reshaped into {H} heads of T by {hd}, "
        f"each head attends separately, and the heads are concatenated back to T by {C} and mixed by a {C} by {C} output projection."
    )
    caption = f"Split and merge: {H} heads × {hd} = {C}. No numbers are lost or added; the heads only see different slices of the width."
    return s.render("multi-head", alt, {"n-head": H, "head-dim": hd, "n-embd": C}), alt, caption


def sliding_window_mask() -> list[list[bool]]:
    """A causal mask with a window of ``WINDOW`` keys, as ``scaled_dot_product_attention`` applies it."""
    window = [[0 <= q - k < WINDOW for k in range(WINDOW_T)] for q in range(WINDOW_T)]
    return allowed_matrix(WINDOW_T, causal=True, attn_mask=window)


def sliding_window():
    """Full causal attention beside a sliding window."""
    full, slid = allowed_matrix(WINDOW_T, causal=True), sliding_window_mask()
    cell = 14
    s = Svg(360, 200)
    for x0, grid, name, title in ((20, full, "causal", "full causal"), (200, slid, "window", f"sliding window, w = {WINDOW}")):
        s.text(x0 + WINDOW_T * cell / 2, 12, title, cls="label bold")
        _mask_grid(s, x0, 26, grid, cell, name)
        n = sum(map(sum, grid))
        s.text(x0 + WINDOW_T * cell / 2, 26 + WINDOW_T * cell + 14, f"{n} scores", cls="label small", data={"scores": n})
    s.text(180, 192, "a row's cost grows with T on the left, stays at w on the right", cls="label small dim")
    alt = (
        f"Two {WINDOW_T} by {WINDOW_T} attention masks. Left, full causal attention: a lower triangle. Right, a sliding window "
        f"of {WINDOW}: each query sees only itself and the {WINDOW - 1} keys before it, a band along the diagonal."
    )
    caption = f"Sliding-window attention keeps a band of width {WINDOW} along the diagonal. Information still travels further than w, one window per layer."
    return s.render("sliding-window", alt, {"window": WINDOW, "t": WINDOW_T}), alt, caption


def gqa_variants():
    """MHA, GQA and MQA: how many key/value heads serve the query heads, and the cache each needs."""
    shape = presets()[GQA_PRESET]
    variants = compare_attention_variants(shape["n_layer"], shape["n_head"], shape["d_head"], shape["gqa_kv_heads"], GQA_CONTEXT, "float16")["variants"]
    n_q = variants[0]["n_kv_head"]
    s = Svg(360, 82 * len(variants) + 10)
    w = 320 / n_q
    for i, v in enumerate(variants):
        y = 10 + i * 82
        s.text(20, y + 6, f"{v['name']}: {v['n_kv_head']} K/V head{'s' if v['n_kv_head'] > 1 else ''}", cls="label bold", anchor="start")
        per_token = {"variant": v["name"], "bytes-per-token": v["bytes_per_token"]}
        s.text(340, y + 6, f"{v['bytes_per_token']:,} B per token", cls="label small", anchor="end", data=per_token)
        for h in range(n_q):
            s.box(20 + h * w + 1, y + 16, w - 2, 16, "q" if w > 16 else None, cls="box primary", rx=2)
        gw = 320 / v["n_kv_head"]
        for g in range(v["n_kv_head"]):
            s.box(20 + g * gw + 1, y + 44, gw - 2, 16, "kv" if gw > 20 else "", cls="box accent", rx=2, data={"group": g, "group-size": v["group_size"]})
            for h in range(g * v["group_size"], (g + 1) * v["group_size"]):
                s.line(20 + (h + 0.5) * w, y + 32, 20 + g * gw + gw / 2, y + 44, cls="line thin")
    alt = (
        f"Three rows of {n_q} query heads. In multi-head attention each query head has its own key/value head; in grouped-query "
        f"attention {variants[1]['group_size']} query heads share each of {variants[1]['n_kv_head']} key/value heads; in multi-query "
        f"attention all share one. The KV cache per token shrinks from {variants[0]['bytes_per_token']:,} to "
        f"{variants[1]['bytes_per_token']:,} to {variants[2]['bytes_per_token']:,} bytes."
    )
    caption = (
        f"MHA, GQA and MQA on {shape['label'].split(',')[0]} ({shape['n_layer']} layers, {n_q} query heads of width {shape['d_head']}, 16-bit cache); "
        "sizes from demos.kv_cache.compare_attention_variants. Every query head still computes its own scores."
    )
    return s.render("gqa-mqa", alt), alt, caption


def flash_tiles():
    """FlashAttention's tiles over a causal score matrix: which tiles are computed, none stored."""
    traffic = memory_traffic(seq_len=TILE_T, d_head=4, block_q=TILE, block_k=TILE, causal=True)
    n = TILE_T // TILE
    cell = 14
    s = Svg(360, 290)
    x0, y0 = 110, 30
    s.text(x0 + TILE_T * cell / 2, 12, f"{TILE_T} × {TILE_T} causal scores in {TILE} × {TILE} tiles", cls="label bold")

    def cls(r, c):
        return "cell on" if c <= r else ("cell pad" if c // TILE <= r // TILE else "cell off")

    s.grid(x0, y0, TILE_T, TILE_T, cell, cls)
    computed = 0
    for qi in range(n):
        for ki in range(n):
            if ki <= qi:
                computed += 1
                x, y, side = x0 + ki * TILE * cell, y0 + qi * TILE * cell, TILE * cell - 1
                s.add(f'<rect class="tile" data-tile="{qi},{ki}" x="{x}" y="{y}" width="{side}" height="{side}"/>')
    s.text(x0 - 6, y0 + TILE * cell / 2, "Q tile 0", cls="label small", anchor="end")
    s.text(x0 - 6, y0 + TILE * cell * 1.5, "Q tile 1", cls="label small", anchor="end")
    s.text(
        180,
        y0 + TILE_T * cell + 14,
        f"{traffic['tiles']} tiles computed, {n * n - traffic['tiles']} skipped",
        cls="label small bold",
        data={"tiles": traffic["tiles"]},
    )
    s.text(
        180,
        y0 + TILE_T * cell + 30,
        f"score traffic: {traffic['naive']['score_matrix']} elements plain, {traffic['tiled']['score_matrix']} tiled",
        cls="label small",
        data={"naive-scores": traffic["naive"]["score_matrix"], "tiled-scores": traffic["tiled"]["score_matrix"]},
    )
    s.text(4, y0 + 120, "each row", cls="label small dim", anchor="start")
    s.text(4, y0 + 134, "keeps a", cls="label small dim", anchor="start")
    s.text(4, y0 + 148, "running max", cls="label small dim", anchor="start")
    s.text(4, y0 + 162, "and sum", cls="label small dim", anchor="start")
    assert computed == traffic["tiles"]
    alt = (
        f"A {TILE_T} by {TILE_T} causal score matrix cut into {TILE} by {TILE} tiles. The {traffic['tiles']} tiles on or below the diagonal "
        f"are computed one at a time on chip; the {n * n - traffic['tiles']} tiles above it are skipped. No score is written to main memory: "
        f"{traffic['naive']['score_matrix']} score elements move in plain attention, {traffic['tiled']['score_matrix']} in the tiled kernel."
    )
    caption = (
        "FlashAttention's tiling (counts from demos.flash.memory_traffic). "
        "Each query tile streams the key/value tiles it needs, updating a running maximum and sum, so the T × T matrix never exists in memory."
    )
    return s.render("flash-tiles", alt), alt, caption


def encoder_decoder():
    """Encoder–decoder: the decoder's cross-attention reads the encoder's output as keys and values."""
    s = Svg(360, 260)
    s.text(90, 12, "encoder (source)", cls="label bold")
    s.text(270, 12, "decoder (target)", cls="label bold")
    s.box(20, 200, 140, 26, "source tokens", cls="box")
    s.arrow(90, 200, 90, 180)
    s.box(20, 120, 140, 60, "self-attention", sub="every token sees all", cls="box primary")
    s.arrow(90, 120, 90, 104)
    s.box(20, 78, 140, 26, "MLP", cls="box muted")
    s.arrow(90, 78, 90, 56)
    s.box(20, 30, 140, 26, "encoder output", cls="box accent")
    s.box(200, 226, 140, 26, "target so far", cls="box")
    s.arrow(270, 226, 270, 212)
    s.box(200, 172, 140, 40, "masked self-attn", sub="causal", cls="box primary")
    s.arrow(270, 172, 270, 158)
    s.box(200, 112, 140, 46, "cross-attention", sub="Q: decoder · K, V: encoder", cls="box accent")
    s.arrow(270, 112, 270, 98)
    s.box(200, 72, 140, 26, "MLP", cls="box muted")
    s.arrow(270, 72, 270, 56)
    s.box(200, 30, 140, 26, "next-token logits", cls="box")
    s.path("M 160 43 C 185 43, 175 135, 199 135", cls="line")
    s.arrow(190, 135, 199, 135)
    alt = (
        "Two stacks side by side. The encoder reads the source tokens with unmasked self-attention and an MLP, giving the "
        "encoder output. The decoder reads the target so far with causal self-attention, then cross-attention whose queries "
        "come from the decoder and whose keys and values come from the encoder output, then an MLP, giving next-token logits."
    )
    caption = (
        "Encoder–decoder (one layer of each drawn; the stacks repeat). Cross-attention is the only bridge: every decoder layer reads the encoder's last output."
    )
    return s.render("encoder-decoder", alt), alt, caption


MLA_SHAPE = {"n_layer": 61, "n_head": 128, "d_head": 128, "d_latent": 512, "d_rope": 64}  # DeepSeek-V3


def mla_rows() -> list[dict]:
    """Bytes per token of DeepSeek-V3's shape cached four ways (16-bit numbers)."""
    L, H, d = MLA_SHAPE["n_layer"], MLA_SHAPE["n_head"], MLA_SHAPE["d_head"]
    latent = latent_cache_bytes(L, MLA_SHAPE["d_latent"], MLA_SHAPE["d_rope"], H, d, 1, "bfloat16")
    rows = [
        (f"MHA, {H} K/V heads", kv_cache_bytes(L, H, d, 1, "bfloat16")["bytes_per_token"]),
        ("GQA, 8 K/V heads", kv_cache_bytes(L, 8, d, 1, "bfloat16")["bytes_per_token"]),
    ]
    rows += [("MLA, latent 512 + 64", latent["bytes_per_token"]), ("MQA, 1 K/V head", kv_cache_bytes(L, 1, d, 1, "bfloat16")["bytes_per_token"])]
    return [{"name": n, "bytes": b} for n, b in rows]


def mla_cache():
    """Log-scale bars: the cache per token of one model shape under MHA, GQA, MLA and MQA."""
    rows = mla_rows()
    left, width = 130, 150
    s = Svg(360, 24 + 30 * len(rows) + 20)
    lo, hi = math.log10(min(r["bytes"] for r in rows)) - 0.3, math.log10(max(r["bytes"] for r in rows))
    for i, r in enumerate(rows):
        y = 12 + i * 30
        w = width * (math.log10(r["bytes"]) - lo) / (hi - lo)
        s.text(left - 6, y + 14, r["name"], cls="label small", anchor="end")
        s.box(left, y, w, 20, cls="box accent" if r["name"].startswith("MLA") else "box", rx=2, data={"variant": r["name"].split(",")[0], "bytes": r["bytes"]})
        s.text(left + w + 4, y + 14, f"{r['bytes'] / 1024:,.1f} KiB", cls="label small", anchor="start")
    s.text(180, 24 + 30 * len(rows) + 6, "cache per token, 16-bit, log scale", cls="label small dim")
    alt = "Cache per token of DeepSeek-V3's shape: " + "; ".join(f"{r['name']}: {r['bytes']:,} bytes" for r in rows) + "."
    caption = "DeepSeek-V3's shape (61 layers, 128 heads of width 128) cached four ways (demos.kv_cache.kv_cache_bytes and latent_cache_bytes)."
    return s.render("mla-cache", alt), alt, caption


SINK_TOKENS, SINK_SKIP = 128, 16  # tokens read from the start of each held-out page; queries after the first 16


def sink_windows() -> dict[str, list[list[int]]]:
    """The book's held-out pages' openings, as the book's model saw pages in training (after
    ``<|endoftext|>``) and without that token: ``{"eos": [...], "plain": [...]}``, one id list
    of ``SINK_TOKENS`` per page long enough."""
    from model_export import corpus, train
    from model_export.weights import BOOK_MODEL_DIR

    tokenizer = train.gpt2_tokenizer()
    eos = tokenizer.token_to_id(train.EOS_TEXT)
    held_out = [p for p in corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE) if p.held_out]
    pages = [[eos, *tokenizer.encode(p.text).ids] for p in held_out]  # as train.tokenize lays them out
    long_enough = [ids for ids in pages if len(ids) > SINK_TOKENS]
    return {"eos": [ids[:SINK_TOKENS] for ids in long_enough], "plain": [ids[1 : SINK_TOKENS + 1] for ids in long_enough]}


def sink_shares() -> dict:
    """Each head's mean attention on the first position, over the held-out pages' openings:
    ``{"eos": (L, nh), "plain": (L, nh), "uniform": float, "pages": int}``."""
    from model_export.interpret import first_token_attention
    from sitebuild.figures.inside import book_gpt2

    model = book_gpt2()
    windows = sink_windows()
    shares = {k: np.mean([first_token_attention(model, ids, SINK_SKIP) for ids in v], axis=0) for k, v in windows.items()}
    uniform = float(np.mean([1 / (t + 1) for t in range(SINK_SKIP, SINK_TOKENS)]))
    return shares | {"uniform": uniform, "pages": len(windows["eos"])}


def attention_sinks():
    """The book's model's attention on the first position, per head: with the end-of-text token
    it was trained to see there, and without it."""
    found = sink_shares()
    L, nh = found["eos"].shape
    top = 0.3
    left, base, height, bar = 40, 170, 140, 9
    s = Svg(360, 240)
    y_of = lambda share: base - height * min(share, top) / top  # noqa: E731
    right = left + L * nh * (2 * bar + 2)
    for share in (0, 0.1, 0.2, 0.3):
        s.line(left, y_of(share), right, y_of(share), cls="line thin")
        s.text(left - 4, y_of(share) + 3, f"{share:g}", cls="label small", anchor="end")
    for layer in range(L):
        for head in range(nh):
            x = left + (layer * nh + head) * (2 * bar + 2)
            for k, (key, cls) in enumerate((("eos", "box primary"), ("plain", "box muted"))):
                share = float(found[key][layer, head])
                data = {"head": f"{layer}.{head}", "first": key, "share": f"{share:.4f}"}
                s.box(x + k * bar, y_of(share), bar - 1, base - y_of(share), cls=cls, data=data, rx=0)
        s.text(left + (layer * nh + nh / 2) * (2 * bar + 2), base + 12, f"block {layer}", cls="label small")
    s.line(left, y_of(found["uniform"]), right, y_of(found["uniform"]), cls="line dash", data={"uniform": f"{found['uniform']:.4f}"})
    s.text(left + 4, 20, "share of attention on the first position", cls="label small dim", anchor="start")
    s.box(left, base + 26, bar, bar, cls="box primary", rx=0)
    s.text(left + bar + 4, base + 31, "page opens with <|endoftext|>, as in training", cls="label small", anchor="start")
    s.box(left, base + 42, bar, bar, cls="box muted", rx=0)
    s.text(left + bar + 4, base + 47, "the same page without it", cls="label small", anchor="start")
    s.line(left, base + 63, left + bar, base + 63, cls="line dash")
    s.text(left + bar + 4, base + 63, f"attention spread evenly ({found['uniform']:.3f})", cls="label small", anchor="start")
    best = np.unravel_index(int(found["eos"].argmax()), found["eos"].shape)
    alt = (
        f"Bars for the {L * nh} heads of the book's small trained model, two per head: the mean share of attention that "
        f"positions {SINK_SKIP + 1} to {SINK_TOKENS} give to the first position over {found['pages']} held-out pages. With "
        f"<|endoftext|> first, head {best[0]}.{best[1]} gives it {found['eos'][best]:.2f}; without that token the same head "
        f"gives the first word {found['plain'][best]:.2f}. Evenly spread attention would give {found['uniform']:.3f}."
    )
    caption = (
        f"Attention sinks in the book's own model ({L} blocks of {nh} heads, trained with <|endoftext|> before every page): each "
        f"head's mean attention on the first position from positions {SINK_SKIP + 1}–{SINK_TOKENS} of {found['pages']} held-out pages "
        "it never trained on."
    )
    return s.render("attention-sinks", alt), alt, caption
