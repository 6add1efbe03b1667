"""Figures of GPT-2's block and forward pass, with GPT-2 small's shapes from ``model_export.gpt2``."""

from __future__ import annotations

from demos.ffn import gelu, mlp_shapes
from sitebuild.figures.svg import Svg

GELU_RANGE = (-4.0, 3.0)


def small_shapes() -> dict:
    """GPT-2 small's shapes, read from ``GPT2Config()`` and the MLP it builds."""
    from model_export.gpt2 import MLP, CausalSelfAttention, GPT2Config

    c = GPT2Config()
    return {
        "n_layer": c.n_layer,
        "n_head": c.n_head,
        "n_embd": c.n_embd,
        "head_dim": c.head_dim,
        "n_positions": c.n_positions,
        "vocab_size": c.vocab_size,
        "d_ff": MLP(c).c_fc.out_features,
        "d_qkv": CausalSelfAttention(c).c_attn.out_features,
    }


def _sublayer(s: Svg, spine: float, top: float, norm: str, name: str, sub: str, data: dict) -> float:
    """One residual branch: leave the spine, norm, sublayer, add back. Returns the bottom y."""
    cx = 235
    s.line(spine, top, cx, top)
    s.arrow(cx, top, cx, top + 14)
    s.box(cx - 95, top + 14, 190, 26, norm, cls="box muted")
    s.arrow(cx, top + 40, cx, top + 56)
    s.box(cx - 95, top + 56, 190, 40, name, sub=sub, cls="box primary", data=data)
    s.line(cx, top + 96, cx, top + 118)
    s.arrow(cx, top + 118, spine + 11, top + 118)
    s.circle(spine, top + 118, 10, label="+", cls="box accent")
    return top + 128


def gpt2_block():
    """The GPT-2 block: two pre-norm residual branches around attention and the MLP."""
    d = small_shapes()
    C, H, hd, F = d["n_embd"], d["n_head"], d["head_dim"], d["d_ff"]
    s = Svg(360, 352)
    spine = 60
    s.text(spine, 12, f"x: T × {C}", cls="label bold", data={"shape": f"T x {C}"})
    s.line(spine, 22, spine, 36 + 2 * 128 + 10 - 10, cls="line spine")  # the stream, under both additions
    y = _sublayer(s, spine, 36, "LayerNorm 1", "Causal self-attention", f"{H} heads × {hd}", {"n-head": H, "head-dim": hd})
    y2 = _sublayer(s, spine, y + 10, "LayerNorm 2", "MLP", f"{C} → {F} → {C}, GELU", {"d-model": C, "d-ff": F})
    s.arrow(spine, y2, spine, y2 + 24)
    s.text(spine - 40, y2 + 34, f"to the next block: T × {C}", cls="label bold", anchor="start")
    s.text(4, 120, "residual", cls="label small dim", anchor="start")
    s.text(4, 134, "stream", cls="label small dim", anchor="start")
    alt = (
        f"The GPT-2 block. A residual stream of T by {C} numbers runs down the left. It branches twice: "
        f"first through LayerNorm 1 and causal self-attention with {H} heads of width {hd}, then through "
        f"LayerNorm 2 and an MLP from {C} to {F} and back to {C}; each branch's output is added back to the stream."
    )
    caption = (
        "The GPT-2 block (GPT-2 small's widths). Each sublayer reads a normalised copy of the residual stream "
        "and adds its result back (pre-norm); the stream itself is never normalised inside the block."
    )
    return s.render("gpt2-block", alt, {"n-embd": C, "n-head": H, "d-ff": F}), alt, caption


def forward_pass():
    """The forward pass from token ids to logits, each arrow labelled with its shape."""
    d = small_shapes()
    C, L, V, P = d["n_embd"], d["n_layer"], d["vocab_size"], d["n_positions"]
    steps = [
        ("token ids", "T", "T"),
        ("token embedding wte", f"{V} × {C} table", f"T x {C}"),
        ("+ position embedding wpe", f"{P} × {C} table", f"T x {C}"),
        (f"{L} × Transformer block", "attention + MLP", f"T x {C}"),
        ("final LayerNorm ln_f", "", f"T x {C}"),
        ("unembedding (wteᵀ, tied)", f"{C} × {V}", f"T x {V}"),
        ("softmax of the last row", "next-token probabilities", f"{V}"),
    ]
    s = Svg(360, 40 + 62 * len(steps))
    y = 10
    for i, (name, sub, shape) in enumerate(steps):
        cls = "box primary" if "block" in name else "box"
        s.box(60, y, 240, 38, name, sub=sub or None, cls=cls, data={"step": i, "out-shape": shape})
        s.arrow(180, y + 38, 180, y + 60)
        s.text(188, y + 49, shape.replace(" x ", " × "), cls="label small bold", anchor="start", data={"shape": shape})
        y += 62
    s.text(180, y + 4, "the next token's distribution", cls="label small dim")
    alt = (
        f"GPT-2 small's forward pass as a column of boxes: T token ids, the token embedding ({V} by {C}) and the "
        f"position embedding ({P} by {C}) give T by {C}; {L} blocks keep T by {C}; the final LayerNorm, then the "
        f"tied unembedding gives T by {V} logits, and the softmax of the last row the next-token probabilities."
    )
    caption = (
        f"The forward pass with GPT-2 small's shapes (T tokens, T ≤ {P}). Every block keeps the shape T × {C}; only the last step leaves the model's width."
    )
    return s.render("forward-pass", alt, {"n-layer": L, "n-embd": C, "vocab-size": V, "n-positions": P}), alt, caption


