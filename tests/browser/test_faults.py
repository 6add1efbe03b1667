"""Every fault gets a message and a way back.

Each test breaks a real file (or the WebGPU device, or a worker script) with a Playwright
route (faults.py), and checks, in the widget's shadow root, on a 375 px wide phone viewport:
within 20 s the status line says what failed in words (no parser message, no stack trace),
a Retry button is shown, it hides while the retry runs, and once the fault is gone Retry
brings the widget to ``data-state="ready"`` with output that matches CPython or onnxruntime.

A stalled download must say so while it waits: those tests lower the limits of
``site_src/runtime/limits.js`` through ``window.TX_LIMITS`` (set before the page loads).
Screenshots of each error state go to build/screenshots/faults/ (not committed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from demos import positional, rope, sampling, size
from faults import SITE, FileFault, manifest, model_dir, model_file_urls
from generate_reference import ServedGraph, graph_path
from widget_checks import wait_state

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots" / "faults"
PHONE = {"width": 375, "height": 812}
MESSAGE_WITHIN_MS = 20_000
READY_WITHIN_MS = 90_000
#: Short stall limits for the stalled-server tests: the notice after 1 s, the failure after 4 s.
QUICK = {"stallNoticeMs": 1000, "stallTimeoutMs": 4000}
#: What a reader must never see: parser messages, stack traces, raw exception names.
RAW = re.compile(
    r"Unexpected token|is not valid JSON at|at position \d|\bat \w+ \(|TypeError|SyntaxError|"
    r"CompileError|Traceback|undefined|\[object "
)


def _lock_file(name: str) -> str:
    """The wheel the built site serves for package `name` (a placeholder while it is not built:
    the tests then fail in `site_url`, saying so; collecting them must not)."""
    lock_path = SITE / "assets" / "vendor" / "pyodide" / "pyodide-lock.json"
    if not lock_path.is_file():
        return f"({name}: site not built)"
    return json.loads(lock_path.read_text())["packages"][name]["file_name"]


NUMPY_WHEEL = _lock_file("numpy")
DEMOS_WHEEL = _lock_file("demos")


# ---------------------------------------------------------------- helpers


def open_phone(watched, path, limits=None, init=None):
    """Open `path` on a 375 px wide viewport, with `limits` as window.TX_LIMITS and `init` run first."""
    p = watched.page
    p.set_viewport_size(PHONE)
    if limits:
        p.add_init_script(f"window.TX_LIMITS = {json.dumps(limits)};")
    if init:
        p.add_init_script(init)
    return watched.goto(path)


def status_text(widget) -> str:
    return widget.locator(".status-text").inner_text()


def retry_button(widget):
    return widget.locator(".status button.retry")


def expect_message(p, tag, words, shot, timeout=MESSAGE_WITHIN_MS):
    """Wait (at most 20 s) for the widget's error; check its words, the Retry button, the phone layout."""
    wait_state(p, tag, ["error"], timeout)
    widget = p.locator(tag)
    text = status_text(widget)
    for word in words:
        assert word in text, text
    assert not RAW.search(text), f"a low-level message reached the reader: {text}"
    button = retry_button(widget)
    assert button.is_visible() and button.is_enabled(), text
    assert button.evaluate("b => b.localName === 'button' && b.tabIndex === 0"), "Retry is not a focusable button"
    check_fits(widget)
    screenshot(widget, shot)
    return text


