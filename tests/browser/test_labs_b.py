"""The labs' widgets (<tx-spot-the-bug>, <tx-decoding>, <tx-numerics>, <tx-guided>) show
what the same `demos` calls return in CPython, and user code runs under a time limit.

The three decoding-page widgets share one page (and so one Python worker) per module,
which keeps this file to a few Pyodide start-ups.

Sums of floats (demos.numerics) are compared exactly: IEEE addition is correctly
rounded, so Pyodide and CPython must agree to the bit. Values that pass through
`exp`, `log` or a matrix product are compared to 1e-12 relative, since the C math
library and BLAS differ between the two.
"""

import json
import time

import pytest

from demos import bugs, decoding, guided, numerics
from served import SITE
from sitebuild.serve import serve_in_thread
from watched import WatchedPage

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"

PY_TIMEOUT = 120_000  # ms: Pyodide start-up on a busy 2-core machine


# ---------------------------------------------------------------------------
# helpers


def wait_ready(page, tag, extra="true", timeout=PY_TIMEOUT):
    page.wait_for_function(
        f"() => {{ const el = document.querySelector('{tag}'); return el && (el.dataset.state === 'ready' && ({extra}) || el.dataset.state === 'error'); }}",
        timeout=timeout,
    )
    widget = page.locator(tag)
    assert widget.get_attribute("data-state") == "ready", widget.locator(".status").inner_text()
    return widget


def wait_request(page, tag, request):
    """Wait until the widget shows results for exactly these arguments."""
    page.wait_for_function(
        "([tag, want]) => { const el = document.querySelector(tag); return el.dataset.state === 'ready' && el.dataset.request === want; }",
        arg=[tag, json.dumps(request, separators=(",", ":"))],
        timeout=PY_TIMEOUT,
    )
    return page.locator(tag)


def close(value, expected):
    return value == pytest.approx(expected, rel=1e-12, abs=1e-300)


def attrs(locator, name, convert=float):
    return [convert(locator.nth(i).get_attribute(name)) for i in range(locator.count())]


def run_check(page, widget, code, timeout=PY_TIMEOUT):
    """Type code into the editor, press Check, wait for the answer; returns seconds taken."""
    checks = int(widget.get_attribute("data-checks"))
    widget.locator("textarea.code").fill(code)
    start = time.monotonic()
    widget.locator('button[name="check"]').click()
    page.wait_for_function(f"() => Number(document.querySelector('tx-spot-the-bug').dataset.checks) > {checks}", timeout=timeout)
    return time.monotonic() - start


LOOP = "def causal_attention(q, k, v):\n    while True:\n        pass\n"


# ---------------------------------------------------------------------------
# spot the bug


