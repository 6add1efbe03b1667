"""The static SVG figures (sitebuild.figures, placed by figure_hook.py).

Every figure renders valid SVG with a viewBox, alt text and a caption, and colours nothing
itself; every figure that shows numbers shows the ones the demos and config code compute
(recomputed here, read back from the SVG's data-* attributes); the hook numbers figures in
page order; and each figure is placed on a page and sits inline in the built site.
"""

import functools
import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from gpt2_vocab import hf_tokenizer
from mkdocs.exceptions import PluginError
from site_under_test import SITE

from demos.attention import scaled_dot_product_attention
from demos.bpe import train_bpe
from demos.circuits import circuits
from demos.decoding import beam_search
from demos.embeddings import DENSE_VECTORS, WORDS
from demos.ffn import mlp_shapes
from demos.flash import memory_traffic
from demos.kv_cache import kv_cache_bytes
from demos.kv_cache import presets as kv_presets
from demos.mixed_precision import flush
from demos.moe import route
from demos.optim import compare
from demos.quantization import outlier_product
from demos.rope_scaling import wavelengths
from demos.sampling import next_token_distribution
from demos.sharding import model_state_memory
from demos.size import presets as size_presets
from demos.superposition import superposition
from model_export.gpt2 import GPT2Config
from model_export.layout import PIECE_BYTES
from model_export.tables import PARITY_IDS
from model_export.variants import VARIANTS, variant_order
from sitebuild import figure_hook
from sitebuild.figures import FIGURES, attention, decoding, efficiency, families, inside, pipeline, scaling, sections, training

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SVG_NS = "{http://www.w3.org/2000/svg}"
COLOUR_ATTRS = {"fill", "stroke", "color", "style", "stop-color", "flood-color"}


@functools.cache
def drawn(name):
    """The figure once per worker (several tests read it; the attention-sink one runs a model)."""
    svg, alt, caption = FIGURES[name]()
    return ET.fromstring(svg), alt, caption


def all_with(root, attr):
    return [e for e in root.iter() if attr in e.attrib]


def placements():
    """figure name -> the docs pages (relative paths) whose Markdown places it."""
    where = {}
    for page in sorted(DOCS.rglob("*.md")):
        for m in figure_hook.MARKER.finditer(page.read_text(encoding="utf-8")):
            where.setdefault(m["name"], []).append(page.relative_to(DOCS).as_posix())
    return where


# --- every figure -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_is_valid_accessible_svg(name):
    root, alt, caption = drawn(name)
    assert root.tag == f"{SVG_NS}svg"
    assert re.fullmatch(r"0 0 \d+(\.\d+)? \d+(\.\d+)?", root.get("viewBox"))
    assert root.get("role") == "img"
    title = root.find(f"{SVG_NS}title")
    assert title is not None and title.get("id") == root.get("aria-labelledby") == f"figure-{name}-title"
    assert title.text == alt and len(alt.split()) >= 12, "alt text should say what the figure shows"
    assert len(caption.split()) >= 8
    assert not list(root.iter(f"{SVG_NS}script")) and not list(root.iter(f"{SVG_NS}style"))


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_colours_only_through_classes(name):
    root, _, _ = drawn(name)
    for element in root.iter():
        for attr in COLOUR_ATTRS & set(element.attrib):
            assert element.get(attr) == "currentColor", f"{name}: {element.tag} has {attr}={element.get(attr)!r}"
        assert not any(k.startswith("on") for k in element.attrib), f"{name}: event handler on {element.tag}"
    svg = FIGURES[name]()[0]
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(|hsl\(", svg), f"{name}: a literal colour"


def test_every_figure_is_placed_on_a_page():
    where = placements()
    assert sorted(where) == sorted(FIGURES), "every registered figure is used, and only those"
    assert all(len(pages) == 1 for pages in where.values()), where


# --- the numbers each figure shows, recomputed -----------------------------------------

SMALL = GPT2Config()


def check_gpt2_block(root):
    assert int(root.get("data-n-embd")) == SMALL.n_embd == 768
    assert int(root.get("data-n-head")) == SMALL.n_head
    assert int(root.get("data-d-ff")) == 4 * SMALL.n_embd
    attn = all_with(root, "data-head-dim")[0]
    assert int(attn.get("data-head-dim")) == SMALL.n_embd // SMALL.n_head


def check_forward_pass(root):
    C, V = SMALL.n_embd, SMALL.vocab_size
    shapes = [e.get("data-out-shape") for e in all_with(root, "data-out-shape")]
    assert shapes == ["T", f"T x {C}", f"T x {C}", f"T x {C}", f"T x {C}", f"T x {V}", f"{V}"]
    text = " ".join(e.text or "" for e in root.iter())
    assert f"{SMALL.n_layer} × Transformer block" in text and f"{SMALL.n_positions} × {C}" in text


def check_qkv(root):
    assert int(root.get("data-n-embd")) == SMALL.n_embd and int(root.get("data-d-qkv")) == 3 * SMALL.n_embd
    parts = {e.get("data-part"): e.get("data-shape") for e in all_with(root, "data-part")}
    assert parts == dict.fromkeys("QKV", f"T x {SMALL.n_embd}")
    assert float(all_with(root, "data-scale")[0].get("data-scale")) == math.sqrt(SMALL.head_dim)


def check_mlp(root):
    assert int(root.get("data-d-ff")) == 4 * SMALL.n_embd and int(root.get("data-n-embd")) == SMALL.n_embd
    z = np.linspace(-4, 4, 801)
    exact_min = float((0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))).min())
    assert float(all_with(root, "data-min")[0].get("data-min")) == pytest.approx(exact_min, abs=2e-3)


