"""The lab widgets <tx-embeddings>, <tx-norms>, <tx-ffn>, <tx-moe>, <tx-kv-cache>, <tx-flash>,
<tx-bpe>, <tx-quant> and <tx-circuits> show exactly what the same demos calls compute in CPython,
after a reader changes a control."""

import json

import numpy as np
import pytest

from demos import bpe, circuits, embeddings, ffn, flash, kv_cache, moe, norms, quantization
from widget_checks import TOL, assert_close, fits_a_phone, press_keys, wait_error, wait_ready

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"


def attrs(widget, selector, *names):
    """The data-* attributes `names` of every element matching `selector` in the widget's shadow root."""
    return widget.evaluate(
        "(el, [selector, names]) => [...el.shadowRoot.querySelectorAll(selector)].map(e => names.map(n => e.dataset[n]))", [selector, list(names)]
    )


def shown_matrix(widget, kind, n):
    m = np.full((n, n), np.nan)
    for row, col, value in attrs(widget, f'rect[data-kind="{kind}"]', "row", "col", "value"):
        m[int(row), int(col)] = float(value)
    return m


# ---------------------------------------------------------------------------
# <tx-embeddings>


def test_embeddings_widget_matches_cpython(tab):
    p = tab.visit("labs/embeddings/")
    widget = p.locator("tx-embeddings")
    request = wait_ready(p, "tx-embeddings", {"a": "king", "b": "man", "c": "woman"})
    expected = embeddings.compare_representations(request["words"])
    n = len(request["words"])
    assert_close(shown_matrix(widget, "one_hot", n), np.eye(n), tol=0)
    assert_close(shown_matrix(widget, "dense", n), expected["dense"]["matrix"])

    # A reader ticks "prince", unticks "apple" and asks for prince − boy + girl.
    widget.locator('input[value="prince"]').check()
    widget.locator('input[value="apple"]').uncheck()
    widget.locator('select[name="a"]').select_option("prince")
    widget.locator('select[name="b"]').select_option("boy")
    widget.locator('select[name="c"]').select_option("girl")
    request = wait_ready(p, "tx-embeddings", {"a": "prince", "b": "boy", "c": "girl"})
    assert "prince" in request["words"] and "apple" not in request["words"]
    expected = embeddings.compare_representations(request["words"])
    assert_close(shown_matrix(widget, "dense", len(request["words"])), expected["dense"]["matrix"])
    ranking = attrs(widget, "tr[data-word]", "word", "cosine")
    analogy = embeddings.analogy("prince", "boy", "girl", top=5)
    assert [w for w, _ in ranking] == [r["word"] for r in analogy["ranking"]]
    assert_close([float(c) for _, c in ranking], [r["cosine"] for r in analogy["ranking"]])
    assert widget.locator("output.best").inner_text() == "princess"

    # Unticking every word is refused with a message.
    for word in request["words"]:
        widget.locator(f'input[value="{word}"]').uncheck()
    assert "at least one word" in wait_error(p, "tx-embeddings")


# ---------------------------------------------------------------------------
# <tx-norms> and <tx-ffn>


def shown_norm_stats(widget):
    return {key: [float(m), float(s), float(r)] for key, m, s, r in attrs(widget, "tr[data-norm]", "norm", "mean", "std", "rms")}