def screenshot(widget, name):
    """Save the widget as build/screenshots/faults/<name>.png (the page's sticky header hidden)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"), style=".md-header { visibility: hidden; }")


def check_fits(widget):
    """The status line and the card stay inside the 375 px viewport (nothing scrolls sideways)."""
    sizes = widget.evaluate("""el => {
      const status = el.shadowRoot.querySelector('.status');
      const card = el.shadowRoot.querySelector('.card');
      return { status: [status.scrollWidth, status.clientWidth], right: card.getBoundingClientRect().right,
               page: [document.documentElement.scrollWidth, document.documentElement.clientWidth] };
    }""")
    assert sizes["status"][0] <= sizes["status"][1] + 1, sizes
    assert sizes["right"] <= PHONE["width"] + 1, sizes
    assert sizes["page"][0] <= sizes["page"][1] + 1, sizes


# Records each time the widget's Retry button is hidden (its `hidden` attribute added), from now on.
WATCH_RETRY = """el => {
  el.__retryHidden = 0;
  el.__retryWatch?.disconnect();
  el.__retryWatch = new MutationObserver((records) => {
    for (const r of records) if (r.target.matches('.status .retry') && r.oldValue === null) el.__retryHidden++;
  });
  el.__retryWatch.observe(el.shadowRoot, { subtree: true, attributes: true, attributeFilter: ['hidden'], attributeOldValue: true });
}"""


def click_retry(p, tag):
    """Press Retry; while the retry runs its button is hidden. A retry can fail again before a
    second round trip could look (a damaged file under load), so the page records the hiding."""
    widget = p.locator(tag)
    widget.evaluate(WATCH_RETRY)
    retry_button(widget).click()
    p.wait_for_function("el => el.__retryHidden > 0", arg=widget.element_handle(), timeout=5_000)
    return widget


def retry_until_ready(p, tag):
    """Press Retry (the fault is gone) and wait for the widget to be ready."""
    widget = click_retry(p, tag)
    wait_state(p, tag, ["ready", "error"], READY_WITHIN_MS)
    assert widget.get_attribute("data-state") == "ready", status_text(widget)
    assert retry_button(widget).is_hidden()
    return widget


# ---------------------------------------------------------------- Python widgets and their checks


def sampling_is_correct(p):
    """<tx-sampling> shows demos.sampling's probabilities for its request."""
    p.wait_for_function("() => document.querySelector('tx-sampling').dataset.request", timeout=READY_WITHIN_MS)
    widget = p.locator("tx-sampling")
    request = json.loads(widget.get_attribute("data-request"))
    rows = widget.locator(".bar-row")
    probs = [float(rows.nth(i).get_attribute("data-prob")) for i in range(rows.count())]
    expected = sampling.next_token_distribution(logits=widget.evaluate("el => el.widget.logits"), **request)["probs"]
    assert probs == pytest.approx(expected, abs=1e-12)


def size_calc_is_correct(p):
    """<tx-size-calc> shows demos.size.model_size for its request."""
    p.wait_for_function("() => document.querySelector('tx-size-calc').dataset.request", timeout=READY_WITHIN_MS)
    widget = p.locator("tx-size-calc")
    expected = size.model_size(**json.loads(widget.get_attribute("data-request")))
    shown = widget.evaluate("""el => Object.fromEntries([...el.shadowRoot.querySelectorAll('td[data-key]')]
        .map(td => [td.dataset.key, td.dataset.value]))""")
    assert shown
    for key, value in shown.items():
        want = expected
        for part in key.split("."):
            want = want[part]
        assert float(value) == pytest.approx(want, rel=1e-12), key


PYTHON_WIDGETS = {
    "tx-sampling": ("sampling/", sampling_is_correct),
    "tx-size-calc": ("labs/model-size/", size_calc_is_correct),
}

PYODIDE = "**/assets/vendor/pyodide/"


@pytest.mark.parametrize(
    "file, tag, damage",
    [
        ("pyodide.asm.wasm", "tx-sampling", "it is not valid WebAssembly"),
        ("pyodide.asm.js", "tx-size-calc", "it is not valid JavaScript"),
        ("python_stdlib.zip", "tx-sampling", "it is not a zip archive"),
        ("pyodide-lock.json", "tx-size-calc", "it is not valid JSON"),
        (NUMPY_WHEEL, "tx-sampling", "its checksum does not match"),
        (DEMOS_WHEEL, "tx-size-calc", "its checksum does not match"),
    ],
    ids=["wasm", "asm-js", "stdlib", "lock", "numpy", "demos"],
)
def test_python_file_missing_then_damaged_then_back(page, file, tag, damage):
    """A Pyodide runtime file or wheel that is missing (404), then damaged (garbage bytes):
    a message naming the file each time, Retry hidden while it runs, and Python back after."""
    path, is_correct = PYTHON_WIDGETS[tag]
    fault = FileFault(page.page, PYODIDE + file, "404")
    page.expect_errors(file)  # the HTTP 404 records of the page
    p = open_phone(page, path)
    label = "the NumPy package" if file == NUMPY_WHEEL else "the textbook's demos package" if file == DEMOS_WHEEL else "a runtime file"
    expect_message(p, tag, [f"Python could not start: {label} ({file}) could not be downloaded (HTTP 404)."], f"python-404-{file}")
    fault.kind = "garbage"
    click_retry(p, tag)
    expect_message(p, tag, [f"Python could not start: {label} ({file}) is damaged: {damage}"], f"python-damaged-{file}")
    fault.clear()
    retry_until_ready(p, tag)
    is_correct(p)


