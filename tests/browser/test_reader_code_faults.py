"""Hostile reader code cannot break the book: code typed into an exercise (labs/attention/) or
into spot-the-bug's box (labs/spot-the-bug/) that ends Python, crashes it, exhausts or bloats
its memory, closes its worker or changes the interpreter's shared state gets one clear
sentence; afterwards the exercise's solution passes and a second Python widget on the same page
returns its normal result (the attention lab, checked against CPython), without a reload.

Each case also records what the reader saw while Python came back (every status line of the
page's widgets, sampled every 20 ms) and how long recovery took; `-s` prints both.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from demos import attention, bugs, exercises
from tabs import SharedTab
from test_exercise_widgets import PY_TIMEOUT, run_code
from widget_checks import assert_close, shown_attention

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
ANSWER_MS = 2000  # the page's pythonAnswerMs here: a silent worker is replaced after 2 s, not 5

# Every status line each widget shows, in order, for the progress a restart shows to the reader.
RECORD_STATUS = """window.__statuses = [];
const shown = {};
setInterval(() => {
  for (const el of document.querySelectorAll('tx-attention, tx-exercise, tx-spot-the-bug')) {
    const status = el.shadowRoot && el.shadowRoot.querySelector('.status-text, .status');
    if (!status) continue;
    const line = `${el.localName} ${el.dataset.state}: ${status.textContent.replace(/\\s+/g, ' ').trim()}`;
    if (shown[el.localName] !== line) { shown[el.localName] = line; window.__statuses.push(line); }
  }
}, 20);"""

# Code that deletes a builtin and replaces the NumPy functions the checker and the labs use.
TAMPERING = "import builtins\ndel builtins.len\nnp.exp = lambda x: x * 0\nnp.allclose = lambda *a, **k: True\n"

# (id, code, data-result, words of the visible result, words a status line must show while
#  Python comes back or None, console errors Pyodide itself logs for it)
HOSTILE = [
    ("exit", "import os\nos._exit(1)\n", "ended", "That code ended Python (exit(1))", None, []),
    ("SystemExit at import", "import sys\nsys.exit(3)\n", "error", "SystemExit on line 2", None, []),
    (
        "fatal error",
        "import ctypes\nctypes.string_at(2**32 - 16, 64)\n",
        "ended",
        "That code ended Python (a fatal error: memory access out of bounds)",
        None,
        ["fatal error", "memory access out of bounds"],
    ),
    ("MemoryError", "block = bytearray(2**31 - 1)\n", "error", "MemoryError on line 1", None, []),
    # np.empty takes the memory without writing it, so the code ends at once however busy the
    # machine (a bytearray is zero-filled: 1.2 GB of it ran past the 5 s limit under load).
    (
        "memory grown",
        "import numpy as np\nblock = np.empty(150_000_000)\n",
        "error",
        "must define a function",
        "GB of memory, so it is starting again to give it back",
        [],
    ),
    ("builtins and modules changed", TAMPERING, "error", "must define a function", None, []),
    ("worker closed by the code", "import js\njs.close()\n", "error", "must define a function", "Python stopped answering for 2 s", []),
]


@pytest.fixture(scope="module")
def shared_tab(browser, site_url):
    """The module's tab (tabs.SharedTab) with a 2 s ping limit and the status recorder: each
    test's hostile code is survived by the same page, as a reader's page would have to."""
    limits = f"window.TX_LIMITS = {json.dumps({'pythonAnswerMs': ANSWER_MS})};"
    with SharedTab(browser, site_url, init_scripts=(limits, RECORD_STATUS)) as tab:
        yield tab


def open_page(tab, path, widget):
    """`path` in the module's tab; waits until `widget` is ready."""
    p = tab.visit(path)
    el = p.locator(widget)
    p.wait_for_function("el => el.dataset.state === 'ready' && (el.dataset.exercise || el.dataset.bug)", arg=el.element_handle(), timeout=PY_TIMEOUT)
    return p, el


def attention_still_matches(p, sentence):
    """Make the attention lab compute `sentence`; its shown weights must match CPython's."""
    lab = p.locator("tx-attention")
    lab.locator('[name="sentence"]').fill(sentence)
    p.wait_for_function(
        "([el, s]) => el.dataset.state !== 'loading' && (el.dataset.request || '').includes(s)", arg=[lab.element_handle(), sentence], timeout=PY_TIMEOUT
    )
    assert lab.get_attribute("data-state") == "ready", lab.locator(".status").inner_text()
    expected = attention.explore(**json.loads(lab.get_attribute("data-request")))
    weights, _ = shown_attention(lab)
    assert_close(weights, expected["heads"][0]["weights"])


