"""The exercises: <tx-predict> confirms a right guess and refutes a wrong one with the answer
CPython computes, and refuses an empty or garbled guess in words; <tx-exercise> passes the
reference, fails the starting code case by case as CPython does, and stops an endless loop;
a lab page with both fits a phone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demos import attention, exercises, ffn
from watched import NO_SERVICE_WORKER, WatchedPage

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"

PY_TIMEOUT = 120_000  # ms: Python's first start on a busy 2-core machine
SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
LOOP = "def cosine(a, b):\n    while True:\n        pass\n"


def wait_settled(p, widget, checks):
    """Until the widget has done `checks` checks and is no longer loading."""
    handle = widget.element_handle()
    p.wait_for_function(
        "([el, n]) => Number(el.dataset.checks) >= n && el.dataset.state !== 'loading'",
        arg=[handle, checks],
        timeout=PY_TIMEOUT,
    )


def guess(p, widget, text):
    """Type a guess, press Check, wait for the verdict or the message; the checks done so far."""
    checks = int(widget.get_attribute("data-checks")) + 1
    widget.locator("input.guess").fill(text)
    widget.locator('button[name="check"]').click()
    wait_settled(p, widget, checks)


def predict_on(p, module, function):
    """The page's <tx-predict> that calls demos.module.function, once it is ready."""
    widget = p.locator(f'tx-predict[module="{module}"][function="{function}"]').first
    widget.scroll_into_view_if_needed()
    p.wait_for_function("el => el.dataset.state === 'ready'", arg=widget.element_handle(), timeout=PY_TIMEOUT)
    return widget


def test_predict_number_confirms_and_refutes_with_the_cpython_answer(tab):
    p = tab.visit("pipeline/05e-mlp/")
    widget = predict_on(p, "ffn", "mlp_shapes")
    total = ffn.mlp_shapes(**json.loads(widget.get_attribute("kwargs")))["params"]["total"]
    assert widget.get_attribute("answer") == "params.total" and widget.get_attribute("tolerance") == "5%"
    assert not widget.locator(".result").is_visible()  # nothing shown before a guess

    guess(p, widget, f"{total * 1.02 / 1e6:.3f}M")  # within 5%
    assert widget.get_attribute("data-verdict") == "right"
    assert json.loads(widget.get_attribute("data-answer")) == total
    text = widget.locator(".result").inner_text()
    assert "✓ Right." in text and f"The answer is {total:,}" in text and "high (2% off): close enough" in text
    assert f"{total:,}" in widget.locator(".explain").inner_text()  # {answer} filled in

    guess(p, widget, "1,000,000")
    assert widget.get_attribute("data-verdict") == "wrong"
    text = widget.locator(".result").inner_text()
    assert "✗ Not quite." in text and f"The answer is {total:,}" in text
    assert f"{total / 1e6:.4g} times too low" in text

    guess(p, widget, str(total))
    assert widget.get_attribute("data-verdict") == "right" and "exactly right" in widget.locator(".result").inner_text()


def test_predict_refuses_an_empty_or_garbled_guess(tab):
    p = tab.visit("pipeline/05e-mlp/")
    widget = predict_on(p, "ffn", "mlp_shapes")
    for text, message in (("", "Type your guess first"), ("   ", "Type your guess first"), ("abc", "must be a number"), ("1,5", "must be a number")):
        guess(p, widget, text)
        assert widget.get_attribute("data-state") == "error"
        assert message in widget.locator(".status-text").inner_text()
        assert not widget.locator(".result").is_visible()
        assert widget.get_attribute("data-verdict") is None
    guess(p, widget, str(ffn.mlp_shapes(**json.loads(widget.get_attribute("kwargs")))["params"]["total"]))  # and it recovers
    status = widget.locator(".status-text").inner_text()
    assert (widget.get_attribute("data-state"), widget.get_attribute("data-verdict")) == ("ready", "right"), status


def test_predict_choice_on_the_attention_lab(tab):
    p = tab.visit("labs/attention/")
    widget = predict_on(p, "attention", "explore")
    expected = attention.explore(sentence="the cat sat on the mat")["heads"][0]["weights"][0][0]
    select = widget.locator("select.guess")
    options = select.locator("option").all_inner_texts()
    assert options[0].startswith("— choose")
    # the page says nothing of where the answer comes from: the widget does, naming the function
    assert "demos.attention.explore then computes the answer" in widget.locator(".hint").inner_text()
    widget.locator('button[name="check"]').click()  # no choice yet
    wait_settled(p, widget, 1)
    assert "Choose an answer first" in widget.locator(".status-text").inner_text()

    select.select_option(label="Spread evenly over the six tokens")
    widget.locator('button[name="check"]').click()
    wait_settled(p, widget, 2)
    assert widget.get_attribute("data-verdict") == "wrong"
    assert json.loads(widget.get_attribute("data-answer")) == expected == 1.0
    assert "The answer is “All of its weight on the first token itself”" in widget.locator(".result").inner_text()

    select.select_option(label="All of its weight on the first token itself")
    widget.locator('button[name="check"]').click()
    wait_settled(p, widget, 3)
    assert widget.get_attribute("data-verdict") == "right"
    assert "✓ Right." in widget.locator(".result").inner_text()