def expect_stall_notice(p, tag: str, pattern: str, shot: str):
    """While a download stalls: `tag`'s status line matches `pattern` (a regular expression), the
    widget is still loading, Retry is hidden and nothing overflows; a screenshot is taken. (The
    element has no shadow root until its module has defined it: the wait starts before that.)"""
    p.wait_for_function(
        """([tag, pattern]) => new RegExp(pattern)
                               .test(document.querySelector(tag)?.shadowRoot?.querySelector('.status-text')?.textContent ?? '')""",
        arg=[tag, pattern],
        timeout=MESSAGE_WITHIN_MS,
    )
    widget = p.locator(tag)
    assert widget.get_attribute("data-state") == "loading" and retry_button(widget).is_hidden()
    check_fits(widget)
    screenshot(widget, shot)
    return widget


def test_python_stall_says_so_then_fails_with_retry(page):
    """A runtime file that never arrives: "No data for … still waiting" while waiting, then a
    message with Retry once the stall limit passes; Retry after the server is back works."""
    fault = FileFault(page.page, PYODIDE + "pyodide.asm.wasm", "stall")
    p = open_phone(page, "sampling/", limits=QUICK)
    expect_stall_notice(p, "tx-sampling", r"No data for \d+ s — still waiting for pyodide\.asm\.wasm…", "python-stalled-waiting")
    expect_message(p, "tx-sampling", ["Python could not start: a runtime file (pyodide.asm.wasm) stopped arriving: no data for 4 s."], "python-stalled-failed")
    fault.clear()
    retry_until_ready(p, "tx-sampling")
    sampling_is_correct(p)