def test_norms_and_ffn_widgets_match_cpython(tab):
    p = tab.visit("labs/block/")
    widget = p.locator("tx-norms")
    request = wait_ready(p, "tx-norms")
    expected = norms.compare_norms(request["x"], eps=request["eps"])
    for key, (mean, std, rms) in shown_norm_stats(widget).items():
        assert_close([mean, std, rms], [expected[key]["mean"], expected[key]["std"], expected[key]["rms"]])

    # The reader types a shifted vector and shortens the stack with the keyboard.
    widget.locator('[name="vector"]').fill("101, 102, 103, 110")
    press_keys(widget.locator('[name="depth"]'), "ArrowLeft", 4)
    request = wait_ready(p, "tx-norms", {"x": [101, 102, 103, 110], "depth": 20})
    expected = norms.compare_norms(request["x"], eps=request["eps"])
    shown = shown_norm_stats(widget)
    for key in ("input", "layer_norm", "rms_norm"):
        assert_close(shown[key], [expected[key]["mean"], expected[key]["std"], expected[key]["rms"]])
    growth = norms.residual_stream_growth(depth=20, d_model=request["d_model"], seed=request["seed"], eps=request["eps"])
    points = attrs(widget, "[data-wiring]", "wiring", "layer", "rms")
    for wiring in ("pre_norm", "post_norm"):
        shown_rms = [float(r) for w, _, r in sorted((pt for pt in points if pt[0] == wiring), key=lambda pt: int(pt[1]))]
        assert_close(shown_rms, growth[wiring]["rms"])

    # The random vector comes from demos.norms.random_vector with the seed.
    widget.locator('[name="seed"]').fill("7")
    widget.locator('[name="random"]').click()
    shown_x = [round(v, 3) for v in norms.random_vector(d=8, seed=7, mean=3, std=2)]
    wait_ready(p, "tx-norms", {"x": shown_x, "seed": 7})

    widget.locator('[name="vector"]').fill("1, two, 3")
    assert "“two” is not a number" in wait_error(p, "tx-norms")

    ffn_widget = p.locator("tx-ffn")
    wait_ready(p, "tx-ffn")
    ffn_widget.locator('[name="x_min"]').fill("-6")
    ffn_widget.locator('[name="x_max"]').fill("2")
    ffn_widget.locator('[name="d_model"]').fill("64")
    request = wait_ready(p, "tx-ffn", {"x_min": -6, "x_max": 2, "d_model": 64})
    curves = ffn.gelu_curves(x_min=-6, x_max=2, num=request["num"])
    assert float(ffn_widget.get_attribute("data-max-diff")) == pytest.approx(curves["max_abs_difference"], abs=TOL)
    assert float(ffn_widget.get_attribute("data-at-x")) == pytest.approx(curves["at_x"], abs=TOL)
    diff = attrs(ffn_widget, "circle[data-diff]", "x", "diff")
    assert_close([float(x) for x, _ in diff], curves["x"])
    assert_close([float(d) for _, d in diff], curves["difference"])
    shapes = ffn.mlp_shapes(seq_len=request["seq_len"], d_model=64, expansion=request["expansion"])
    assert [s for (s,) in attrs(ffn_widget, "tr[data-shape]", "shape")] == [",".join(map(str, s["shape"])) for s in shapes["stages"]]
    assert int(ffn_widget.locator("[data-params]").get_attribute("data-params")) == shapes["params"]["total"]

    ffn_widget.locator('[name="x_max"]').fill("-7")
    assert "smaller than" in wait_error(p, "tx-ffn")


def test_ffn_widget_lists_llamas_gated_block(tab):
    p = tab.visit("innovations/gated-ffn/")
    widget = p.locator("tx-ffn")
    wait_ready(p, "tx-ffn", {"kind": "swiglu"})  # the page's kind="swiglu"
    widget.locator('[name="d_model"]').fill("4096")
    request = wait_ready(p, "tx-ffn", {"kind": "swiglu", "d_model": 4096})
    shapes = ffn.mlp_shapes(seq_len=request["seq_len"], d_model=4096, expansion=request["expansion"], kind="swiglu")
    assert [s for (s,) in attrs(widget, "tr[data-shape]", "shape")] == [",".join(map(str, s["shape"])) for s in shapes["stages"]]
    assert int(widget.locator("[data-params]").get_attribute("data-params")) == shapes["params"]["total"] == 3 * 4096 * 11008
    assert "45,088,768 (gate) + 45,088,768 (up) + 45,088,768 (down)" in widget.locator(".params").inner_text()
    assert "Swish(gate) ⊙ up" in widget.locator(".shapes").inner_text()
    widget.locator('[name="kind"]').select_option("gelu")
    wait_ready(p, "tx-ffn", {"kind": "gelu", "d_model": 4096})
    assert int(widget.locator("[data-params]").get_attribute("data-params")) == ffn.mlp_shapes(d_model=4096)["params"]["total"]


# ---------------------------------------------------------------------------
# <tx-moe>