def run_code(p, widget, code):
    checks = int(widget.get_attribute("data-checks")) + 1
    widget.locator("textarea.code").fill(code)
    widget.locator('button[name="check"]').click()
    wait_settled(p, widget, checks)


def test_exercise_passes_the_reference_fails_the_start_and_stops_a_loop(tab):
    p = tab.visit("labs/embeddings/")
    widget = p.locator("tx-exercise").first
    widget.scroll_into_view_if_needed()
    p.wait_for_function("el => el.dataset.exercise && el.dataset.state === 'ready'", arg=widget.element_handle(), timeout=PY_TIMEOUT)
    assert widget.get_attribute("data-exercise") == "cosine"
    start = exercises.get_exercise("cosine")["code"]
    assert widget.locator("textarea.code").input_value() == start

    run_code(p, widget, start)
    expected = exercises.check("cosine", start)
    assert widget.get_attribute("data-result") == "failed"
    assert widget.get_attribute("data-cases") == f"{expected['cases_passed']}/{exercises.NUM_CASES}"
    rows = widget.locator("ol.cases li")
    assert rows.count() == exercises.NUM_CASES
    for row, case in zip(rows.all(), expected["cases"], strict=True):
        text = row.inner_text()
        assert ("✓ passed" if case["passed"] else "✗ failed") in text
        assert case["inputs"] in text and case["message"].rstrip(".") in text

    reference = exercises.solution("cosine")["reference"]
    run_code(p, widget, reference)
    assert widget.get_attribute("data-result") == "passed"
    assert widget.get_attribute("data-cases") == f"{exercises.NUM_CASES}/{exercises.NUM_CASES}"
    assert widget.locator("ol.cases li.pass").count() == exercises.NUM_CASES
    assert "✓ Passed." in widget.locator(".result").inner_text()

    checks = int(widget.get_attribute("data-checks")) + 1
    widget.locator("textarea.code").fill(LOOP)
    widget.locator('button[name="check"]').click()
    p.wait_for_function("el => el.dataset.result === 'running'", arg=widget.element_handle())
    p.wait_for_timeout(1000)
    widget.locator('button[name="stop"]').click()
    wait_settled(p, widget, checks)
    assert widget.get_attribute("data-result") == "stopped"
    assert "■ Stopped." in widget.locator(".result").inner_text()
    assert float(widget.get_attribute("data-stopped-after")) < 4

    run_code(p, widget, reference)  # Python still answers after the stop
    assert widget.get_attribute("data-result") == "passed"


def test_exercise_refuses_empty_code(tab):
    p = tab.visit("labs/embeddings/")
    widget = p.locator("tx-exercise").first
    p.wait_for_function("el => el.dataset.exercise && el.dataset.state === 'ready'", arg=widget.element_handle(), timeout=PY_TIMEOUT)
    widget.locator("textarea.code").fill("  \n")
    widget.locator('button[name="check"]').click()
    assert "The code is empty" in widget.locator(".status-text").inner_text()


def test_a_lab_page_with_both_fits_a_phone(browser, site_url):
    context = browser.new_context(**NO_SERVICE_WORKER, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True, device_scale_factor=1)
    watched = WatchedPage(context, site_url)
    try:
        p = watched.goto("labs/embeddings/")
        predict = predict_on(p, "embeddings", "analogy")
        exercise = p.locator("tx-exercise").first
        p.wait_for_function("el => el.dataset.exercise && el.dataset.state === 'ready'", arg=exercise.element_handle(), timeout=PY_TIMEOUT)
        predict.locator("select.guess").select_option(label="queen")
        predict.locator('button[name="check"]').click()
        wait_settled(p, predict, 1)
        run_code(p, exercise, exercises.get_exercise("cosine")["code"])
        width = p.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 375, f"the page is {width} px wide at 375 px"
        for el in (predict, exercise):
            box = el.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 375, box
        SHOTS.mkdir(parents=True, exist_ok=True)
        predict.scroll_into_view_if_needed()
        p.screenshot(path=str(SHOTS / "exercises-phone.png"), full_page=False)
        exercise.screenshot(path=str(SHOTS / "exercise-widget-phone.png"))
        predict.screenshot(path=str(SHOTS / "predict-widget-phone.png"))
    finally:
        context.close()
    watched.check()