def check_head_circuits(root):
    shown = {e.get("data-circuit"): (int(e.get("data-rows")), int(e.get("data-cols")), int(e.get("data-rank"))) for e in all_with(root, "data-circuit")}
    assert shown == {"qk": (SMALL.n_embd, SMALL.n_embd, SMALL.head_dim), "ov": (SMALL.n_embd, SMALL.n_embd, SMALL.head_dim)}
    r = circuits(d_model=48, n_head=SMALL.n_embd // SMALL.head_dim, tokens=3)  # GPT-2's 12 heads, scaled down: rank = head width
    assert r["qk_rank"] == r["ov_rank"] == [48 // 12] * 12


def check_gated_ffn(root):
    shown = {e.get("data-kind"): (int(e.get("data-params")), int(e.get("data-d-ff"))) for e in all_with(root, "data-kind")}
    gelu_ffn, gated = mlp_shapes(d_model=768), mlp_shapes(d_model=768, kind="swiglu")
    assert shown == {"gelu": (gelu_ffn["params"]["total"], 3072), "swiglu": (gated["params"]["total"], 2048)}
    assert gated["params"]["total"] == 3 * 768 * 2048 and abs(gated["params"]["total"] - gelu_ffn["params"]["total"]) < 4000


def check_tokens_per_language(root):
    tok = hf_tokenizer()
    bars = {e.get("data-language"): (int(e.get("data-tokens")), int(e.get("data-chars"))) for e in all_with(root, "data-language")}
    assert bars == {lang: (len(tok.encode(text).ids), len(text)) for lang, text in sections.LANGUAGE_LINES}
    assert bars["Japanese"][0] > 2 * bars["English"][0]
    # the widget's "Other languages" example is the same sentence (the figure owns the lines)
    widget = (ROOT / "site_src" / "widgets" / "tx-tokenizer.js").read_text(encoding="utf-8")
    assert "\\n".join(text for _, text in sections.LANGUAGE_LINES) in widget


def check_rope_scaling(root):
    w = wavelengths(**families.ROPE_SCALING)
    lines = {e.get("data-method"): (float(e.get("data-first")), float(e.get("data-last"))) for e in all_with(root, "data-method")}
    assert set(lines) == set(families.ROPE_SCALING_LINES)
    for method, (first, last) in lines.items():
        assert first == pytest.approx(w[method][0], abs=1e-4) and last == pytest.approx(w[method][-1], abs=0.1)
    assert lines["yarn"][0] == lines["none"][0] and lines["linear"][0] == pytest.approx(4 * lines["none"][0], abs=1e-3)
    assert int(root.get("data-slow-pairs")) == sum(v > 4096 for v in w["none"])
    assert sorted(int(e.get("data-length")) for e in all_with(root, "data-length")) == [4096, 16384]


def check_superposition(root):
    points = all_with(root, "data-model")
    assert len(points) == 2 * len(sections.SUPERPOSITION_DENSITIES)
    for e in points:
        r = superposition(density=float(e.get("data-density")))
        assert float(e.get("data-error")) == pytest.approx(r[f"{e.get('data-model')}_error"], abs=1e-5)
    first = superposition(density=sections.SUPERPOSITION_DENSITIES[0])
    assert first["winner"] == "superposition" and float(root.get("data-crossover")) > 0.05


def check_speculative(root):
    labels = {float(e.get("data-alpha")): float(e.get("data-at-10")) for e in all_with(root, "data-alpha")}
    assert set(labels) == set(decoding.SPEC_ALPHAS)
    for alpha, value in labels.items():
        simulated = 0.0  # the expected length, summed as the chance that the first k draft tokens all survive
        for k in range(11):
            simulated += alpha**k
        assert value == pytest.approx(simulated, abs=1e-4)


def grids(root):
    return {e.get("data-mask"): [[c == "1" for c in row] for row in e.get("data-allowed").split("/")] for e in all_with(root, "data-mask")}


def check_attention_masks(root):
    t = len(attention.MASK_TOKENS)
    pad = np.array([w == "<pad>" for w in attention.MASK_TOKENS])
    causal = np.tril(np.ones((t, t), bool))
    g = grids(root)
    assert (np.array(g["causal"]) == causal).all()
    assert (np.array(g["padding"]) == ~pad[None, :].repeat(t, 0)).all()
    assert (np.array(g["both"]) == (causal & ~pad[None, :])).all()
    x = [[1.0]] * t
    assert g["both"] == scaled_dot_product_attention(x, x, x, causal=True, key_padding_mask=pad.tolist())["allowed"]


def check_multi_head(root):
    assert int(root.get("data-n-head")) == SMALL.n_head and int(root.get("data-head-dim")) == SMALL.head_dim
    heads = all_with(root, "data-head")
    assert len(heads) == SMALL.n_head and {h.get("data-shape") for h in heads} == {f"T x {SMALL.head_dim}"}


def check_sliding_window(root):
    t, w = attention.WINDOW_T, attention.WINDOW
    q, k = np.indices((t, t))
    g = grids(root)
    assert (np.array(g["window"]) == ((q - k >= 0) & (q - k < w))).all()
    counts = [int(e.get("data-scores")) for e in all_with(root, "data-scores")]
    assert counts == [t * (t + 1) // 2, sum(min(i + 1, w) for i in range(t))]


def check_gqa(root):
    shape = kv_presets()[attention.GQA_PRESET]
    got = {e.get("data-variant"): int(e.get("data-bytes-per-token")) for e in all_with(root, "data-variant")}
    for name, kv in (("MHA", shape["n_head"]), ("GQA", shape["gqa_kv_heads"]), ("MQA", 1)):
        assert got[name] == kv_cache_bytes(shape["n_layer"], kv, shape["d_head"], 1, "float16")["bytes_per_token"]
        assert got[name] == 2 * shape["n_layer"] * kv * shape["d_head"] * 2


def check_mla(root):
    shape = attention.MLA_SHAPE
    got = {e.get("data-variant"): int(e.get("data-bytes")) for e in all_with(root, "data-variant")}
    L, H, d = shape["n_layer"], shape["n_head"], shape["d_head"]
    assert got == {"MHA": 2 * L * H * d * 2, "GQA": 2 * L * 8 * d * 2, "MLA": L * (shape["d_latent"] + shape["d_rope"]) * 2, "MQA": 2 * L * d * 2}
    assert got["MQA"] < got["MLA"] < got["GQA"] < got["MHA"]


def check_flash(root):
    n = attention.TILE_T // attention.TILE
    tiles = all_with(root, "data-tile")
    assert len(tiles) == n * (n + 1) // 2
    traffic = memory_traffic(seq_len=attention.TILE_T, d_head=4, block_q=attention.TILE, block_k=attention.TILE, causal=True)
    assert int(all_with(root, "data-tiles")[0].get("data-tiles")) == traffic["tiles"] == len(tiles)
    assert int(all_with(root, "data-naive-scores")[0].get("data-naive-scores")) == 4 * attention.TILE_T**2


def check_kv_cache(root):
    rows = all_with(root, "data-bytes")
    assert [int(e.get("data-tokens")) for e in rows] == list(range(3, 3 + len(rows)))
    for e in rows:
        n = int(e.get("data-tokens"))
        assert int(e.get("data-bytes")) == kv_cache_bytes(SMALL.n_layer, SMALL.n_head, SMALL.head_dim, n, "float16")["total_bytes"]
        assert int(e.get("data-bytes")) == 2 * SMALL.n_layer * SMALL.n_embd * 2 * n


def check_quantization_outliers(root):
    points = all_with(root, "data-method")
    assert len(points) == len(efficiency.QUANT_OUTLIERS) * len(efficiency.QUANT_LINES)
    for e in points:
        out = outlier_product(outlier=float(e.get("data-outlier")))
        assert float(e.get("data-error")) == pytest.approx(out["errors"][e.get("data-method")], abs=1e-5)
    at = {(e.get("data-method"), float(e.get("data-outlier"))): float(e.get("data-error")) for e in points}
    assert at[("per_tensor", 50)] > 4 * at[("per_tensor", 1)]  # the outlier ruins one scale per tensor
    assert at[("llm_int8", 50)] < at[("per_tensor", 50)] / 10 and at[("smoothquant", 50)] < at[("per_tensor", 50)] / 2


def check_moe(root):
    x, w = efficiency.moe_inputs()
    r = route(x.tolist(), w.tolist(), efficiency.MOE_TOP_K)
    loads = [int(e.get("data-tokens")) for e in all_with(root, "data-expert")]
    assert loads == r["tokens_per_expert"] and sum(loads) == efficiency.MOE_TOKENS * efficiency.MOE_TOP_K
    assert float(all_with(root, "data-aux-loss")[0].get("data-aux-loss")) == pytest.approx(r["aux_loss"], abs=5e-4)
    routes = [[int(i) for i in e.get("data-experts").split(",")] for e in all_with(root, "data-experts")]
    assert routes == r["experts"]


def check_gradient_range(root):
    rows = all_with(root, "data-zero")
    assert [float(e.get("data-scale")) for e in rows] == [1.0, training.LOSS_SCALE]
    for e in rows:
        out = flush(float(e.get("data-scale")), "float16")
        assert float(e.get("data-zero")) == pytest.approx(out["zero"], abs=5e-5)
        assert float(e.get("data-overflow")) == pytest.approx(out["overflow"], abs=5e-5)
    assert float(rows[0].get("data-zero")) > 0.4 > 0.01 > float(rows[1].get("data-zero"))


def check_optimizer_paths(root):
    runs = compare(steps=training.OPTIMIZER_STEPS, lr=training.OPTIMIZER_LR)
    losses = {e.get("data-optimizer"): float(e.get("data-loss")) for e in all_with(root, "data-optimizer")}
    assert set(losses) == set(runs)
    for name, loss in losses.items():
        assert loss == pytest.approx(runs[name]["loss"][-1], rel=1e-5)
    assert len(all_with(root, "data-optimizer")) == 4


def check_zero_memory(root):
    bars = all_with(root, "data-gb")
    assert [int(e.get("data-stage")) for e in bars] == [0, 1, 2, 3]
    for e in bars:
        gb = model_state_memory(training.ZERO_PARAMS, training.ZERO_GPUS, int(e.get("data-stage")))["total_gb"]
        assert float(e.get("data-gb")) == pytest.approx(gb, abs=1e-4)


def check_bpe(root):
    r = train_bpe(families.BPE_CORPUS, families.BPE_MERGES)
    merges = [e.get("data-pair").split(" ") for e in all_with(root, "data-pair")]
    assert merges == r["merges"]
    assert [int(e.get("data-vocab-size")) for e in all_with(root, "data-vocab-size")] == [s["vocab_size"] for s in r["steps"]]
    words = {e.get("data-word"): e.get("data-tokens").split(" ") for e in all_with(root, "data-word")}
    assert words == {w["word"]: w["tokens"] for w in r["words"]}


def check_rope(root):
    points = all_with(root, "data-m")
    assert [int(e.get("data-m")) for e in points] == families.ROPE_POSITIONS
    theta = 10000.0 ** (-2 * families.ROPE_PAIR / families.ROPE_D)
    for e in points:
        m = int(e.get("data-m"))
        assert float(e.get("data-x")) == pytest.approx(math.cos(m * theta), abs=1e-4)
        assert float(e.get("data-y")) == pytest.approx(math.sin(m * theta), abs=1e-4)


def check_scaling_law(root):
    assert float(root.get("data-alpha-n")) == 0.076 and float(root.get("data-n-c")) == 8.8e13  # Kaplan et al. (2020), eq. 1.1
    points = all_with(root, "data-loss")
    assert [int(e.get("data-n")) for e in points] == [10**e for e in range(6, 13)]
    for e in points:
        assert float(e.get("data-loss")) == pytest.approx((8.8e13 / int(e.get("data-n"))) ** 0.076, abs=1e-4)
    assert float(all_with(root, "data-doubling")[0].get("data-doubling")) == pytest.approx(0.9487, abs=1e-4)  # the page's ~0.95


def check_compute_optimal(root):
    by_id = {p["id"]: p for p in size_presets()}
    points = all_with(root, "data-model")
    assert [e.get("data-model") for e in points] == list(scaling.MODELS)
    for e in points:
        p = by_id[e.get("data-model")]
        n, d = int(e.get("data-n")), int(e.get("data-d"))
        assert (n, d) == (p["published"], p["train_tokens"])
        assert float(e.get("data-c")) == pytest.approx(6 * n * d, rel=1e-3)
    assert float(all_with(root, "data-tokens-per-param")[0].get("data-tokens-per-param")) == 20


def check_beam(root):
    r = beam_search(decoding.BEAM_WIDTH)
    assert all_with(root, "data-best")[0].get("data-best") == " ".join(r["best"]["tokens"])
    boxes = all_with(root, "data-logprob")
    expected = [(" ".join(c["tokens"]), f"{c['logprob']:.3f}", str(c["kept"]).lower()) for step in r["steps"] for c in step]
    assert [(e.get("data-tokens"), e.get("data-logprob"), e.get("data-kept")) for e in boxes] == expected


def check_top_k_top_p(root):
    got = [int(e.get("data-num-kept")) for e in all_with(root, "data-num-kept")]
    want = []
    for logits in decoding.STEPS.values():
        want.append(next_token_distribution(logits, top_k=decoding.TOP_K)["num_kept"])
        want.append(next_token_distribution(logits, top_p=decoding.TOP_P)["num_kept"])
    assert got == want == [3, 1, 3, 7]  # the numbers the top-p page's text gives


def check_temperature(root):
    bars = all_with(root, "data-temperature")
    got = {(float(e.get("data-temperature")), int(e.get("data-token"))): float(e.get("data-p")) for e in bars}
    z = np.array(decoding.TEMPERATURE_LOGITS, float)
    for t in decoding.TEMPERATURES:
        p = np.exp(z / t) / np.exp(z / t).sum()
        assert [got[t, i] for i in range(len(z))] == pytest.approx(p, abs=5e-4)
    assert [got[0.5, 0], got[1, 2], got[2, 0]] == [0.867, 0.090, 0.506]  # the temperature page's table


def check_embedding_sum(root):
    C, V, P = SMALL.n_embd, SMALL.vocab_size, SMALL.n_positions
    assert (int(root.get("data-n-embd")), int(root.get("data-vocab-size")), int(root.get("data-n-positions"))) == (C, V, P)
    tables = {e.get("data-table"): e.get("data-shape") for e in all_with(root, "data-table")}
    assert tables == {"wte": f"{V} x {C}", "wpe": f"{P} x {C}"}
    example = hf_tokenizer().encode(pipeline.running_example()).ids  # stage 1's running example, no leading space
    assert example[0] == 6601 and example[1:] == PARITY_IDS[1:]  # the export's parity prompt has the space (6060)
    assert [int(e.get("data-id")) for e in all_with(root, "data-id")] == example == [int(i) for i in root.get("data-ids").split()]
    assert [int(e.get("data-position")) for e in all_with(root, "data-position")] == list(range(len(example)))
    assert {int(e.get("data-width")) for e in all_with(root, "data-width")} == {C}
    assert f"{len(PARITY_IDS)} x {C}" in [e.get("data-shape") for e in all_with(root, "data-shape")]


def check_lm_head(root):
    C, V = SMALL.n_embd, SMALL.vocab_size
    assert (int(root.get("data-n-embd")), int(root.get("data-vocab-size"))) == (C, V) == (768, 50257)
    shapes = [e.get("data-shape") for e in all_with(root, "data-shape")]
    assert shapes == [f"T x {C}", f"{C}", f"{C} x {V}", f"{V} x {C}", f"{V}"]
    assert int(all_with(root, "data-logits")[0].get("data-logits")) == V


def check_autoregression_loop(root):
    t = len(PARITY_IDS)
    assert int(root.get("data-prompt")) == t and int(root.get("data-steps")) == 3
    fed = [(int(e.get("data-fed")), int(e.get("data-cached"))) for e in all_with(root, "data-fed")]
    assert fed == [(t, 0), (1, t), (1, t + 1)]  # the prefill, then one new token over the cache
    ctx = [(int(e.get("data-context")), int(e.get("data-after"))) for e in all_with(root, "data-context")]
    assert ctx == [(t, t + 1), (t + 1, t + 2), (t + 2, t + 3)]


def check_one_hot_vs_dense(root):
    words = root.get("data-words").split()
    assert words == ["king", "queen", "apple", "bread"]
    hot = {e.get("data-word"): int(e.get("data-hot")) for e in all_with(root, "data-hot")}
    assert hot == {w: WORDS.index(w) for w in words}
    values = {(e.get("data-word"), e.get("data-dim")): float(e.get("data-value")) for e in all_with(root, "data-value")}
    assert values == {(w, dim): v for w in words for dim, v in zip(("royalty", "gender", "age", "food", "person"), DENSE_VECTORS[w], strict=True)}
    for e in all_with(root, "data-cos"):
        a, b = (np.array(DENSE_VECTORS[w]) for w in e.get("data-pair").split())
        want = 0.0 if e.get("data-kind") == "one-hot" else a @ b / np.linalg.norm(a) / np.linalg.norm(b)
        assert float(e.get("data-cos")) == pytest.approx(want, abs=5e-3)
    kinds = [(e.get("data-kind"), e.get("data-pair"), e.get("data-cos")) for e in all_with(root, "data-cos")]
    assert [k[2] for k in kinds if k[0] == "dense"] == ["0.49", "0.05", "1.00"]  # king-queen near, king-apple far, apple-bread near


def check_context_window(root):
    n = SMALL.n_positions
    assert int(root.get("data-n-positions")) == n == 1024
    prompt = int(root.get("data-prompt"))
    rows = [(int(e.get("data-total")), int(e.get("data-dropped")), int(e.get("data-kept"))) for e in all_with(root, "data-total")]
    for total, dropped, kept in rows:
        assert (dropped, kept) == (max(0, total - n), min(total, n)) and total > prompt
    assert [d for _, d, _ in rows] == [0, 0, 476]  # fits, exactly full, then the oldest tokens fall out


def check_export_pipeline(root):
    assert root.get("data-variants").split() == [e.get("data-variant") for e in all_with(root, "data-variant")] == list(VARIANTS)
    assert {"q4", "q8", "fp16", "q4x", "q8x"} == set(VARIANTS)
    assert int(all_with(root, "data-piece-bytes")[0].get("data-piece-bytes")) == PIECE_BYTES == 40_000_000  # the page's 40 MB
    orders = {e.get("data-backend"): tuple(e.get("data-order").split()) for e in all_with(root, "data-backend")}
    assert orders == {backend: tuple(names) for backend, names in variant_order(list(VARIANTS)).items()}  # the manifest's order
    for backend, names in orders.items():  # only what runs there
        assert all(backend in VARIANTS[name].backends for name in names)
    assert [e.get("data-step") for e in all_with(root, "data-step")] == ["build", "validate", "tables", "probes", "package", "report", "site"]


def check_book_model_curve(root):
    """The curves end at the committed log's last evaluation, and the held-out one at the
    perplexity the recipe records (the model's own measurement, not the figure's)."""
    from model_export import train
    from model_export.weights import BOOK_MODEL_DIR

    record = json.loads((BOOK_MODEL_DIR / train.RECIPE_FILE).read_text())
    last_eval = [json.loads(line) for line in (BOOK_MODEL_DIR / train.LOG_FILE).read_text().splitlines() if "held_out_loss" in line][-1]
    ends = {e.get("data-curve"): float(e.get("data-last")) for e in all_with(root, "data-curve")}
    assert set(ends) == set(training.BOOK_CURVE_LINES)
    assert ends["held_out_loss"] == pytest.approx(math.log(record["result"]["held_out_ppl"]), abs=1e-4)
    assert ends["second_copy_loss"] == pytest.approx(last_eval["second_copy_loss"], abs=1e-4)
    assert last_eval["step"] == record["recipe"]["steps"]


def check_attention_sinks(root):
    """Every bar against the attention weights of transformers' own GPT-2 on the same windows,
    and the numbers the sliding-window page reads off the figure."""
    import torch

    from model_export.weights import BOOK_SOURCE, load_hf

    hf = load_hf(BOOK_SOURCE).model
    hf.config._attn_implementation = "eager"
    expected, windows_of = {}, attention.sink_windows()
    for key, windows in windows_of.items():
        with torch.no_grad():
            runs = [hf(input_ids=torch.tensor([ids]), output_attentions=True).attentions for ids in windows]
        per_page = [torch.stack([a[0, :, attention.SINK_SKIP :, 0].mean(-1) for a in run]) for run in runs]  # (L, nh) each
        expected[key] = torch.stack(per_page).mean(0).numpy()
    bars = {(e.get("data-head"), e.get("data-first")): float(e.get("data-share")) for e in all_with(root, "data-share")}
    L, nh = expected["eos"].shape
    assert len(bars) == 2 * L * nh
    for (head, key), share in bars.items():
        layer, h = map(int, head.split("."))
        assert share == pytest.approx(expected[key][layer, h], abs=1e-3), (head, key)
    uniform = float(all_with(root, "data-uniform")[0].get("data-uniform"))
    assert uniform == pytest.approx(np.mean([1 / (t + 1) for t in range(attention.SINK_SKIP, attention.SINK_TOKENS)]), abs=1e-4)
    page = " ".join((ROOT / "docs" / "innovations" / "sliding-window.md").read_text(encoding="utf-8").split())
    order = np.argsort(-expected["eos"], axis=None)[:3]
    (l0, h0), (l1, h1), (l2, h2) = (np.unravel_index(i, expected["eos"].shape) for i in order)
    eos, plain = expected["eos"], expected["plain"]
    assert f"trained on. Past the first {attention.SINK_SKIP} tokens" in page
    assert f"would give the first position a share of {uniform:.3f}; head {l0}.{h0} gives it {eos[l0, h0]:.2f}" in page
    assert round(eos[l0, h0] / uniform) == 15 and "fifteen times as much" in page
    assert f"heads {l1}.{h1} and {l2}.{h2} give it {eos[l1, h1]:.2f} and {eos[l2, h2]:.2f}" in page
    assert f"give the page's first word {plain[l0, h0]:.2f}, {plain[l1, h1]:.2f} and {plain[l2, h2]:.2f}" in page
    assert f"on the openings of the {len(windows_of['eos'])} pages it never" in page
    assert 0.3 < plain[l0, h0] / eos[l0, h0] < 0.4  # "keeps about a third of its share"
    assert plain[l1, h1] < 1.5 * uniform  # "falls to the even share"
    assert f"Head {l0}.{h0} keeps about a third of its share and head {l1}.{h1} falls to the even share" in page
    others = np.delete(eos.flatten(), order)
    assert others.max() < 2.5 * uniform  # "the other thirteen heads stay near the even share"


def hf_streams(hf, windows):
    """Every depth's stream from transformers' GPT-2: its hidden states, with the last block's
    output taken before ``ln_f`` (transformers applies ``ln_f`` to its last hidden state)."""
    import torch

    last = []
    hook = hf.transformer.ln_f.register_forward_pre_hook(lambda module, args: last.append(args[0][0]))
    try:
        with torch.no_grad():
            runs = [hf(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[:-1] for ids in windows]
    finally:
        hook.remove()
    return torch.stack([torch.cat([*(run[d][0] for run in runs)]) for d in range(len(runs[0]))] + [torch.cat(last)]).double()  # (L + 1, N, C)


def check_lens_translators(root):
    """Every point against transformers' GPT-2 with translators fitted by torch's least squares,
    and the numbers the logit-lens page reads off the figure."""
    import torch

    from model_export.weights import BOOK_SOURCE, load_hf

    hf = load_hf(BOOK_SOURCE).model
    windows = inside.lens_windows()
    fit, held_out = hf_streams(hf, windows["fit"]), hf_streams(hf, windows["eval"])
    one = lambda x: torch.cat([x, torch.ones(x.shape[:-1] + (1,), dtype=x.dtype)], -1)  # noqa: E731
    maps = [torch.linalg.lstsq(one(x), fit[-1], driver="gelsd").solution for x in fit]
    with torch.no_grad():
        read = lambda h: torch.log_softmax(hf.lm_head(hf.transformer.ln_f(h.float())).double(), -1)  # noqa: E731
        final = read(held_out[-1])
        expected = {}
        for lens, streams in (("logit", held_out), ("linear", [one(h) @ m for h, m in zip(held_out, maps)])):
            readings = [read(h) for h in streams]
            expected[lens] = {
                "kl": [float((final.exp() * (final - r)).sum(-1).mean()) for r in readings],
                "top1": [float((r.argmax(-1) == final.argmax(-1)).double().mean()) for r in readings],
            }
    points = all_with(root, "data-lens")
    assert len(points) == 2 * len(held_out) == 10
    for p in points:
        lens, depth = p.get("data-lens"), int(p.get("data-depth"))
        assert float(p.get("data-top1")) == pytest.approx(expected[lens]["top1"][depth], abs=2e-3), (lens, depth)
        assert float(p.get("data-kl")) == pytest.approx(expected[lens]["kl"][depth], rel=2e-3, abs=2e-3), (lens, depth)
    page = " ".join((DOCS / "inside" / "logit-lens.md").read_text(encoding="utf-8").split())
    logit, linear = expected["logit"], expected["linear"]
    pct = lambda v: f"{round(100 * v)}%"  # noqa: E731
    assert f"agree with the model's top-1 next token at {pct(logit['top1'][0])} of the held-out positions, {logit['kl'][0]:.2f} nats" in page
    assert f"the same embeddings agree at {pct(linear['top1'][0])} ({linear['kl'][0]:.2f} nats)" in page
    assert f"the plain lens agrees at {', '.join(map(pct, logit['top1'][1:3]))} and {pct(logit['top1'][3])}" in page
    assert f"the translated one at {', '.join(map(pct, linear['top1'][1:3]))} and {pct(linear['top1'][3])}" in page
    assert 0.45 < linear["top1"][0] < 0.55  # "half of the model's top-1 choices"
    with torch.no_grad():
        names_itself = hf.lm_head(hf.transformer.ln_f(held_out[0].float())).argmax(-1)  # the embeddings, read plainly
    current = torch.tensor([i for ids in windows["eval"] for i in ids])
    assert f"they name the current token itself (at {pct(float((names_itself == current).double().mean()))} of the positions)" in page
    for d in range(len(held_out) - 1):  # the translated reading is nearer the output at every depth before the last
        assert linear["kl"][d] < logit["kl"][d] and linear["top1"][d] > logit["top1"][d], d


NUMBERS = {
    "gpt2-block": check_gpt2_block,
    "forward-pass": check_forward_pass,
    "embedding-sum": check_embedding_sum,
    "lm-head": check_lm_head,
    "autoregression-loop": check_autoregression_loop,
    "qkv": check_qkv,
    "mlp": check_mlp,
    "gated-ffn": check_gated_ffn,
    "head-circuits": check_head_circuits,
    "attention-masks": check_attention_masks,
    "multi-head": check_multi_head,
    "sliding-window": check_sliding_window,
    "attention-sinks": check_attention_sinks,
    "lens-translators": check_lens_translators,
    "gqa-mqa": check_gqa,
    "mla-cache": check_mla,
    "flash-tiles": check_flash,
    "kv-cache": check_kv_cache,
    "quantization-outliers": check_quantization_outliers,
    "moe-routing": check_moe,
    "bpe-merges": check_bpe,
    "rope-rotation": check_rope,
    "rope-scaling": check_rope_scaling,
    "scaling-law": check_scaling_law,
    "compute-optimal": check_compute_optimal,
    "beam-tree": check_beam,
    "top-k-top-p": check_top_k_top_p,
    "temperature": check_temperature,
    "speculative-tokens": check_speculative,
    "one-hot-vs-dense": check_one_hot_vs_dense,
    "context-window": check_context_window,
    "tokens-per-language": check_tokens_per_language,
    "superposition": check_superposition,
    "export-pipeline": check_export_pipeline,
    "gradient-range": check_gradient_range,
    "zero-memory": check_zero_memory,
    "optimizer-paths": check_optimizer_paths,
    "book-model-curve": check_book_model_curve,
}
DIAGRAMS = {"pre-post-norm", "encoder-decoder", "three-families", "zero-few-shot"}  # no numbers to check


def test_every_figure_is_checked_or_a_diagram():
    assert set(NUMBERS) | DIAGRAMS == set(FIGURES) and not set(NUMBERS) & DIAGRAMS


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_figure_numbers_are_the_computed_ones(name):
    NUMBERS[name](drawn(name)[0])


# --- the hook ---------------------------------------------------------------------------


def test_hook_numbers_figures_in_page_order_and_links_references():
    page = "See [[figure: multi-head]] and [[figure: gpt2-block]].\n\n<!-- figure: gpt2-block -->\n\ntext\n\n<!-- figure: multi-head -->\n"
    out = figure_hook.expand_figures(page)
    assert out.index('id="figure-gpt2-block"') < out.index('id="figure-multi-head"')
    assert "<figcaption>Figure 1. " in out.split('id="figure-multi-head"')[0]
    assert "<figcaption>Figure 2. " in out.split('id="figure-multi-head"')[1]
    assert out.startswith("See [Figure 2](#figure-multi-head) and [Figure 1](#figure-gpt2-block).")
    assert "<!--" not in out and "\n\n" not in out.split("<figure")[1].split("</figure>")[0]


@pytest.mark.parametrize(
    "page, message",
    [
        ("<!-- figure: no-such-figure -->\n", "unknown figure"),
        ("<!-- figure: gpt2-block -->\n\n<!-- figure: gpt2-block -->\n", "twice"),
        ("[[figure: multi-head]]\n\n<!-- figure: gpt2-block -->\n", "does not place"),
    ],
)
def test_hook_fails_the_build_on_bad_markers(page, message):
    with pytest.raises(PluginError, match=message):
        figure_hook.expand_figures(page)


def test_hook_is_registered():
    assert "sitebuild/figure_hook.py" in (ROOT / "mkdocs.yml").read_text()


# --- the built site ---------------------------------------------------------------------

FIGURE_HTML = re.compile(r'<figure class="tx-figure" id="figure-(?P<name>[\w-]+)">(?P<body>.*?)</figure>', re.S)


@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="no built site (TX_SITE or site/)")
@pytest.mark.parametrize("name, page", sorted((n, p[0]) for n, p in placements().items()))
def test_built_page_has_the_figure_inline(name, page):
    built = SITE / (page[: -len("/index.md")] if page.endswith("index.md") else page[: -len(".md")]) / "index.html"
    html = built.read_text(encoding="utf-8")
    found = {m["name"]: m["body"] for m in FIGURE_HTML.finditer(html)}
    assert name in found, f"{page}: figure {name} not in {built}"
    body = found[name]
    assert "<svg" in body and "<figcaption>Figure " in body and "<script" not in body
    number = list(found).index(name) + 1
    assert f"<figcaption>Figure {number}. " in body
    assert f'href="#figure-{name}"' in html, f"{page}: the text never refers to figure {name}"