def pre_post_norm():
    """Post-norm (the 2017 Transformer) beside pre-norm (GPT-2): where the LayerNorm sits."""
    s = Svg(360, 264)
    for x0, title, pre in ((10, "post-norm (2017)", False), (190, "pre-norm (GPT-2)", True)):
        cx, spine = x0 + 100, x0 + 20
        s.text(x0 + 80, 12, title, cls="label bold")
        s.line(spine, 24, spine, 228, cls="line spine")
        s.arrow(spine, 212, spine, 236)
        for top in (34, 124):
            s.line(spine, top, cx, top)
            if pre:
                s.arrow(cx, top, cx, top + 8)
                s.box(cx - 50, top + 8, 100, 20, "LayerNorm", cls="box muted")
                s.arrow(cx, top + 28, cx, top + 36)
                s.box(cx - 50, top + 36, 100, 22, "sublayer", cls="box primary")
                s.line(cx, top + 58, cx, top + 70)
                s.arrow(cx, top + 70, spine + 9, top + 70)
                s.circle(spine, top + 70, 8, label="+", cls="box accent")
            else:
                s.arrow(cx, top, cx, top + 10)
                s.box(cx - 50, top + 10, 100, 22, "sublayer", cls="box primary")
                s.line(cx, top + 32, cx, top + 44)
                s.arrow(cx, top + 44, spine + 9, top + 44)
                s.circle(spine, top + 44, 8, label="+", cls="box accent")
                s.box(spine - 14, top + 58, 100, 20, "LayerNorm", cls="box muted")
    s.text(90, 252, "stream normalised", cls="label small dim")
    s.text(270, 252, "stream untouched", cls="label small dim")
    alt = (
        "Two residual streams side by side. Left, post-norm: each sublayer's output is added to the stream and the sum "
        "goes through a LayerNorm that sits on the stream itself. Right, pre-norm: the LayerNorm sits on the branch, "
        "before each sublayer, and the stream is only ever added to."
    )
    caption = (
        "Post-norm against pre-norm. "
        "In pre-norm (GPT-2 and most later models) an identity path runs from the embedding to the last block, which keeps deep stacks trainable."
    )
    return s.render("pre-post-norm", alt), alt, caption


def qkv():
    """From the block's input to Q, K and V and the T × T attention matrix, with GPT-2 small's widths."""
    d = small_shapes()
    C, Q3, H, hd = d["n_embd"], d["d_qkv"], d["n_head"], d["head_dim"]
    s = Svg(360, 340)
    s.box(90, 8, 180, 28, f"LN₁(x): T × {C}", cls="box", data={"shape": f"T x {C}"})
    s.arrow(180, 36, 180, 54)
    s.text(188, 45, f"× c_attn ({C} × {Q3}) + bias", cls="label small", anchor="start")
    s.box(40, 56, 280, 28, f"[Q | K | V]: T × {Q3}", cls="box primary", data={"shape": f"T x {Q3}"})
    for i, name in enumerate("QKV"):
        x = 40 + i * 100
        s.arrow(x + 40, 84, x + 40, 102)
        s.box(x, 104, 80, 28, f"{name}: T × {C}", cls="box accent" if name == "V" else "box primary", data={"part": name, "shape": f"T x {C}"})
    s.text(180, 328, f"all per head: {H} heads, each T × {hd}", cls="label small dim")
    s.line(80, 132, 80, 172)
    s.line(180, 132, 180, 172)
    s.arrow(80, 172, 120, 184)
    s.arrow(180, 172, 140, 184)
    s.box(60, 186, 140, 40, "Q Kᵀ / √d", sub=f"T × T (√{hd} = {hd**0.5:g})", cls="box", data={"scale": f"{hd**0.5:g}"})
    s.arrow(130, 226, 130, 242)
    s.box(40, 244, 180, 24, "+ causal mask, softmax", cls="box muted")
    s.arrow(130, 268, 130, 284)
    s.line(280, 132, 280, 298)
    s.arrow(280, 298, 222, 298)
    s.box(60, 286, 160, 28, f"weights · V: T × {hd}", cls="box primary", data={"shape": f"T x {hd}"})
    s.lines(322, 200, ["queries ask,", "keys answer,", "values are", "handed over"])
    alt = (
        f"The block's normalised input, T by {C}, times the fused {C} by {Q3} weight gives T by {Q3}, cut into Q, K and V of T by {C} "
        f"each. Per head (T by {hd}), Q times K transposed over the square root of {hd} gives a T by T score matrix, which the causal "
        "mask and softmax turn into weights that average the rows of V."
    )
    caption = (
        f"Q, K and V in GPT-2 small: one {C} × {Q3} product, sliced in three. "
        "Each head then compares every query with every key (the T × T matrix) and mixes the values with the resulting weights."
    )
    return s.render("qkv", alt, {"n-embd": C, "d-qkv": Q3, "head-dim": hd}), alt, caption


