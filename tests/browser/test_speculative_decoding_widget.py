"""<tx-speculative> runs speculative decoding on the site's model in the browser, with the draft
the model export ships (its first blocks, an early exit), and does what the reference does:
``model_export.speculative`` with the same two graphs in onnxruntime, round for round (the
proposals kept in each round, the tokens), and the tokens are the model's own greedy ones, as
the rule promises. (The rule's sampling exactness is checked in CPython on bigram models,
tests/model_export/test_speculative_decoding.py, and on the browser's own code in node,
tests/js/speculative.test.js.)

On the book's trained model the early exit is a useful draft: a fair share of its proposals are
kept (the phenomenon decoding/speculative.md describes). The reader's controls are used as a
reader would; the numbers and the texts are read from what the widget shows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from faults import FileFault
from generate_reference import graph_path, model_widget_ready
from model_export.gpt2 import GPT2Config
from model_export.runtime import OrtGPT2, prompt_outputs
from model_export.speculative import greedy_decode, speculative_decode
from served import manifest, model_dir
from widget_checks import fits_a_phone, refuses_a_prompt_too_long, refuses_out_of_range

pytestmark = pytest.mark.browser

PAGE = "decoding/speculative/"
WIDGET = "tx-speculative"
CASES = {  # name: (prompt, proposals a round, new tokens)
    "the widget's own settings": ("The attention weights of a head", 4, 32),
    "2 proposals a round": ("A language model predicts", 2, 16),
}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import GPT2TokenizerFast

    return GPT2TokenizerFast.from_pretrained(model_dir())


def logits_fn(spec: dict, variant: str, config: dict):
    """ids -> (len(ids), V) logits of a graph in onnxruntime (`spec`: the manifest, or its draft)."""
    runner = OrtGPT2(graph_path(model_dir(), spec, variant), GPT2Config(**config), threads=1)
    return lambda ids: prompt_outputs(runner, list(ids))["logits"][0].astype(np.float64)


def settings(widget, **values):
    for name, value in values.items():
        field = widget.locator(f'[name="{name}"]')
        if field.get_attribute("type") == "checkbox":
            field.set_checked(bool(value))
        else:
            field.fill(str(value))


def decode(p, widget, timeout=180_000):
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("button.go").click()
    p.wait_for_function(f"() => Number(document.querySelector('{WIDGET}').dataset.runs) > {runs}", timeout=timeout)


@pytest.mark.parametrize("case", list(CASES))
def test_greedy_is_the_references_and_the_models_own(tab, tokenizer, case):
    prompt, gamma, new_tokens = CASES[case]
    p = tab.visit(PAGE)
    widget = model_widget_ready(p, WIDGET)
    variant = widget.get_attribute("data-variant")
    served = manifest()
    assert next(v for v in served["variants"] if v["name"] == variant)["batch_invariant"], variant
    widget.locator("textarea").fill(prompt)
    settings(widget, gamma=gamma, maxNewTokens=new_tokens, temperature=0, compare=True)
    decode(p, widget)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()

    # The reference on the same graphs: the model's served variant, and the draft's same-named one.
    draft_variant = variant if any(v["name"] == variant for v in served["draft"]["variants"]) else served["draft"]["default_variants"]["wasm"]
    target = logits_fn(served, variant, served["config"])
    draft = logits_fn(served["draft"], draft_variant, served["draft"]["config"])
    ids = tokenizer.encode(prompt)
    want = speculative_decode(target, draft, ids, new_tokens, gamma)
    tokens = json.loads(widget.get_attribute("data-tokens"))
    assert tokens == want.tokens
    assert json.loads(widget.get_attribute("data-proposed")) == want.proposed
    assert json.loads(widget.get_attribute("data-accepted")) == want.accepted
    assert tokens == greedy_decode(target, ids, new_tokens)  # the model's own greedy text
    assert json.loads(widget.get_attribute("data-alone-tokens")) == tokens  # and the widget's run of the model alone

    # The phenomenon on a trained model: the early exit's proposals are often kept (on the
    # widget's own prompt, "about a quarter": decoding/speculative.md).
    kept, proposed = sum(want.accepted), sum(want.proposed)
    assert 0.15 < kept / proposed, (kept, proposed)
    if case == "the widget's own settings":
        assert 0.2 <= kept / proposed <= 0.3, (kept, proposed)
    assert int(widget.get_attribute("data-target-passes")) == len(want.proposed) < new_tokens

    # What the reader reads: the text, each round's kept and refused proposals, the tally.
    text = widget.locator(".text").inner_text()
    assert text == prompt + tokenizer.decode(tokens, clean_up_tokenization_spaces=False)
    rows = widget.locator(".rounds > li")
    assert rows.count() == len(want.proposed)
    for i, (k, a) in enumerate(zip(want.proposed, want.accepted, strict=True)):
        row = rows.nth(i)
        assert row.locator(".tok.kept").count() == a
        assert row.locator(".tok.refused").count() == (1 if a < k else 0)
        assert row.locator(".tok.model").count() == 1
        assert row.locator(".n").inner_text() == f"round {i + 1} · {a}/{k}"
    summary = widget.locator(".summary").inner_text()
    assert f"{new_tokens} tokens from {len(want.proposed)} passes of the model: {new_tokens / len(want.proposed):.2f} tokens a pass" in summary
    assert f"{kept} of {proposed} proposals kept ({round(100 * kept / proposed)}%)" in summary
    assert f"the first {served['draft']['blocks']} of {served['config']['n_layer']} blocks, {draft_variant}" in summary
    assert "The model alone: the same text" in summary
    status = widget.locator(".status").inner_text()
    assert status == f"Done: {new_tokens} new tokens from {len(want.proposed)} passes of the model; {kept} of the draft's {proposed} proposals kept.", status


def test_sampling_limits_stop_faults_and_a_phone(tab, tokenizer):
    p = tab.visit(PAGE)
    widget = model_widget_ready(p, WIDGET)
    status = widget.locator(".status")

    # Sampling: every round keeps a prefix and adds one token; a refusal's token is the model's.
    settings(widget, gamma=3, maxNewTokens=20, temperature=1, seed=5, compare=True)
    decode(p, widget)
    assert widget.get_attribute("data-state") == "ready", status.inner_text()
    tokens = json.loads(widget.get_attribute("data-tokens"))
    proposed = json.loads(widget.get_attribute("data-proposed"))
    accepted = json.loads(widget.get_attribute("data-accepted"))
    assert len(tokens) == 20 == sum(accepted) + len(proposed)
    assert all(0 <= a <= k <= 3 for a, k in zip(accepted, proposed, strict=True))
    assert "only the distribution is the same" in widget.locator(".summary").inner_text() or "the same text" in widget.locator(".summary").inner_text()
    for cell in widget.locator(".rounds .tok.kept, .rounds .tok.refused").all():  # both models' probabilities, in words
        label = cell.get_attribute("aria-label")
        assert "draft " in label and ", model " in label, label

    # Out-of-range settings are refused with the range, and Decode waits for a valid value.
    cases = [
        ("gamma", "9", "Proposals a round must be a whole number from 1 to 8"),
        ("gamma", "0", "from 1 to 8"),
        ("maxNewTokens", "65", "Max new tokens must be a whole number from 1 to 64"),
        ("temperature", "3", "The temperature must be a number from 0 to 2"),
    ]
    refuses_out_of_range(widget, settings, cases, {"gamma": "4", "maxNewTokens": "12", "temperature": "0"})

    # A prompt and length the model cannot hold: the worker's message gives the numbers.
    settings(widget, maxNewTokens=12)
    refuses_a_prompt_too_long(p, widget, WIDGET, tokenizer, manifest()["config"]["n_positions"], 12)

    # Stop: pressed at once, the run ends after the round in progress and shows what it wrote.
    widget.locator("textarea").fill("The model")
    settings(widget, gamma=1, maxNewTokens=64, compare=True)
    runs = int(widget.get_attribute("data-runs"))
    widget.evaluate("el => { el.shadowRoot.querySelector('button.go').click(); el.shadowRoot.querySelector('button.stop').click(); }")
    p.wait_for_function(f"() => Number(document.querySelector('{WIDGET}').dataset.runs) > {runs}")
    assert widget.get_attribute("data-reason") == "stopped"
    written = len(json.loads(widget.get_attribute("data-tokens")))
    assert 1 <= written < 64
    assert status.inner_text().startswith(f"Stopped after {written} new token"), status.inner_text()
    assert "The model alone" not in widget.locator(".summary").inner_text()  # no comparison after a stop

    # A finished run fits a phone: nothing sticks out sideways at 375 px.
    widget.locator("textarea").fill("The attention weights of a head")
    settings(widget, gamma=4, maxNewTokens=16)
    decode(p, widget)
    fits_a_phone(p, widget, "tokens a pass")


def test_a_missing_draft_file_offers_retry(page):
    draft = manifest()["draft"]
    files = {f["path"] for v in draft["variants"] for f in v["files"]}
    prefix = f"models/{model_dir().name}/"
    fault = FileFault(page.page, f"**/{prefix}draft/**", "404", lambda path: path.removeprefix(prefix) in files)
    p = page.goto(PAGE)
    widget = model_widget_ready(p, WIDGET)
    settings(widget, maxNewTokens=6)
    decode(p, widget)
    assert widget.get_attribute("data-state") == "error"
    assert "HTTP 404" in widget.locator(".status").inner_text()
    assert fault.hits
    page.expect_errors("HTTP 404")
    retry = widget.locator("button.retry")
    assert retry.is_visible()

    fault.clear()
    runs = int(widget.get_attribute("data-runs"))
    retry.click()
    p.wait_for_function(f"() => Number(document.querySelector('{WIDGET}').dataset.runs) > {runs}", timeout=120_000)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    assert len(json.loads(widget.get_attribute("data-tokens"))) == 6


def test_a_model_built_without_a_draft_says_how_to_build_one(page):
    from faults import serve_patched_manifest

    patched = {k: v for k, v in manifest().items() if k != "draft"}
    serve_patched_manifest(page.page, patched)
    p = page.goto(PAGE)
    widget = model_widget_ready(p, WIDGET)
    settings(widget, maxNewTokens=6)
    decode(p, widget)
    assert widget.get_attribute("data-state") == "error"
    words = f"The {manifest()['name']} model was built without a draft model; rebuild it with model-export all (its --draft-blocks option)."
    assert words in widget.locator(".status").inner_text()
    assert widget.locator("button.retry").is_hidden()  # rebuilding the site is no retry


def test_webgpu_keeps_the_models_greedy_text(webgpu_page):
    """On WebGPU the caches stay on the GPU between passes and are read back to be cut: the
    text is still the model's own greedy text (WebGPU here is SwiftShader on the CPU, seconds a
    pass: a short run)."""
    p = webgpu_page.goto(PAGE)
    assert p.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())"), "no WebGPU adapter even with --enable-unsafe-webgpu"
    widget = model_widget_ready(p, WIDGET, timeout=240_000)
    assert widget.get_attribute("data-backend") == "webgpu"
    settings(widget, gamma=2, maxNewTokens=5, temperature=0, compare=True)
    decode(p, widget, timeout=300_000)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    tokens = json.loads(widget.get_attribute("data-tokens"))
    assert len(tokens) == 5
    assert json.loads(widget.get_attribute("data-alone-tokens")) == tokens
    assert len(json.loads(widget.get_attribute("data-proposed"))) >= 2  # several rounds, each cache cut back after each
