"""<tx-next-token> shows the same top-10 as onnxruntime in Python on the same ONNX file."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser

SITE = Path(os.environ.get("TX_SITE", Path(__file__).resolve().parents[2] / "site"))
TOP = 10


def model_dir() -> Path:
    name = json.loads((SITE / "models" / "index.json").read_text())["default"]
    return SITE / "models" / name


@pytest.fixture(scope="module")
def reference():
    """top10(text) -> (ids, probs) from HF tokenizers + onnxruntime (CPU) on the served files."""
    import onnxruntime as ort
    from transformers import GPT2TokenizerFast

    directory = model_dir()
    manifest = json.loads((directory / "manifest.json").read_text())
    cfg = manifest["config"]
    tokenizer = GPT2TokenizerFast.from_pretrained(directory)
    session = ort.InferenceSession(str(directory / manifest["variants"][0]["files"][0]["path"]),
                                   providers=["CPUExecutionProvider"])
    head_dim = cfg["n_embd"] // cfg["n_head"]

    def top10(text):
        ids = np.array([tokenizer.encode(text)], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "position_ids": np.arange(ids.shape[1], dtype=np.int64)[None]}
        for i in range(cfg["n_layer"]):
            for kv in ("key", "value"):
                feeds[f"past_key_values.{i}.{kv}"] = np.zeros((1, cfg["n_head"], 0, head_dim), np.float32)
        logits = session.run(["logits"], feeds)[0][0, -1].astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-logits, kind="stable")[:TOP]
        return order.tolist(), probs[order].tolist()

    return top10


def shown(widget):
    rows = widget.locator("tbody tr")
    assert rows.count() == TOP
    ids = [int(rows.nth(i).get_attribute("data-id")) for i in range(TOP)]
    probs = [float(rows.nth(i).get_attribute("data-prob")) for i in range(TOP)]
    return ids, probs


def wait_ready(page, timeout=120_000):
    page.wait_for_function(
        "() => { const el = document.querySelector('tx-next-token');"
        " return el.dataset.state === 'ready' && el.shadowRoot.querySelectorAll('tbody tr').length > 0"
        " || el.dataset.state === 'error'; }", timeout=timeout)
    widget = page.locator("tx-next-token")
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    return widget


def check_against_reference(widget, reference):
    text = widget.locator("textarea").input_value()
    ids, probs = shown(widget)
    want_ids, want_probs = reference(text)
    assert ids == want_ids
    assert probs == pytest.approx(want_probs, abs=1e-5)


def test_wasm_top10_matches_onnxruntime(page, reference):
    p = page.goto("")
    widget = wait_ready(p)
    assert widget.get_attribute("data-backend") == "wasm"
    badge = widget.locator(".badge").inner_text()
    threads = p.evaluate("navigator.hardwareConcurrency")
    assert f"{min(4, threads)} thread" in badge, badge   # cross-origin isolated: WASM threads on
    check_against_reference(widget, reference)

    # A new prompt from the keyboard gives a new, still matching distribution.
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("textarea").fill("naïve café — 東京 🤗 and the")
    p.wait_for_function(f"() => Number(document.querySelector('tx-next-token').dataset.runs) > {runs}")
    widget = wait_ready(p)
    check_against_reference(widget, reference)


def test_webgpu_top10_matches_onnxruntime(webgpu_page, reference):
    p = webgpu_page.goto("")
    assert p.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())"), \
        "this Chromium offers no WebGPU adapter even with --enable-unsafe-webgpu"
    widget = wait_ready(p, timeout=240_000)
    assert widget.get_attribute("data-backend") == "webgpu"
    check_against_reference(widget, reference)


def test_context_limit_is_a_message_not_a_crash(page):
    p = page.goto("")
    widget = wait_ready(p)
    n_positions = json.loads((model_dir() / "manifest.json").read_text())["config"]["n_positions"]
    widget.locator("textarea").fill(" a" * (n_positions + 5))
    p.wait_for_function("() => document.querySelector('tx-next-token').dataset.state === 'error'", timeout=60_000)
    assert f"at most {n_positions}" in widget.locator(".status").inner_text()