def gelu_points(n: int = 57) -> list[tuple[float, float]]:
    """``(z, GELU(z))`` on ``GELU_RANGE``, tanh approximation as in GPT-2 (``demos.ffn.gelu``)."""
    lo, hi = GELU_RANGE
    zs = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    return list(zip(zs, gelu(zs, approximate="tanh")))


def mlp():
    """The MLP's widen, GELU and narrow, with GPT-2 small's widths, and the GELU curve."""
    d = small_shapes()
    C, F = d["n_embd"], d["d_ff"]
    s = Svg(360, 230)
    s.box(10, 10, 140, 28, f"u: T × {C}", cls="box", data={"shape": f"T x {C}"})
    s.arrow(80, 38, 80, 56)
    s.text(88, 47, f"W₁: {C} × {F}", cls="label small", anchor="start")
    s.box(10, 58, 140, 28, f"T × {F}", cls="box primary", data={"shape": f"T x {F}"})
    s.arrow(80, 86, 80, 104)
    s.box(10, 106, 140, 28, "GELU, element-wise", cls="box accent")
    s.arrow(80, 134, 80, 152)
    s.text(88, 143, f"W₂: {F} × {C}", cls="label small", anchor="start")
    s.box(10, 154, 140, 28, f"T × {C}", cls="box", data={"shape": f"T x {C}"})
    s.text(80, 200, "each token on its own", cls="label small dim")
    # The GELU curve on the right.
    x0, y0, w, h = 190, 20, 160, 170
    (lo, hi), (ylo, yhi) = GELU_RANGE, (-1.0, 3.0)

    def px(z):
        return x0 + w * (z - lo) / (hi - lo)

    def py(v):
        return y0 + h - h * (v - ylo) / (yhi - ylo)

    s.line(x0, py(0), x0 + w, py(0), cls="line thin")
    s.line(px(0), y0, px(0), y0 + h, cls="line thin")
    s.polyline([(px(ylo), py(ylo)), (px(hi), py(hi))], cls="line dash")  # the identity, for comparison
    pts = gelu_points()
    s.polyline([(px(z), py(v)) for z, v in pts], cls="curve", data={"min": f"{min(v for _, v in pts):.4f}"})
    s.text(x0 + w / 2, y0 + h + 14, "GELU(z), tanh form", cls="label small bold")
    s.text(px(hi) - 4, py(hi) + 22, "≈ z", cls="label small", anchor="end")
    s.text(px(lo) + 2, py(0) - 10, "≈ 0", cls="label small", anchor="start")
    alt = (
        f"Left, the MLP of GPT-2 small: T by {C} widened by a {C} by {F} weight to T by {F}, GELU applied to every number, and "
        f"narrowed by a {F} by {C} weight back to T by {C}. Right, the GELU curve: close to zero for negative inputs, close to "
        "the identity for positive ones, with a small dip below zero."
    )
    caption = (
        f"The MLP widens each token to {F} features, bends them with GELU (curve from demos.ffn.gelu) and narrows them back to {C}. "
        "The dashed line is the identity."
    )
    return s.render("mlp", alt, {"n-embd": C, "d-ff": F}), alt, caption