def test_moe_widget_matches_cpython(tab):
    p = tab.visit("labs/moe/")
    widget = p.locator("tx-moe")
    request = wait_ready(p, "tx-moe", {"balance": False})
    result = moe.routing_collapse(**request)
    step = int(widget.get_attribute("data-step"))
    assert step == request["steps"] - 1
    bars = attrs(widget, "rect[data-expert]", "expert", "load")
    assert_close([float(v) for _, v in bars], result["load"][step], tol=0)
    assert float(widget.get_attribute("data-max-load")) == result["max_load"][step]
    label = widget.locator("svg[aria-label^='Load per expert']").get_attribute("aria-label")
    assert label.startswith("Load per expert in percent: expert 1 ") and f"expert {request['num_experts']} " in label  # E_1 … E_N, as families/moe.md

    # The reader turns balancing on, takes 20 more steps, then looks back at step 0.
    widget.locator('[name="balance"]').check()
    widget.locator('[name="steps"]').focus()
    p.keyboard.press("ArrowRight")
    p.keyboard.press("ArrowRight")
    request = wait_ready(p, "tx-moe", {"balance": True, "steps": 80})
    result = moe.routing_collapse(**request)
    bars = attrs(widget, "rect[data-expert]", "expert", "load")
    assert_close([float(v) for _, v in bars], result["load"][79], tol=0)
    assert float(widget.get_attribute("data-aux-loss")) == pytest.approx(result["aux_loss"][79], abs=TOL)
    assert max(float(v) for _, v in bars) <= 2 / request["num_experts"]
    widget.locator('[name="show"]').focus()
    p.keyboard.press("Home")
    p.wait_for_function("() => document.querySelector('tx-moe').dataset.step === '0'")
    bars = attrs(widget, "rect[data-expert]", "expert", "load")
    assert_close([float(v) for _, v in bars], result["load"][0], tol=0)

    widget.locator('[name="num_experts"]').select_option("4")
    widget.locator('[name="top_k"]').select_option("3")
    request = wait_ready(p, "tx-moe", {"num_experts": 4, "top_k": 3})
    bars = attrs(widget, "rect[data-expert]", "expert", "load")
    assert_close([float(v) for _, v in bars], moe.routing_collapse(**request)["load"][-1], tol=0)


# ---------------------------------------------------------------------------
# <tx-kv-cache> and <tx-flash>


def test_kv_cache_and_flash_widgets_match_cpython(tab):
    p = tab.visit("labs/efficiency/")
    widget = p.locator("tx-kv-cache")
    wait_ready(p, "tx-kv-cache", {"preset": "gpt2-small"})
    widget.locator('[name="preset"]').select_option("llama-7b-gqa")
    widget.locator('[name="context_length"]').fill("2048")
    widget.locator('[name="dtype"]').select_option("float16")
    widget.locator('[name="new_tokens"]').fill("64")
    request = wait_ready(p, "tx-kv-cache", {"preset": "llama-7b-gqa", "context_length": 2048, "new_tokens": 64})
    shape = dict(n_layer=request["n_layer"], n_head=request["n_head"], d_head=request["d_head"], gqa_kv_heads=request["gqa_kv_heads"])
    expected = kv_cache.compare_attention_variants(**shape, context_length=2048, dtype="float16")["variants"]
    shown = attrs(widget, "[data-variant]", "variant", "kvHeads", "bytesPerToken", "bytes")
    assert shown == [[v["name"], str(v["n_kv_head"]), str(v["bytes_per_token"]), str(v["total_bytes"])] for v in expected]
    assert shown[0][3] == str(2**30)  # 1 GiB for MHA at 2,048 tokens
    flops = kv_cache.generation_flops(request["n_layer"], request["n_head"] * request["d_head"], request["prompt_length"], 64)
    table = widget.locator(".flops tbody")
    assert float(table.get_attribute("data-without")) == flops["without_cache"]
    assert float(table.get_attribute("data-with")) == flops["with_cache"]
    assert float(table.get_attribute("data-ratio")) == pytest.approx(flops["ratio"], rel=1e-15)
    widget.locator('[name="context_length"]').fill("0")
    assert "whole number of tokens" in wait_error(p, "tx-kv-cache")

    widget = p.locator("tx-flash")
    request = wait_ready(p, "tx-flash")
    qkv = widget.evaluate("el => el.widget.qkv")

    def check_trace(request):
        trace = flash.online_softmax_trace(**qkv, row=request["row"], block_k=request["block_k"], causal=request["causal"])
        rows = attrs(widget, "tr[data-step]", "step", "max", "rescale", "sum")
        done = int(widget.get_attribute("data-step"))
        assert len(rows) == done
        for (_, m, r, s), step in zip(rows, trace["steps"]):
            assert_close([float(m), float(r), float(s)], [step["max_after"], step["rescale"], step["sum_after"]])
        return trace, done

    trace, done = check_trace(request)
    assert done == 1
    # The reader steps to the last tile: the output equals plain attention.
    widget.locator('[name="step"]').focus()
    p.keyboard.press("End")
    p.wait_for_function(f"() => document.querySelector('tx-flash').dataset.step === '{len(trace['steps'])}'")
    trace, _ = check_trace(request)
    output = json.loads(widget.locator("[data-output]").get_attribute("data-output"))
    reference = json.loads(widget.locator("[data-reference]").get_attribute("data-reference"))
    assert_close(output, trace["output"])
    assert_close(reference, flash.naive_attention(**qkv, causal=request["causal"])[request["row"]])

    # Causal mask off, two keys per tile, another seed.
    widget.locator('[name="causal"]').uncheck()
    widget.locator('[name="block_k"]').focus()
    p.keyboard.press("ArrowLeft")
    widget.locator('[name="seed"]').fill("5")
    request = wait_ready(p, "tx-flash", {"causal": False, "block_k": 2, "seed": 5})
    qkv = widget.evaluate("el => el.widget.qkv")
    trace, _ = check_trace(request)
    assert len(trace["steps"]) == 4  # 8 keys in tiles of 2, none masked
    widget.locator('[name="seq_len"]').fill("1024")
    widget.locator('[name="tile"]').select_option("128")
    request = wait_ready(p, "tx-flash", {"seq_len": 1024, "tile": 128})
    traffic = flash.memory_traffic(seq_len=1024, d_head=request["d_head"], block_q=128, block_k=128, causal=False, dtype=request["dtype"])
    shown = attrs(widget, "[data-method]", "method", "total", "bytes", "scoreMatrix")
    assert shown == [[m, str(traffic[m]["total"]), str(traffic[m]["bytes"]), str(traffic[m]["score_matrix"])] for m in ("naive", "tiled")]