def test_spot_the_bug_fix_check_endless_loop_and_reveal(tab):
    p = tab.visit("labs/spot-the-bug/")
    widget = wait_ready(p, "tx-spot-the-bug", "el.dataset.bug")
    assert widget.get_attribute("data-interrupt") == "interrupt"  # the test server isolates the page
    assert widget.get_attribute("data-bug") == "causal_mask"
    assert widget.locator('select[name="bug"] option').count() == len(bugs.list_bugs())
    buggy = bugs.get_bug("causal_mask")["code"]
    assert widget.locator("textarea.code").input_value() == buggy

    # Tab in the editor indents instead of leaving it.
    editor = widget.locator("textarea.code")
    editor.focus()
    p.keyboard.press("Control+Home")
    p.keyboard.press("Tab")
    assert editor.input_value() == "    " + buggy
    assert p.evaluate("() => document.querySelector('tx-spot-the-bug').shadowRoot.activeElement.tagName") == "TEXTAREA"

    # The buggy code fails with the message CPython gives.
    run_check(p, widget, buggy)
    assert widget.get_attribute("data-result") == "failed"
    expected = bugs.check("causal_mask", buggy)
    assert widget.locator(".message").inner_text() == expected["message"]
    assert close(float(widget.get_attribute("data-max-abs-error")), expected["max_abs_error"])
    assert widget.locator(".answer").is_hidden()

    # Fix it by editing: add the mask before the softmax.
    fixed = buggy.replace(
        "    weights = np.exp(",
        "    T = scores.shape[0]\n    scores = np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, scores)\n    weights = np.exp(",
        1,
    )
    run_check(p, widget, fixed)
    assert widget.get_attribute("data-result") == "passed", widget.locator(".message").inner_text()
    assert bugs.check("causal_mask", fixed)["passed"]
    assert widget.locator(".diagnosis").inner_text() == bugs.reveal("causal_mask")["diagnosis"]

    # An endless loop is stopped at the time limit, and the next check works.
    widget.locator('select[name="limit"]').select_option("2")
    seconds = run_check(p, widget, LOOP, timeout=30_000)
    assert widget.get_attribute("data-result") == "stopped"
    stopped_after = float(widget.get_attribute("data-stopped-after"))
    assert 1.9 <= stopped_after < 3.0
    assert seconds < 2 + 4, seconds
    assert f"Stopped after {stopped_after:.1f} s (the time limit)" in widget.locator(".message").inner_text()
    run_check(p, widget, fixed)
    assert widget.get_attribute("data-result") == "passed", widget.locator(".message").inner_text()

    # The Stop button interrupts a running check long before its limit.
    widget.locator('select[name="limit"]').select_option("30")
    widget.locator("textarea.code").fill(LOOP)
    widget.locator('button[name="check"]').click()
    p.wait_for_function("() => document.querySelector('tx-spot-the-bug').dataset.result === 'running'")
    p.wait_for_timeout(500)
    start = time.monotonic()
    widget.locator('button[name="stop"]').click()
    p.wait_for_function("() => document.querySelector('tx-spot-the-bug').dataset.result === 'stopped'", timeout=10_000)
    assert time.monotonic() - start < 3
    assert "you stopped it" in widget.locator(".message").inner_text()
    run_check(p, widget, bugs.reveal("causal_mask")["reference"])
    assert widget.get_attribute("data-result") == "passed", widget.locator(".message").inner_text()

    # Another snippet: reveal the answer, use it, and see a runtime error named by its line.
    widget.locator('select[name="bug"]').select_option("head_split")
    assert widget.get_attribute("data-bug") == "head_split"
    assert widget.locator("textarea.code").input_value() == bugs.get_bug("head_split")["code"]
    widget.locator('button[name="reveal"]').click()
    p.wait_for_function("() => document.querySelector('tx-spot-the-bug').dataset.revealed === 'head_split'")
    answer = bugs.reveal("head_split")
    assert widget.locator(".reference").inner_text().strip() == answer["reference"].strip()
    widget.locator('button[name="use"]').click()
    run_check(p, widget, widget.locator("textarea.code").input_value())
    assert widget.get_attribute("data-result") == "passed", widget.locator(".message").inner_text()
    # A runtime error names the reader's line, as in CPython.
    broken = "def split_heads(x, n_heads):\n    return x.reshape(n_heads, -1, 7)\n"
    run_check(p, widget, broken)
    assert widget.get_attribute("data-result") == "error"
    assert widget.locator(".message").inner_text() == bugs.check("head_split", broken)["message"]
    # Edits are kept per snippet while switching.
    widget.locator('select[name="bug"]').select_option("causal_mask")
    assert widget.locator("textarea.code").input_value() == bugs.reveal("causal_mask")["reference"]


@pytest.fixture
def unisolated_page(browser):
    """The site served WITHOUT cross-origin isolation: no SharedArrayBuffer, no interrupt buffer.

    The server sends no COOP/COEP headers, and the context blocks service workers (the
    site's sw.js adds those headers on hosts like GitHub Pages), so nothing isolates the
    page: what a reader sees whose browser refuses the service worker.
    """

    server, url = serve_in_thread(SITE, coi=False)
    context = browser.new_context(service_workers="block")
    watched = WatchedPage(context, url)
    yield watched
    context.close()
    server.shutdown()
    watched.check()


def test_endless_loop_without_isolation_restarts_the_worker(unisolated_page):
    p = unisolated_page.goto("labs/spot-the-bug/")
    widget = wait_ready(p, "tx-spot-the-bug", "el.dataset.bug")
    assert p.evaluate("() => crossOriginIsolated") is False
    assert widget.get_attribute("data-interrupt") == "restart"
    widget.locator('select[name="limit"]').select_option("1")
    seconds = run_check(p, widget, LOOP, timeout=30_000)
    assert widget.get_attribute("data-result") == "stopped"
    assert seconds < 1 + 4, seconds
    assert "Stopped after 1.0 s" in widget.locator(".message").inner_text()
    widget.locator('select[name="limit"]').select_option("10")  # room for a busy machine
    run_check(p, widget, bugs.reveal("causal_mask")["reference"])  # a fresh Python starts
    assert widget.get_attribute("data-result") == "passed", widget.locator(".message").inner_text()


