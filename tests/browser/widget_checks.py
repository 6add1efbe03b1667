"""Waits and comparisons the widget tests share: a widget's data-state, its last request,
its error text, and float64 agreement with the CPython reference."""

from __future__ import annotations

import json
import math

import numpy as np

TOL = 1e-12  # the widgets show what NumPy computed in float64: agreement to rounding error


def wait_state(p, tag, states, timeout):
    """Until the first `tag` element's data-state is one of `states`."""
    p.wait_for_function("([tag, states]) => states.includes(document.querySelector(tag)?.dataset.state)", arg=[tag, list(states)], timeout=timeout)


def wait_ready(page, tag, want=None):
    """Wait until the widget is ready and its last request contains `want`; return the request."""
    page.wait_for_function(
        """([tag, want]) => {
             const el = document.querySelector(tag);
             if (!el || el.dataset.state !== "ready" || !el.dataset.request) return false;
             const request = JSON.parse(el.dataset.request);
             return Object.entries(want).every(([k, v]) => JSON.stringify(request[k]) === JSON.stringify(v));
           }""",
        arg=[tag, want or {}],
        timeout=90_000,
    )
    return json.loads(page.locator(tag).get_attribute("data-request"))


def wait_error(page, tag):
    """Until the widget shows an error; return its status line."""
    page.wait_for_function(f"() => document.querySelector('{tag}').dataset.state === 'error'", timeout=30_000)
    return page.locator(tag).locator(".status-text").inner_text()


def assert_close(actual, expected, tol=TOL):
    """Elementwise agreement in float64 within `tol`, relative and absolute."""
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)


def shown_attention(widget):
    """The displayed cells as (T, T) weight and masked matrices."""
    cells = widget.evaluate("""el => [...el.shadowRoot.querySelectorAll('.cell')].map(c =>
        [Number(c.dataset.row), Number(c.dataset.col), c.dataset.weight, c.dataset.masked === 'true'])""")
    n = int(math.isqrt(len(cells)))
    weights, masked = np.zeros((n, n)), np.zeros((n, n), dtype=bool)
    for i, j, w, m in cells:
        weights[i, j], masked[i, j] = float(w), m
    return weights, masked


def press_keys(control, key, times):
    """Focus `control` and press `key` on it `times` times, as a keyboard reader would."""
    control.focus()
    for _ in range(times):
        control.page.keyboard.press(key)


def settle(p, tag, timeout=120_000):
    """Until the widget is no longer loading; returns its state and status line."""
    p.wait_for_function(
        "(tag) => { const el = document.querySelector(tag); return el && ['ready', 'error'].includes(el.dataset.state); }",
        arg=tag,
        timeout=timeout,
    )
    el = p.locator(tag)
    return el.get_attribute("data-state"), el.locator(".status-text").inner_text()


def grid_values(widget, name):
    cells = widget.evaluate(
        """(el, name) => [...el.shadowRoot.querySelectorAll(`figure[data-name='${name}'] td[data-r]`)]
             .map(td => [+td.dataset.r, +td.dataset.c, +td.dataset.value, td.dataset.id ?? null])""",
        name,
    )
    rows = max(r for r, *_ in cells) + 1
    cols = max(c for _, c, *_ in cells) + 1
    values = np.zeros((rows, cols))
    ids = np.full((rows, cols), -1)
    for r, c, v, i in cells:
        values[r, c] = v
        ids[r, c] = int(i) if i is not None else -1
    return values, ids


def shown_text(widget) -> str:
    """The text a reader sees in a widget's shadow root (its styles left out)."""
    return widget.evaluate("el => [...el.shadowRoot.children].filter((c) => c.tagName !== 'STYLE').map((c) => c.innerText).join('\\n')")


# ----- a model widget's limits, as its reader meets them (the run widgets: beam search, speculative decoding, ...)


def refuses_out_of_range(widget, cases, valid: dict) -> None:
    """Each `(field, value, words)` of `cases`, typed in (`set_fields`):
    the status says `words`, the field is marked invalid and Go is disabled; the field's `valid`
    value then makes the widget ready again."""
    status = widget.locator(".status")
    for name, value, words in cases:
        set_fields(widget, **{name: value})
        assert words in status.inner_text(), (name, value, status.inner_text())
        assert widget.locator(f'[name="{name}"]').get_attribute("aria-invalid") == "true"
        assert widget.locator("button.go").is_disabled()
        set_fields(widget, **{name: valid[name]})
        assert widget.get_attribute("data-state") == "ready" and widget.locator("button.go").is_enabled()


def refuses_a_prompt_too_long(p, widget, selector: str, tokenizer, n_positions: int, new_tokens: int) -> None:
    """A prompt that leaves fewer than `new_tokens` positions: the run fails with the numbers."""
    long_prompt = "word " * (n_positions - 6)
    widget.locator("textarea").fill(long_prompt)
    widget.locator("button.go").click()
    p.wait_for_function(
        "(sel) => { const el = document.querySelector(sel); return el.dataset.running === 'false' && el.dataset.state === 'error'; }", arg=selector
    )
    words = f"The prompt is {len(tokenizer.encode(long_prompt))} tokens and {new_tokens} new ones do not fit this model's {n_positions} positions"
    assert words in widget.locator(".status").inner_text(), widget.locator(".status").inner_text()


def fits_a_phone(p, widget, words: str) -> None:
    """At 375 px nothing sticks out sideways, the widget shows `words` and no placeholder of a
    missing value; the viewport is set back afterwards."""
    size = p.viewport_size
    p.set_viewport_size({"width": 375, "height": 740})
    width = p.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page is {width} px wide at 375 px"
    box = widget.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 375, box
    text = shown_text(widget)
    assert words in text
    for bad in ("undefined", "NaN", "[object", "null"):
        assert bad not in text, bad
    p.set_viewport_size(size)


def set_fields(widget, **values) -> None:
    """Set a widget's fields by name as a reader would: choose in a select, tick or untick a
    checkbox, type into the rest."""
    for name, value in values.items():
        field = widget.locator(f'[name="{name}"]')
        if field.evaluate("el => el.tagName") == "SELECT":
            field.select_option(str(value))
        elif field.get_attribute("type") == "checkbox":
            field.set_checked(bool(value))
        else:
            field.fill(str(value))


def press_go(p, widget, selector: str, timeout: int = 180_000) -> None:
    """Press a run widget's Go button and wait until that run has ended (`data-runs` counts it)."""
    runs = int(widget.get_attribute("data-runs"))
    widget.locator("button.go").click()
    p.wait_for_function(f"(sel) => Number(document.querySelector(sel).dataset.runs) > {runs}", arg=selector, timeout=timeout)
