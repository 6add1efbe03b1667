"""<tx-sampling> shows exactly what demos.sampling computes in CPython."""

import json

import pytest

from demos import sampling
from widget_checks import press_keys

pytestmark = pytest.mark.browser

# One tab for the Python labs' test files (conftest.py `shared_tab`): Python starts once for them.
SHARED_TAB = "python labs"


def shown(widget):
    """The probabilities the widget displays, and the arguments it computed them for."""
    rows = widget.locator(".bar-row")
    probs = [float(rows.nth(i).get_attribute("data-prob")) for i in range(rows.count())]
    return probs, json.loads(widget.get_attribute("data-request"))


def wait_for_request(page, request):
    page.wait_for_function(
        "want => { const el = document.querySelector('tx-sampling'); return el.dataset.state === 'ready' && el.dataset.request === want; }",
        arg=json.dumps(request, separators=(",", ":")),
        timeout=60_000,
    )


def test_probabilities_match_cpython_after_moving_sliders(tab):
    p = tab.visit("sampling/")
    widget = p.locator("tx-sampling")
    wait_for_request(p, {"temperature": 1, "top_k": 0, "top_p": 1})
    logits = widget.evaluate("el => el.widget.logits")

    probs, request = shown(widget)
    expected = sampling.next_token_distribution(logits=logits, **request)["probs"]
    assert probs == pytest.approx(expected, abs=1e-12)

    # Move the sliders the way a reader does: keyboard steps on the range inputs.
    temperature = widget.locator('input[name="temperature"]')
    press_keys(temperature, "ArrowLeft", 6)  # 1.00 -> 0.70
    press_keys(widget.locator('input[name="top_k"]'), "ArrowRight", 5)  # off -> 5
    widget.locator('input[name="top_p"]').focus()
    p.keyboard.press("ArrowLeft")  # 1.00 -> 0.95
    wait_for_request(p, {"temperature": 0.7, "top_k": 5, "top_p": 0.95})

    probs, request = shown(widget)
    expected = sampling.next_token_distribution(logits=logits, **request)
    assert probs == pytest.approx(expected["probs"], abs=1e-12)
    removed = widget.locator(".bar-row.removed").count()
    assert removed == len(logits) - sum(expected["kept"]) > 0


def test_temperature_zero_is_greedy(tab):
    p = tab.visit("sampling/")
    widget = p.locator("tx-sampling")
    wait_for_request(p, {"temperature": 1, "top_k": 0, "top_p": 1})
    widget.locator('input[name="temperature"]').focus()
    p.keyboard.press("Home")
    wait_for_request(p, {"temperature": 0, "top_k": 0, "top_p": 1})
    probs, request = shown(widget)
    logits = widget.evaluate("el => el.widget.logits")
    assert probs == sampling.next_token_distribution(logits=logits, **request)["probs"]
    assert sorted(probs) == [0.0] * (len(probs) - 1) + [1.0]