# ---------------------------------------------------------------------------
# <tx-bpe>


def test_bpe_widget_matches_cpython(tab):
    p = tab.visit("labs/bpe/")
    widget = p.locator("tx-bpe")
    wait_ready(p, "tx-bpe", {"text": " unbelievable"})
    merges = p.evaluate("""async () => {
        const index = await (await fetch('../../models/index.json')).json();
        const manifest = await (await fetch(`../../models/${index.default}/manifest.json`)).json();
        return (await fetch(`../../models/${index.default}/${manifest.tokenizer.merges.path}`)).text();
    }""")
    assert json.loads(widget.get_attribute("data-tokens")) == bpe.apply_merges(" unbelievable", merges)["tokens"]

    # The reader types a sentence start (no leading space) and edits the corpus.
    widget.locator('[name="space"]').uncheck()
    widget.locator('[name="word"]').fill("Tokenization, unbelievably!")
    widget.locator('[name="corpus"]').fill("low low low lower lowest newer newest wide wider")
    press_keys(widget.locator('[name="num_merges"]'), "ArrowRight", 4)
    request = wait_ready(p, "tx-bpe", {"text": "Tokenization, unbelievably!", "num_merges": 14})
    applied = bpe.apply_merges(request["text"], merges)
    assert json.loads(widget.get_attribute("data-tokens")) == applied["tokens"]
    steps = attrs(widget, "[data-rank]", "rank", "symbols")
    expected = [s for w in applied["words"] for s in w["steps"]]
    assert [(int(r), json.loads(s)) for r, s in steps] == [(s["rank"], s["symbols"]) for s in expected]
    trained = bpe.train_bpe(request["corpus"], 14)
    rows = attrs(widget, "tr[data-pair]", "pair", "count", "ties")
    assert [(json.loads(pair), int(c), int(t)) for pair, c, t in rows] == [(s["pair"], s["count"], s["ties"]) for s in trained["steps"]]

    widget.locator('[name="corpus"]').fill("   ")
    assert "corpus is empty" in wait_error(p, "tx-bpe")


# ---------------------------------------------------------------------------
# <tx-quant>