def test_one_retry_brings_back_every_python_widget_on_the_page(page):
    """Two Python widgets fail together; Retry in one restarts Python, and the other, which
    shows the same start failure, follows on its own."""
    fault = FileFault(page.page, PYODIDE + "python_stdlib.zip", "404")
    page.expect_errors("python_stdlib.zip")
    p = open_phone(page, "labs/positions/")
    words = ["Python could not start: a runtime file (python_stdlib.zip) could not be downloaded (HTTP 404)."]
    expect_message(p, "tx-positional", words, "python-two-widgets-positional")
    expect_message(p, "tx-rope", words, "python-two-widgets-rope")
    fault.clear()
    retry_until_ready(p, "tx-positional")
    wait_state(p, "tx-rope", ["ready"], READY_WITHIN_MS)
    for tag in ("tx-positional", "tx-rope"):
        p.wait_for_function("(tag) => document.querySelector(tag).dataset.request", arg=tag)
    widget = p.locator("tx-positional")
    readout = positional.sinusoidal_view(**json.loads(widget.get_attribute("data-request")))["readout"]
    assert float(widget.locator("[data-dot]").get_attribute("data-dot")) == pytest.approx(readout["dot"], abs=1e-12)
    widget = p.locator("tx-rope")
    assert retry_button(widget).is_hidden()
    expected = rope.rope_view(**json.loads(widget.get_attribute("data-request")))
    assert float(widget.locator("[data-score]").get_attribute("data-score")) == pytest.approx(expected["score"], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("which", ["python", "model"])
def test_worker_script_missing(page, which):
    """A worker script that does not load (HTTP 404): a message and Retry that starts a new worker."""
    script = f"{which}-worker.js"
    fault = FileFault(page.page, f"**/assets/tx/runtime/{script}", "404")
    page.expect_errors(script)
    if which == "python":
        p = open_phone(page, "sampling/")
        expect_message(p, "tx-sampling", [f"Python could not start: its worker script ({script}) could not be loaded."], "python-worker-404")
        fault.clear()
        retry_until_ready(p, "tx-sampling")
        sampling_is_correct(p)
    else:
        p = open_phone(page, "")
        expect_message(p, "tx-next-token", [f"The model could not start: its worker script ({script}) could not be loaded."], "model-worker-404")
        fault.clear()
        next_token_is_correct(retry_until_ready(p, "tx-next-token"))


# ---------------------------------------------------------------- model widgets


_sessions: dict[str, ServedGraph] = {}


def next_token_is_correct(widget):
    """<tx-next-token>'s ten rows are onnxruntime's top ten for the token ids it shows."""
    widget.page.wait_for_function("() => document.querySelector('tx-next-token').shadowRoot.querySelectorAll('tbody tr').length === 10")
    ids = [int(t.split()[1]) for t in widget.locator(".tokens .token").evaluate_all("ts => ts.map(t => t.title)")]
    variant = widget.get_attribute("data-variant")
    if variant not in _sessions:
        _sessions[variant] = ServedGraph(graph_path(model_dir(), manifest(), variant), manifest()["config"])
    logits = _sessions[variant].logits(ids)[-1].astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    order = np.argsort(-logits, kind="stable")[:10]
    rows = widget.locator("tbody tr")
    assert [int(rows.nth(i).get_attribute("data-id")) for i in range(10)] == order.tolist()
    assert [float(rows.nth(i).get_attribute("data-prob")) for i in range(10)] == pytest.approx(probs[order].tolist(), abs=1e-5)


def stage_logits_is_correct(widget):
    """<tx-stage-logits> lists onnxruntime's ten largest logits for the prompt's tokens."""
    p = widget.page
    ids = p.evaluate(
        """async (text) => {
      const { loadModel } = await import(new URL('/assets/tx/runtime/model.js', location.href).href);
      return (await loadModel({ needs: ['attentions', 'hiddenStates'] })).tokenizer.encode(text).slice(0, 16);
    }""",
        widget.locator(".pl-prompt input").input_value(),
    )
    variant = widget.get_attribute("data-variant")
    if variant not in _sessions:
        _sessions[variant] = ServedGraph(graph_path(model_dir(), manifest(), variant), manifest()["config"])
    last = _sessions[variant].logits(ids)[-1]
    rows = widget.locator("tr[data-id]")
    shown = [int(x) for x in rows.evaluate_all("rs => rs.map(r => r.dataset.id)")]
    assert shown == np.argsort(-last, kind="stable")[:10].tolist()
    logits = [float(x) for x in rows.evaluate_all("rs => rs.map(r => r.dataset.logit)")]
    assert logits == pytest.approx(last[shown].tolist(), abs=1e-3)


def _without_n_layer() -> bytes:
    m = manifest()
    m["config"] = {k: v for k, v in m["config"].items() if k != "n_layer"}
    return json.dumps(m).encode()


@pytest.mark.parametrize(
    "kind, body, path, tag, words",
    [
        ("http-500", "500", "", "tx-next-token", ["The model's file list (manifest.json) could not be downloaded (HTTP 500)."]),
        ("not-json", b"<!doctype html><title>Oops</title>", "", "tx-next-token", ["The model's file list (manifest.json) is damaged: it is not valid JSON."]),
        ("no-n_layer", None, "pipeline/06-logits/", "tx-stage-logits", ["The model's file list (manifest.json) is incomplete: it has no config.n_layer."]),
    ],
    ids=["http-500", "not-json", "missing-field"],
)
def test_manifest_faults(page, kind, body, path, tag, words):
    """The model's manifest: an HTTP error, a body that is not JSON, a field missing."""
    fault = FileFault(page.page, f"**/models/{model_dir().name}/manifest.json", body if body is not None else _without_n_layer())
    page.expect_errors("manifest.json")
    p = open_phone(page, path)
    expect_message(p, tag, words, f"manifest-{kind}")
    fault.clear()
    widget = retry_until_ready(p, tag)
    (next_token_is_correct if tag == "tx-next-token" else stage_logits_is_correct)(widget)


def _variant_files(watched_path: str) -> bool:
    prefix = f"models/{model_dir().name}/"
    return watched_path.startswith(prefix) and watched_path[len(prefix) :] in model_file_urls()


@pytest.mark.parametrize(
    "kind, words",
    [
        ("404", ["HTTP 404", "no such file"]),
        ("truncate", ["arrived truncated"]),
        ("corrupt", ["is corrupted: its sha256 does not match the manifest"]),
    ],
)
def test_model_piece_faults(page, kind, words):
    """A model file that is missing, cut short or corrupted: its message, Retry, the model after."""
    fault = FileFault(page.page, f"**/models/{model_dir().name}/**", kind, _variant_files)
    page.expect_errors("HTTP 404")
    p = open_phone(page, "")
    expect_message(p, "tx-next-token", words, f"model-piece-{kind}")
    assert fault.hits
    fault.clear()
    next_token_is_correct(retry_until_ready(p, "tx-next-token"))


def test_model_stall_says_so_and_retry_hides_while_it_runs(page):
    """A missing piece first (message, Retry); the Retry then meets a stalled server: its button
    hides, the status line says "No data for … still waiting", then the stall fails with Retry;
    with the server back, Retry loads the model."""
    fault = FileFault(page.page, f"**/models/{model_dir().name}/**", "404", _variant_files)
    page.expect_errors("HTTP 404")
    p = open_phone(page, "", limits=QUICK)
    expect_message(p, "tx-next-token", ["HTTP 404"], "model-piece-404-before-stall")
    fault.kind = "stall"
    click_retry(p, "tx-next-token")
    expect_stall_notice(p, "tx-next-token", r"No data for \d+ s — still waiting…", "model-stalled-waiting")
    expect_message(p, "tx-next-token", ["stopped sending", "nothing arrived for 4 s"], "model-stalled-failed")
    fault.clear()
    next_token_is_correct(retry_until_ready(p, "tx-next-token"))


def test_storage_quota_notice_is_readable(page):
    """No room in Cache Storage: the model runs from memory and the widget says so in a readable notice."""
    page.page.set_viewport_size(PHONE)
    cdp = page.page.context.new_cdp_session(page.page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": page.site_url.rstrip("/"), "quotaSize": 200_000})
    p = page.goto("")
    wait_state(p, "tx-next-token", ["ready", "error"], READY_WITHIN_MS)
    widget = p.locator("tx-next-token")
    next_token_is_correct(widget)
    notice = widget.locator(".notices")
    assert notice.is_visible()
    text = notice.inner_text()
    assert "Your browser has no room left to store the model (storage quota)" in text
    assert "stays in memory for this visit" in text
    assert text.count("storage quota") == 1, text  # said once, though several files failed to store
    check_fits(widget)
    screenshot(widget, "storage-quota-notice")


def test_no_webgpu_runs_on_wasm_and_says_so(page):
    """A browser without navigator.gpu: the model runs on WASM and the status line says why."""
    p = open_phone(page, "", init="delete Navigator.prototype.gpu;")
    assert p.evaluate("() => !('gpu' in navigator)")
    wait_state(p, "tx-next-token", ["ready", "error"], READY_WITHIN_MS)
    widget = p.locator("tx-next-token")
    next_token_is_correct(widget)
    assert widget.get_attribute("data-backend") == "wasm"
    assert "This browser has no WebGPU, so the model runs on the CPU (WASM)." in status_text(widget)
    assert widget.locator(".badge").inner_text().startswith("WASM")
    check_fits(widget)
    screenshot(widget, "no-webgpu")


#: Run in the model worker before its session exists: keep every GPUDevice it creates.
KEEP_DEVICES = """(() => {
  self.txDevices = [];
  const request = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = async function (...args) {
    const device = await request.apply(this, args);
    self.txDevices.push(device);
    return device;
  };
})()"""


def test_lost_webgpu_device_gives_a_message_and_retry_recreates_the_session(webgpu_page):
    """The GPU device under the WebGPU session is destroyed: the widget says so at once, with
    Retry; Retry starts a new worker and session and the top ten are right again."""
    p = webgpu_page.page
    p.set_viewport_size(PHONE)
    p.on("worker", lambda w: w.evaluate(KEEP_DEVICES) if w.url.endswith("/model-worker.js") else None)
    p = webgpu_page.goto("")
    wait_state(p, "tx-next-token", ["ready", "error"], 240_000)
    widget = p.locator("tx-next-token")
    assert widget.get_attribute("data-backend") == "webgpu", status_text(widget)
    next_token_is_correct(widget)
    model_worker = next(w for w in p.workers if w.url.endswith("/model-worker.js"))
    assert model_worker.evaluate("self.txDevices.length") >= 1
    model_worker.evaluate("self.txDevices.forEach((d) => d.destroy())")
    expect_message(p, "tx-next-token", ["The GPU stopped working for this page (WebGPU device lost", "Retry to start the model again."], "webgpu-device-lost")
    widget = retry_until_ready(p, "tx-next-token")
    assert widget.get_attribute("data-backend") == "webgpu"
    next_token_is_correct(widget)