def solution_passes(p, exercise):
    run_code(p, exercise, exercises.solution(exercise.get_attribute("data-exercise"))["reference"])
    assert exercise.get_attribute("data-result") == "passed", exercise.locator(".result").inner_text()


def statuses(p):
    return p.evaluate("window.__statuses.splice(0)")


@pytest.mark.parametrize(("code", "result", "says", "recovering", "logged"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_code_in_an_exercise_breaks_nothing(tab, code, result, says, recovering, logged):
    for marker in logged:
        tab.expect_errors(marker)
    SHOTS.mkdir(parents=True, exist_ok=True)
    p, exercise = open_page(tab, "labs/attention/", "tx-exercise")
    start = exercises.get_exercise(exercise.get_attribute("data-exercise"))["code"]
    statuses(p)
    run_code(p, exercise, code + (start if code == TAMPERING else ""))
    shown = exercise.locator(".result").inner_text()
    assert exercise.get_attribute("data-result") == ("failed" if code == TAMPERING else result), shown
    if code != TAMPERING:
        assert says in shown, shown
    assert exercise.locator(".status .retry").is_hidden(), "Retry would run the same code again"
    exercise.screenshot(path=str(SHOTS / f"exercise-after-{result}.png"))

    t0 = time.perf_counter()
    attention_still_matches(p, "the dog ran home")
    lab_back = time.perf_counter() - t0
    seen = statuses(p)
    if recovering:
        assert any(recovering in line and line.startswith("tx-attention loading") for line in seen), seen
    solution_passes(p, exercise)
    print(f"\n{result}: {shown.splitlines()[0][:160]!r}; the lab back in {lab_back:.1f} s; it showed {seen}")


def test_a_worker_terminated_from_outside_is_replaced(tab):
    """Playwright closes the Python worker (as a browser could): the next computation waits
    `pythonAnswerMs` for a ping, says why Python is starting again, and then answers."""
    p, exercise = open_page(tab, "labs/attention/", "tx-exercise")
    (worker,) = [w for w in p.workers if w.url.endswith("python-worker.js")]
    worker.evaluate("close()")
    statuses(p)
    t0 = time.perf_counter()
    attention_still_matches(p, "a worker closed from outside")
    back = time.perf_counter() - t0
    seen = statuses(p)
    assert any(f"Python stopped answering for {ANSWER_MS // 1000} s, so it is starting again" in line for line in seen), seen
    assert back >= ANSWER_MS / 1000, back
    solution_passes(p, exercise)
    print(f"\nthe lab back in {back:.1f} s; it showed {seen}")


def test_code_that_ends_python_in_spot_the_bug_breaks_nothing(tab):
    """The same guarantee for spot-the-bug's box: `os._exit` is reported there, its fix then
    passes, and the exercise on the same page still passes its solution."""
    p, box = open_page(tab, "labs/spot-the-bug/", "tx-spot-the-bug")
    checks = int(box.get_attribute("data-checks"))
    box.locator("textarea.code").fill("import os\nos._exit(1)\n")
    box.locator('button[name="check"]').click()
    p.wait_for_function("([el, n]) => Number(el.dataset.checks) > n", arg=[box.element_handle(), checks], timeout=PY_TIMEOUT)
    shown = box.locator(".result").inner_text()
    assert box.get_attribute("data-result") == "ended", shown
    assert "That code ended Python (exit(1))" in shown, shown
    t0 = time.perf_counter()
    box.locator("textarea.code").fill(bugs.reveal(box.get_attribute("data-bug"))["reference"])
    box.locator('button[name="check"]').click()
    p.wait_for_function("([el, n]) => Number(el.dataset.checks) > n + 1", arg=[box.element_handle(), checks], timeout=PY_TIMEOUT)
    assert box.get_attribute("data-result") == "passed", box.locator(".result").inner_text()
    print(f"\nspot-the-bug: {shown.splitlines()[0]!r}; its fix passed {time.perf_counter() - t0:.1f} s later")
    solution_passes(p, p.locator("tx-exercise"))
