"""<tx-next-token> shows the same top-10 as onnxruntime in Python on the same ONNX file.

The comparisons run on a widget added to the page with a `variant` attribute naming a
variant that onnxruntime reproduces to ~1e-6 (fp32 or q4; see EXACT_VARIANTS in
generate_reference.py): q8's logits differ by ~1e-2 between WASM and x86, enough
to reorder a random-weight model's nearly tied top ten.
"""

import numpy as np
import pytest

from generate_reference import ServedGraph, add_variant_widget, exact_variant, graph_path
from served import manifest, model_dir

pytestmark = pytest.mark.browser

TOP = 10


@pytest.fixture(scope="module")
def reference():
    """top10(text, variant) -> (ids, probs) from HF tokenizers + onnxruntime (CPU) on the served files."""
    from transformers import GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast.from_pretrained(model_dir())
    sessions = {}

    def top10(text, variant):
        if variant not in sessions:
            sessions[variant] = ServedGraph(graph_path(model_dir(), manifest(), variant), manifest()["config"])
        logits = sessions[variant].logits(tokenizer.encode(text))[-1].astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-logits, kind="stable")[:TOP]
        return order.tolist(), probs[order].tolist()

    return top10


def add_exact_widget(p, backend):
    """Put a <tx-next-token variant=...> after the page's own one; returns its selector."""
    return add_variant_widget(p, "tx-next-token", exact_variant(manifest(), backend), "document.querySelector('tx-next-token').after(el)")


def shown(widget):
    rows = widget.locator("tbody tr")
    assert rows.count() == TOP
    ids = [int(rows.nth(i).get_attribute("data-id")) for i in range(TOP)]
    probs = [float(rows.nth(i).get_attribute("data-prob")) for i in range(TOP)]
    return ids, probs


def wait_ready(page, selector="tx-next-token", timeout=120_000):
    page.wait_for_function(
        "(sel) => { const el = document.querySelector(sel);"
        " return el.dataset.state === 'ready' && el.shadowRoot.querySelectorAll('tbody tr').length > 0"
        " || el.dataset.state === 'error'; }",
        arg=selector,
        timeout=timeout,
    )
    widget = page.locator(selector)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    return widget


def check_against_reference(widget, reference):
    text = widget.locator("textarea").input_value()
    ids, probs = shown(widget)
    want_ids, want_probs = reference(text, widget.get_attribute("data-variant"))
    assert ids == want_ids
    assert probs == pytest.approx(want_probs, abs=1e-5)


def test_wasm_top10_matches_onnxruntime(tab, reference):
    p = tab.visit("")
    wait_ready(p)  # the page's own widget, with the default variant
    selector = add_exact_widget(p, "wasm")
    widget = wait_ready(p, selector)
    assert widget.get_attribute("data-backend") == "wasm"
    badge = widget.locator(".badge").inner_text()
    threads = p.evaluate("navigator.hardwareConcurrency")
    assert f"{min(4, threads)} thread" in badge, badge  # cross-origin isolated: WASM threads on
    check_against_reference(widget, reference)

    # A new prompt from the keyboard gives a new, still matching distribution.
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("textarea").fill("naïve café — 東京 🤗 and the")
    p.wait_for_function(f"(sel) => Number(document.querySelector(sel).dataset.runs) > {runs}", arg=selector)
    widget = wait_ready(p, selector)
    check_against_reference(widget, reference)


def test_webgpu_top10_matches_onnxruntime(webgpu_page, reference):
    p = webgpu_page.goto("")
    assert p.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())"), (
        "this Chromium offers no WebGPU adapter even with --enable-unsafe-webgpu"
    )
    wait_ready(p, timeout=240_000)
    widget = wait_ready(p, add_exact_widget(p, "webgpu"), timeout=240_000)
    assert widget.get_attribute("data-backend") == "webgpu"
    check_against_reference(widget, reference)


def test_context_limit_is_a_message_not_a_crash(tab):
    p = tab.visit("")
    widget = wait_ready(p)
    n_positions = manifest()["config"]["n_positions"]
    widget.locator("textarea").fill(" a" * (n_positions + 5))
    p.wait_for_function("() => document.querySelector('tx-next-token').dataset.state === 'error'", timeout=60_000)
    assert f"at most {n_positions}" in widget.locator(".status").inner_text()