# ---------------------------------------------------------------------------
# the decoding page: one page for three widgets


@pytest.fixture
def decoding_page(tab):
    """The decoding lab in the module's shared tab, shown once for its three widgets' tests."""
    if tab.page.evaluate("location.pathname") != "/labs/decoding/":
        tab.visit("labs/decoding/")
    return tab.page


def check_decode(widget, request):
    expected = decoding.decode(**request)
    rows = widget.locator(".results tbody tr")
    roles = attrs(rows, "data-role", str)
    for role, row in zip(roles, [rows.nth(i) for i in range(rows.count())]):
        want = {"result": expected["result"].get("best"), "greedy": expected["greedy"], "optimum": expected["optimum"]}[role]
        if role == "result" and request["method"] == "sample":
            want = expected["result"]["distinct"][0]
        assert json.loads(row.get_attribute("data-tokens")) == want["tokens"]
        for key in ("prob", "logprob", "score"):
            assert close(float(row.get_attribute(f"data-{key}")), want[key])
    return expected


def test_decoding_widget_matches_cpython(decoding_page):
    p = decoding_page
    widget = wait_ready(p, "tx-decoding", "el.dataset.request")
    request = json.loads(widget.get_attribute("data-request"))
    assert request["method"] == "beam" and request["beam_width"] == 2
    expected = check_decode(widget, request)
    assert expected["result"]["best"]["tokens"] == ["a", "dog", "</s>"]
    # every candidate of the search, step by step
    steps = widget.locator(".step")
    assert steps.count() == len(expected["result"]["steps"])
    for k, step in enumerate(expected["result"]["steps"]):
        cands = steps.nth(k).locator(".cand")
        shown = [json.loads(t) for t in attrs(cands, "data-tokens", str)]
        kept = [c["tokens"] for c in step if c["kept"]]
        assert kept == [t for t, flag in zip(shown, attrs(cands, "data-kept", str)) if flag == "true"]
        assert attrs(cands, "data-prob") == pytest.approx([c["prob"] for c in step][: cands.count()], rel=1e-12)

    # Width 1 by keyboard: the same as greedy.
    widget.locator('input[name="beam_width"]').focus()
    p.keyboard.press("Home")
    request["beam_width"] = 1
    wait_request(p, "tx-decoding", request)
    expected = check_decode(widget, request)
    assert expected["result"]["best"]["tokens"] == expected["greedy"]["tokens"] == ["the", "cat", "sat", "</s>"]

    # Back to width 2 and a length penalty of 1: the winner changes.
    widget.locator('input[name="beam_width"]').focus()
    p.keyboard.press("ArrowRight")
    widget.locator('input[name="length_penalty"]').focus()
    for _ in range(4):
        p.keyboard.press("ArrowRight")
    request.update(beam_width=2, length_penalty=1)
    wait_request(p, "tx-decoding", request)
    assert check_decode(widget, request)["result"]["best"]["tokens"] == ["a", "dog", "ran", "away", "</s>"]

    # Sampling with a seed typed in.
    widget.locator('select[name="method"]').select_option("sample")
    widget.locator('input[name="seed"]').fill("7")
    request.update(method="sample", seed=7)
    wait_request(p, "tx-decoding", request)
    expected = check_decode(widget, request)
    rows = widget.locator("table.samples tbody tr")
    assert attrs(rows, "data-count", int) == [s["count"] for s in expected["result"]["distinct"]]
    assert attrs(rows, "data-prob") == pytest.approx([s["prob"] for s in expected["result"]["distinct"]], rel=1e-12)