def gated_ffn():
    """GPT-2's MLP beside LLaMA's gated FFN (SwiGLU), with GPT-2 small's width d = 768 in both."""
    gelu_ffn, gated = mlp_shapes(d_model=768), mlp_shapes(d_model=768, kind="swiglu")
    C, F, G = 768, gelu_ffn["d_ff"], gated["d_ff"]
    s = Svg(360, 266)
    s.text(80, 12, "GPT-2: GELU MLP", cls="label small bold")
    s.box(10, 20, 140, 26, f"x: T × {C}", cls="box")
    s.arrow(80, 46, 80, 62)
    s.text(88, 56, f"W_fc: {C} × {F}", cls="label small", anchor="start")
    s.box(10, 64, 140, 26, "GELU", cls="box accent")
    s.arrow(80, 90, 80, 106)
    s.text(88, 100, f"W_proj: {F} × {C}", cls="label small", anchor="start")
    s.box(10, 108, 140, 26, f"T × {C}", cls="box")
    total = gelu_ffn["params"]["total"]
    s.text(80, 152, f"{total:,} parameters", cls="label small", data={"kind": "gelu", "params": total, "d-ff": F})
    s.text(270, 12, "LLaMA: SwiGLU", cls="label small bold")
    s.box(200, 20, 140, 26, f"x: T × {C}", cls="box")
    s.arrow(233, 46, 233, 64)
    s.arrow(307, 46, 307, 64)
    s.box(200, 66, 66, 26, "Swish", cls="box accent")
    s.box(274, 66, 66, 26, "linear", cls="box")
    s.arrow(233, 92, 262, 110)
    s.arrow(307, 92, 278, 110)
    s.box(240, 112, 60, 26, "⊙", cls="box primary")
    s.arrow(270, 138, 270, 156)
    s.box(200, 158, 140, 26, f"T × {C}", cls="box")
    s.text(270, 200, f"W_gate, W_up: {C} × {G}", cls="label small")
    s.text(270, 214, f"W_down: {G} × {C}", cls="label small")
    total_gated = gated["params"]["total"]
    s.text(270, 232, f"{total_gated:,} parameters", cls="label small", data={"kind": "swiglu", "params": total_gated, "d-ff": G})
    s.text(180, 256, f"hidden width {F:,} with two matrices, {G:,} with three", cls="label small dim")
    alt = (
        f"Left, GPT-2's MLP: x, T by {C}, times W_fc to {F} features, GELU, times W_proj back to {C}: {total:,} parameters with biases. "
        f"Right, LLaMA's SwiGLU: x goes through two {C} by {G} matrices; one is passed through Swish, the two are multiplied element "
        f"by element, and W_down brings the product back to {C}: {total_gated:,} parameters, no biases."
    )
    caption = "Two feed-forward blocks with nearly the same parameter count (shapes from demos.ffn.mlp_shapes, d = 768)."
    return s.render("gated-ffn", alt), alt, caption


def head_circuits():
    """One head's two circuits, with GPT-2 small's widths: QK decides the pattern, OV what moves."""
    d = small_shapes()
    C, D = d["n_embd"], d["head_dim"]
    s = Svg(360, 232)
    s.text(180, 12, f"one head of GPT-2 small: stream width {C}, head width {D}", cls="label small bold")
    # QK: two stream vectors in, one score out.
    s.box(10, 26, 100, 26, "x_t (query side)", cls="box")
    s.box(10, 92, 100, 26, "x_s (key side)", cls="box")
    s.box(140, 52, 120, 40, f"W_QK: {C} × {C}", cls="box primary", sub=f"rank ≤ {D}", data={"circuit": "qk", "rows": C, "cols": C, "rank": D})
    s.arrow(110, 39, 140, 62)
    s.arrow(110, 105, 140, 82)
    s.box(286, 56, 64, 32, "score", cls="box accent")
    s.arrow(260, 72, 286, 72)
    s.text(200, 112, "where to look: x_t W_QK x_sᵀ / 8", cls="label small dim")
    # OV: the attended vector in, the destination's update out.
    s.box(10, 150, 100, 26, "x_s (attended)", cls="box")
    s.box(140, 142, 120, 40, f"W_OV: {C} × {C}", cls="box primary", sub=f"rank ≤ {D}", data={"circuit": "ov", "rows": C, "cols": C, "rank": D})
    s.arrow(110, 163, 140, 163)
    s.box(286, 146, 64, 32, "update", cls="box accent")
    s.arrow(260, 162, 286, 162)
    s.text(200, 202, "what to move: weight × x_s W_OV, into the stream at t", cls="label small dim")
    s.text(180, 224, f"W_QK = W_Q W_Kᵀ, W_OV = W_V W_O, both of rank ≤ {D}", cls="label small dim")
    alt = (
        f"Two diagrams for one GPT-2 small head. The QK circuit, a {C} by {C} matrix of rank at most {D}, takes the query-side and key-side "
        f"stream vectors and gives their score. The OV circuit, also {C} by {C} of rank at most {D}, takes the attended vector and gives "
        "the update written into the destination's stream."
    )
    caption = f"A head's QK and OV circuits (shapes from model_export.gpt2.GPT2Config: d = {C}, head width {D}), after Elhage et al. (2021)."
    return s.render("head-circuits", alt), alt, caption