def shown_quant(widget):
    """method -> (error, levels, the row's visible text)."""
    rows = widget.evaluate(
        "el => [...el.shadowRoot.querySelectorAll('tr[data-method]')].map(r => [r.dataset.method, r.dataset.error, r.dataset.levels, r.innerText])"
    )
    return {m: (float(e), int(n), text) for m, e, n, text in rows}


def test_quant_widget_shows_the_outlier_ruining_per_tensor_int8(tab):
    p = tab.visit("efficiency/quantization/")
    widget = p.locator("tx-quant")
    request = wait_ready(p, "tx-quant", {"outlier": 60, "channels": 1})
    expected = quantization.outlier_product(**request)
    shown = shown_quant(widget)
    assert set(shown) == set(quantization.METHODS)
    for method, (error, levels, text) in shown.items():
        assert_close(error, expected["errors"][method])
        assert levels == expected["levels"][method]
        assert f"{100 * expected['errors'][method]:.2f}%" in text and str(levels) in text  # what the reader reads
    assert shown["per_tensor"][1] < 16 and shown["llm_int8"][0] < shown["per_tensor"][0] / 10
    assert "keeps 1 dimension in 16-bit" in widget.locator(".summary").inner_text()

    # Without an outlier the four methods nearly agree; the table follows the slider.
    widget.locator('input[name="outlier"]').fill("1")
    request = wait_ready(p, "tx-quant", {"outlier": 1})
    calm = shown_quant(widget)
    assert_close(calm["per_tensor"][0], quantization.outlier_product(**request)["errors"]["per_tensor"])
    assert calm["per_tensor"][1] > 200 and "keeps 0 dimensions" in widget.locator(".summary").inner_text()

    widget.locator('input[name="channels"]').fill("9")
    assert "outlier dimensions must be a whole number from 0 to 8" in wait_error(p, "tx-quant")


# ---------------------------------------------------------------------------
# <tx-circuits>


def shown_heatmaps(widget):
    """name -> the values of each heat map the widget draws (pipeline/figures.js keeps them in data-values)."""
    maps = widget.evaluate("el => [...el.shadowRoot.querySelectorAll('figure.pl-fig')].map(f => [f.dataset.name, f.dataset.values])")
    return {name: np.array(json.loads(values), dtype=float) for name, values in maps}


def test_circuits_widget_shows_the_trained_heads_circuits(tab):
    p = tab.visit("inside/circuits/")
    widget = p.locator("tx-circuits")
    wait_ready(p, "tx-circuits", {"weights": "trained", "layer": 0, "head": 0})
    trained = circuits.trained_circuits("trained")
    for layer, head, select in ((0, 0, None), (1, 1, "1.1")):
        if select:
            widget.locator('select[name="head"]').select_option(select)
            wait_ready(p, "tx-circuits", {"layer": layer, "head": head})
        expected = next(h for h in trained["heads"] if (h["layer"], h["head"]) == (layer, head))
        shown = shown_heatmaps(widget)
        for name in ("qk", "ov", "positional", "attention"):
            assert_close(shown[name], expected[name])
        summary = widget.locator(".summary").inner_text()  # what the reader reads: the same numbers
        assert f"head {layer}.{head}" in summary
        assert f"diagonal in {round(16 * expected['own_letter'])} of 16 rows" in summary
        assert f"attended letter itself in {round(16 * expected['copying'])} of 16 rows" in summary
        assert f"eigenvalue score {expected['eigen_copying']:.2f}" in summary.replace("−", "-")
        assert f"{round(100 * expected['held_out']['earlier_copy'])}% of its attention on the earlier copy" in summary
        assert f"{trained['loss']['second']:.2f} nats on the second copy" in summary
    fits_a_phone(p, widget, "On held-out sequences written twice")

    # Before training: the same head's tables have no diagonal and its attention is spread.
    widget.locator('select[name="weights"]').select_option("initial")
    wait_ready(p, "tx-circuits", {"weights": "initial", "layer": 1, "head": 1})
    initial = next(h for h in circuits.trained_circuits("initial")["heads"] if (h["layer"], h["head"]) == (1, 1))
    assert_close(shown_heatmaps(widget)["ov"], initial["ov"])
    summary = widget.locator(".summary").inner_text()
    assert summary.startswith("Before training, head 1.1")
    assert f"attended letter itself in {round(16 * initial['copying'])} of 16 rows" in summary
