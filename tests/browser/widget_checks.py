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