def test_numerics_widget_matches_cpython(decoding_page):
    p = decoding_page
    widget = wait_ready(p, "tx-numerics", "el.dataset.request")
    widget.locator('select[name="dtype"]').select_option("float16")
    widget.locator('input[name="n"]').fill("500")
    widget.locator('input[name="seed"]').fill("3")
    request = {"dtype": "float16", "n": 500, "seed": 3, "orders": 200}
    wait_request(p, "tx-numerics", request)

    orders = numerics.sum_orders(n=500, dtype="float16", seed=3, num_orders=200)
    distinct = widget.locator("table.distinct tbody tr")
    assert attrs(distinct, "data-value") == [d["value"] for d in orders["distinct"]]
    assert attrs(distinct, "data-count", int) == [d["count"] for d in orders["distinct"]]
    assert float(widget.locator("section.orders").get_attribute("data-exact")) == orders["exact"]
    named = widget.locator("table.named tbody tr")
    assert attrs(named, "data-value") == [e["value"] for e in orders["named"].values()]
    assert widget.locator("svg rect.count").count() == orders["num_distinct"] > 1

    batch = numerics.batch_sums(dtype="float16", seed=3)
    rows = widget.locator("table.batch-table tbody tr")
    assert attrs(rows, "data-value") == [r["value"] for r in batch["rows"]]

    flip = numerics.argmax_flip(seed=3)
    rows = widget.locator("table.flip-table tbody tr")
    assert [json.loads(s) for s in attrs(rows, "data-logits", str)] == [r["logits"] for r in flip["rows"]]
    assert attrs(rows, "data-argmax", int) == [r["argmax"] for r in flip["rows"]]
    assert len(set(attrs(rows, "data-argmax", int))) == 2  # the flip is visible

    # A bad value is a message in the widget, not a crash.
    widget.locator('input[name="n"]').fill("1")
    p.wait_for_function("() => document.querySelector('tx-numerics').dataset.state === 'error'")
    assert "Numbers must be a whole number from 2" in widget.locator(".status").inner_text()


def test_guided_widget_matches_cpython(decoding_page):
    p = decoding_page
    widget = wait_ready(p, "tx-guided", "el.dataset.request")
    request = {"seed": 0, "skill": 4, "guided": True}
    assert json.loads(widget.get_attribute("data-request")) == request
    run = guided.generate(**request)
    assert int(widget.get_attribute("data-steps")) == len(run["steps"])

    step = widget.locator('button[name="step"]')
    for _ in range(3):
        step.click()
    p.wait_for_function("() => document.querySelector('tx-guided').dataset.pos === '3'")
    panel = widget.locator(".panel")
    assert close(float(panel.get_attribute("data-removed-mass")), run["steps"][3]["removed_mass"])
    assert int(panel.get_attribute("data-chosen")) == run["steps"][3]["chosen"]
    assert json.loads(panel.get_attribute("data-allowed")) == run["steps"][3]["allowed"]
    assert widget.get_attribute("data-text") == "".join(run["pieces"][:3])
    rows = panel.locator("tbody tr")
    for i in range(rows.count()):
        token = int(rows.nth(i).get_attribute("data-token"))
        assert close(float(rows.nth(i).get_attribute("data-prob")), run["steps"][3]["probs"][token])
        assert close(float(rows.nth(i).get_attribute("data-guided-prob")), run["steps"][3]["guided_probs"][token])

    widget.locator('button[name="end"]').click()
    verdict = widget.locator(".verdict")
    p.wait_for_function("() => document.querySelector('tx-guided').shadowRoot.querySelector('.verdict').dataset.valid")
    assert verdict.get_attribute("data-valid") == "true" and verdict.get_attribute("data-matches-schema") == "true"
    assert widget.get_attribute("data-text") == run["text"]
    assert json.loads(run["text"]) == run["parsed"]

    # Without the mask, a seed where the toy model slips.
    seed = next(s for s in range(100) if not guided.generate(s, False, 4.0)["matches_schema"])
    widget.locator('input[name="guided"]').uncheck()
    widget.locator('input[name="seed"]').fill(str(seed))
    request = {"seed": seed, "skill": 4, "guided": False}
    wait_request(p, "tx-guided", request)
    raw = guided.generate(**request)
    widget.locator('button[name="end"]').click()
    p.wait_for_function("() => document.querySelector('tx-guided').shadowRoot.querySelector('.verdict').dataset.valid")
    assert verdict.get_attribute("data-matches-schema") == "false"
    assert verdict.get_attribute("data-valid") == str(raw["valid_json"]).lower()
    assert widget.get_attribute("data-text") == raw["text"]
    assert raw["error"] in verdict.inner_text()
