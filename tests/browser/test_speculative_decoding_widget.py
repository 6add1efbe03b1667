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
from widget_checks import fits_a_phone, press_go, refuses_a_prompt_too_long, refuses_out_of_range, set_fields

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


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


def shown_probs(row) -> list[tuple[float, float | None]]:
    """(draft, model) probability of each proposal a round shows; None where the model did not check it."""
    return [
        (float(q), None if p is None else float(p))
        for q, p in row.locator(".tok[data-fate]").evaluate_all("els => els.map((e) => [e.dataset.draftProb, e.dataset.targetProb ?? null])")
    ]


def decode(p, widget, timeout=180_000):
    press_go(p, widget, WIDGET, timeout)


@pytest.mark.parametrize("case", list(CASES))
def test_greedy_is_the_references_and_the_models_own(tab, tokenizer, case):
    prompt, gamma, new_tokens = CASES[case]
    p = tab.visit(PAGE)
    widget = model_widget_ready(p, WIDGET)
    variant = widget.get_attribute("data-variant")
    served = manifest()
    assert next(v for v in served["variants"] if v["name"] == variant)["batch_invariant"], variant
    widget.locator("textarea").fill(prompt)
    set_fields(widget, gamma=gamma, maxNewTokens=new_tokens, temperature=0, compare=True)
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
        # Greedy: both distributions are their argmax, so a kept proposal had 1 and 1, the refused
        # one 1 from the draft and 0 from the model, and the model never checked the rest.
        want_probs = [(1.0, 1.0)] * a + [(1.0, 0.0)] * (1 if a < k else 0) + [(1.0, None)] * (k - a - 1 if a < k else 0)
        assert shown_probs(row) == want_probs, (i, shown_probs(row))
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
    set_fields(widget, gamma=3, maxNewTokens=20, temperature=1, seed=5, compare=True)
    decode(p, widget)
    assert widget.get_attribute("data-state") == "ready", status.inner_text()
    tokens = json.loads(widget.get_attribute("data-tokens"))
    proposed = json.loads(widget.get_attribute("data-proposed"))
    accepted = json.loads(widget.get_attribute("data-accepted"))
    assert len(tokens) == 20 == sum(accepted) + len(proposed)
    assert all(0 <= a <= k <= 3 for a, k in zip(accepted, proposed, strict=True))
    alone = json.loads(widget.get_attribute("data-alone-tokens"))
    first = next((i for i, (x, y) in enumerate(zip(alone, tokens, strict=True)) if x != y), None)
    verdict = "the same text" if first is None else f"a different sample from token {first + 1} on"
    assert f"The model alone: {verdict}" in widget.locator(".summary").inner_text()

    # Each probability shown is the draft's and the model's softmax at that point of the text, as
    # onnxruntime computes them on the same graphs (a proposal after a refusal: the draft's only).
    served = manifest()
    variant = widget.get_attribute("data-variant")
    target = logits_fn(served, variant, served["config"])
    draft = logits_fn(served["draft"], variant, served["draft"]["config"])
    prompt_ids = tokenizer.encode(widget.locator("textarea").input_value())
    rows = widget.locator(".rounds > li")
    written = 0  # tokens written before the round
    for r, (a, k) in enumerate(zip(accepted, proposed, strict=True)):
        shown = shown_probs(rows.nth(r))
        proposals = rows.nth(r).locator(".tok[data-fate]").evaluate_all("els => els.map((e) => Number(e.dataset.token))")
        assert len(proposals) == k and proposals[:a] == tokens[written : written + a]
        for i, (x, (q_shown, p_shown)) in enumerate(zip(proposals, shown, strict=True)):
            ids = prompt_ids + tokens[:written] + proposals[:i]
            assert q_shown == pytest.approx(softmax(draft(ids)[-1])[x], abs=1e-4), (r, i)
            if i <= a:
                assert p_shown == pytest.approx(softmax(target(ids)[-1])[x], abs=1e-4), (r, i)
            else:
                assert p_shown is None, (r, i)
        labels = rows.nth(r).locator(".tok.kept, .tok.refused").evaluate_all("els => els.map((e) => e.getAttribute('aria-label'))")
        assert all("draft " in label and ", model " in label for label in labels), labels
        written += a + 1

    # Out-of-range settings are refused with the range, and Decode waits for a valid value.
    cases = [
        ("gamma", "9", "Proposals a round must be a whole number from 1 to 8"),
        ("gamma", "0", "from 1 to 8"),
        ("maxNewTokens", "65", "Max new tokens must be a whole number from 1 to 64"),
        ("temperature", "3", "The temperature must be a number from 0 to 2"),
    ]
    refuses_out_of_range(widget, cases, {"gamma": "4", "maxNewTokens": "12", "temperature": "0"})

    # A prompt and length the model cannot hold: the worker's message gives the numbers.
    set_fields(widget, maxNewTokens=12)
    refuses_a_prompt_too_long(p, widget, WIDGET, tokenizer, manifest()["config"]["n_positions"], 12)

    # Stop: pressed at once, the run ends after the round in progress and shows what it wrote.
    widget.locator("textarea").fill("The model")
    set_fields(widget, gamma=1, maxNewTokens=64, compare=True)
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
    set_fields(widget, gamma=4, maxNewTokens=16)
    decode(p, widget)
    fits_a_phone(p, widget, "tokens a pass")


def test_a_missing_draft_file_offers_retry(page):
    draft = manifest()["draft"]
    files = {f["path"] for v in draft["variants"] for f in v["files"]}
    prefix = f"models/{model_dir().name}/"
    fault = FileFault(page.page, f"**/{prefix}draft/**", "404", lambda path: path.removeprefix(prefix) in files)
    p = page.goto(PAGE)
    widget = model_widget_ready(p, WIDGET)
    set_fields(widget, maxNewTokens=6)
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
    set_fields(widget, maxNewTokens=6)
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
    set_fields(widget, gamma=2, maxNewTokens=5, temperature=0, compare=True)
    decode(p, widget, timeout=300_000)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    tokens = json.loads(widget.get_attribute("data-tokens"))
    assert len(tokens) == 5
    assert json.loads(widget.get_attribute("data-alone-tokens")) == tokens
    assert len(json.loads(widget.get_attribute("data-proposed"))) >= 2  # several rounds, each cache cut back after each
