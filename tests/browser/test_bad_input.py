"""Every widget × hostile input: each control and each documented attribute of every widget
with an embed page is fed values a reader, a page script or an embedding page might give it,
and the widget must stay readable.

One bare embed page (``embed/<name>/``) serves the module, so Python and the model start
once (``WidgetPage``); each test puts a fresh ``<tx-…>`` in its frame and tries every value
there:

* the controls are found at run time in the widget's shadow root (inputs, textareas,
  selects, sliders, checkboxes, buttons), so a new control is covered without a new test;
  each gets the hostile values from script (``.value`` / ``.checked`` and the ``input`` and
  ``change`` events a page script would dispatch) and, where a reader can reach it, typed
  (Playwright ``fill`` / ``press_sequentially`` into the shadow-DOM control), and is put
  back to its first value afterwards: the widget must recover;
* the attributes come from the catalogue (``catalog.js``): a fresh element is created with
  ``setAttribute(name, value)`` for every value, as an embedding page or ``embed/?name=value``
  does.

After every value the widget must settle (nothing on its way, ``data-state`` not "loading")
and show either a sensible result (no "undefined", "NaN", "[object …]", "null" where a value
belongs) or a readable error in the widget; the page must log no console error and throw no
uncaught error, and no payload may create markup or run script.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from bad_input_harness import INSTRUMENT, LONE_SURROGATE, TAGS, family, widget_entry
from reader import BAD_VALUE, bad_values

pytestmark = pytest.mark.browser

# conftest.py: with test_keyboard.py / test_bad_input.py, one group per widget family, whose
# page (the `widget_page` fixture) both files use in turn.
SHARED_TAB = "widget sweeps"


def xdist_group(item) -> str:
    """tests/conftest.py: the widgets of one family share a page, and a worker."""
    params = getattr(item, "callspec", None)
    return family(params.params["tag"]) if params is not None and "tag" in params.params else ""


START_TIMEOUT = 120_000  # ms: the first Python or model start on a busy 2-core machine
SETTLE_TIMEOUT = 30_000  # ms: one value
LOG = os.environ.get("TX_BAD_INPUT_LOG")  # a file: one JSON line per value tried (what the widget said, how long)

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</textarea><script>window.__pwned=1</script>"
# name -> value, for text fields, number fields and attributes.
TEXT_VALUES = {
    "empty": "",
    "whitespace": " \t\n ",
    "10,000 characters": "a" * 10_000,
    "non-ASCII": "naïve 東京",
    "emoji": "🤖👩‍👩‍👧",
    "lone surrogate": LONE_SURROGATE,
    "img payload": IMG,
    "script payload": SCRIPT,
    "javascript: URL": "javascript:window.__pwned=1//",
    "-1": "-1",
    "1e308": "1e308",
    "1e400": "1" + "0" * 400,
    "huge int": "123456789012345678901234567890",
    "abc": "abc",
    "1,5": "1,5",
}
RANGE_VALUES = {k: TEXT_VALUES[k] for k in ("empty", "-1", "1e308", "1e400", "abc", "1,5")}
SELECT_VALUES = {"not an option": "nope", "empty": "", "img payload": IMG}
# Typed by a reader: Playwright's fill for text (not the lone surrogate, which no keyboard makes,
# nor the numbers, which script covers), key presses into number fields (fill refuses what is
# not a number there).
TYPED_TEXT = {k: TEXT_VALUES[k] for k in ("empty", "whitespace", "10,000 characters", "non-ASCII", "emoji", "img payload", "script payload")}
TYPED_NUMBER = {k: TEXT_VALUES[k] for k in ("-1", "1e308", "huge int", "abc", "1,5")}
NUMBER = re.compile(r"-?\d+(\.\d+)?(e\d+)?")
TEXTUAL = {"text", "textarea", "search", "url", "email", "tel", "password"}
# What in an error message means code failed rather than an input being refused, or speaks
# Python to the reader: a codec error, a repr such as got '' / got inf, a number that lost its
# digits on the way ("got 123456789012345677877719597056" for the 30 digits typed).
RAW_ERROR = re.compile(
    r"TypeError|ReferenceError|SyntaxError: (?!invalid syntax)|is not a function|is not defined|"
    r"Cannot read prop|\[object \w+\]|\bundefined\b|\bNaN\b|Traceback \(most recent|"
    r"codec can't|surrogates not allowed|(?<![\w“])''(?![\w”])|\bgot -?(?:inf|nan)\b|"
    r"\bgot -?[\d,.]{16,}|\bgot -?\d(?:\.\d+)?e[+-]?\d"
)


class Sweep:
    """One widget's page, the values tried on it and the problems seen."""

    def __init__(self, watched, sel: str):
        self.watched = watched
        self.page = watched.page
        self.sel = sel
        self.problems: list[str] = []
        self.tried = 0  # values checked (each one settled and inspected)
        self.offered = 0  # values for a field or select, including those it turns into one already checked
        self.distinct = 0  # of those, the ones set and checked
        self.seen_errors = 0
        self.checked_markup = None  # the widget's markup when its visible text was last read

    def settle(self, what: str, timeout: int = SETTLE_TIMEOUT, action: dict | None = None, fresh: list | None = None):
        """Do `action` (see __bx.step), wait for the widget, then record whatever is wrong after `what`.
        Returns how the widget looks, or None when `fresh` says the value was tried already."""
        t0 = time.perf_counter()
        info = result = self.page.evaluate("([s, a, t, f]) => __bx.step(s, a, t, f)", [self.sel, action or {}, timeout, fresh])
        t1 = time.perf_counter()
        if result.get("skipped"):
            return None
        self.tried += 1
        problems = []
        if not result["ok"]:
            problems.append(f"did not settle in {timeout / 1000:.0f} s (data-state {result['state']}, busy {result['busy']})")
        problems += look_problems(info)
        problems += info["injected"]
        if info["markup"] != self.checked_markup:  # the rest is what was read last time: only the status is new
            problems += bad_values(self.page)
            self.checked_markup = info["markup"]
        else:
            problems += [f"status shows {m.group(0)!r}" for m in BAD_VALUE.finditer(info["status"])]
        t2 = time.perf_counter()
        problems += self.new_errors()
        for p in problems:
            self.problems.append(f"{what}: {p}")
        self.log(what, result.get("ms"), t1 - t0, t2 - t1, problems, state=info["state"], status=info["status"][:300])
        self.clear_injected(info["injected"])
        return info

    def new_errors(self) -> list[str]:
        """Console messages and uncaught errors since the last call that no test expects."""
        new = self.watched.errors[self.seen_errors :]
        self.seen_errors = len(self.watched.errors)
        return [f"console/uncaught: {e[:200]}" for e in new if not any(m in e for m in self.watched.expected)]

    def clear_injected(self, injected: list) -> None:
        """One payload that ran would poison every later check: its marks are wiped."""
        if injected:
            self.page.evaluate("() => { window.__pwned = undefined; __bx.alerts = 0; }")

    def log(self, what: str, ms, step_s: float, text_s: float, problems: list[str], **more) -> None:
        """One JSON line per value tried, when TX_BAD_INPUT_LOG names a file."""
        if LOG:
            entry = {"widget": self.sel, "what": what, "ms": ms, "step_s": round(step_s, 3), "text_s": round(text_s, 3), **more, "problems": problems}
            with open(LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    def attribute_side_by_side(self, tag: str, name: str, values: dict) -> list[str]:
        """Every value of attribute `name` at once, a fresh widget each (``__bx.stepAttribute``):
        the problems seen, each with its value where it is one widget's; then one fresh widget
        without attributes takes their place."""
        t0 = time.perf_counter()
        result = self.page.evaluate(
            "([s, t, n, v, ms]) => __bx.stepAttribute(s, t, n, v, ms)", [self.sel, tag, name, list(values.values()), 2 * SETTLE_TIMEOUT]
        )
        self.tried += len(values)
        problems = [] if result["ok"] else [f"did not settle in {2 * SETTLE_TIMEOUT / 1000:.0f} s (busy {result['busy']})"]
        for label, look in zip(values, result["looks"], strict=True):
            problems += [f"={label}: {p}" for p in look_problems(look)]
        problems += result["injected"] + bad_values(self.page) + self.new_errors()
        self.clear_injected(result["injected"])
        self.page.evaluate("([s, t]) => __bx.restore(s, t)", [self.sel, tag])
        self.checked_markup = None
        self.log(f"attribute {name} ({len(values)} side by side)", result["ms"], time.perf_counter() - t0, 0, problems)
        return problems

    def usable(self, index: int) -> bool:
        return self.page.evaluate("([s, i]) => __bx.usable(s, i)", [self.sel, index])

    def locator(self, index: int):
        return self.page.locator(f'{self.sel} [data-bx="{index}"]')


def look_problems(info: dict) -> list[str]:
    """What is wrong with how one widget looks (``__bx.look``): an error without a readable
    message, or a state that is neither ready nor loading."""
    if info["state"] == "error":
        if not info["status"].strip(" ⚠"):
            return ["data-state is error but the widget shows no message"]
        if RAW_ERROR.search(info["status"]):
            return [f"error message is not readable: {info['status'][:160]!r}"]
        return []
    return [] if info["state"] in ("ready", "loading") else [f"data-state is {info['state']!r}"]


def sweep_control(sweep: Sweep, c: dict) -> None:
    """Every value of its kind into one control, from script and typed; then back to its first value."""
    i, kind, what = c["index"], c["type"], c["what"]
    if kind == "button":
        for how in ("click", "double click"):
            if not sweep.usable(i):
                return
            loc = sweep.locator(i)
            loc.click() if how == "click" else loc.dblclick()
            sweep.settle(f"{what} ({how})")
        return
    if kind in ("checkbox", "radio"):
        for value in (not c["checked"], c["checked"]):
            sweep.settle(f"{what} checked={value} (script)", action={"set": [i, value, "checked"]})
        if sweep.usable(i):
            for n in (1, 2):
                sweep.locator(i).click()
                sweep.settle(f"{what} (click {n})")
        sweep.settle(f"{what} back to checked={c['checked']}", action={"set": [i, c["checked"], "checked"]})
        return
    values = SELECT_VALUES if kind == "select" else RANGE_VALUES if kind == "range" else TEXT_VALUES
    held: list = []  # what the control ended up holding: "abc" and "" are the same to a number field
    for name, value in values.items():
        sweep.offered += 1
        info = sweep.settle(f"{what} = {name} (script)", action={"set": [i, value, "value"]}, fresh=held)
        if info is not None:
            held.append(info["held"])
            sweep.distinct += 1
    typed = TYPED_TEXT if kind in TEXTUAL else TYPED_NUMBER if kind == "number" else {}
    if typed and sweep.usable(i):
        loc = sweep.locator(i)
        for name, value in typed.items():
            if kind == "number" and not NUMBER.fullmatch(value):  # keys, as fill refuses them there
                loc.fill("")
                loc.press_sequentially(value)
            else:
                loc.fill(value)
            sweep.settle(f"{what} = {name} (typed)")
    info = sweep.settle(f"{what} back to {c['value'][:40]!r}", action={"set": [i, c["value"], "value"]})
    if info and info["state"] != "ready":
        sweep.problems.append(f"{what}: still {info['state']} after putting back its first value ({info['status'][:120]!r})")


def sweep_attribute(sweep: Sweep, tag: str, attr: dict) -> None:
    """Every value of one attribute, as fresh widgets side by side on the page (as several
    widgets of one page are), checked in one round trip. When that shows a problem, the values
    are tried again one by one, so that each problem is named with its value."""
    values = {"present": "", "img payload": IMG} if attr["boolean"] else TEXT_VALUES
    together = sweep.attribute_side_by_side(tag, attr["name"], values)
    if not together:
        return
    sweep.problems += [f"attribute {attr['name']} (side by side){p if p.startswith('=') else ': ' + p}" for p in together]
    for name, value in values.items():
        sweep.settle(f"attribute {attr['name']}={name}", action={"replace": [tag, [[attr["name"], value]]]})


@pytest.mark.parametrize("tag", TAGS)
def test_widget_survives_bad_input(widget_page, tag):
    entry = widget_entry(tag)
    t0 = time.time()
    sel = widget_page.show(tag)
    watched = widget_page.watched
    external = len(watched.external)
    sweep = Sweep(watched, sel)
    sweep.seen_errors = len(watched.errors)  # what earlier widgets logged is theirs
    info = sweep.settle("first load", START_TIMEOUT)
    sweep.tried = 0
    assert info["state"] == "ready", f"<{tag}> did not start: {sweep.problems}"
    controls = watched.page.evaluate("s => __bx.controls(s)", sel)
    for c in controls:
        sweep_control(sweep, c)
    control_checks, offered = sweep.tried, sweep.offered
    for attr in entry["attributes"]:
        sweep_attribute(sweep, tag, attr)
    sweep.problems += [f"request to another origin: {url[:200]}" for url in watched.external[external:]]
    print(
        f"\n<{tag}>: {len(controls)} controls ({control_checks} values checked; {offered} offered to fields, "
        f"{offered - sweep.distinct} of them the same as one checked), "
        f"{len(entry['attributes'])} attributes ({sweep.tried - control_checks} values) in {time.time() - t0:.1f} s"
    )
    assert not sweep.problems, f"<{tag}>: {len(sweep.problems)} problems:\n" + "\n".join(sweep.problems[:80])


def test_embed_builder_survives_bad_input(page):
    """<tx-embed-builder> on "Embed in your course": its selects and attribute fields (light
    DOM) take the same values; the snippets must carry them escaped and the page stay clean."""
    page.page.add_init_script(INSTRUMENT)

    # The live preview would start a Python for every value: it gets a blank page instead (the
    # embed pages are the other tests' business); its address is in the snippet checked here.
    def preview(route):
        request = route.request
        if request.resource_type == "document" and request.frame.parent_frame is not None:
            route.fulfill(content_type="text/html", body="<!doctype html><title>preview</title>")
        else:
            route.fallback()

    page.page.route("**/embed/**", preview)
    page.goto("embed-in-your-course/")
    sweep = Sweep(page, "tx-embed-builder")
    assert sweep.settle("first load", START_TIMEOUT)["state"] == "ready"
    sweep.tried = 0
    controls = page.page.evaluate("s => __bx.controls(s)", sweep.sel)
    assert any(c["tag"] == "select" for c in controls) and any(c["type"] == "text" for c in controls), controls
    for c in controls:
        sweep_control(sweep, c)
        if c["type"] == "text":  # a payload in an attribute field reaches both snippets escaped
            for payload in (IMG, SCRIPT):
                sweep.settle(f"{c['what']} = payload, for the snippets", action={"set": [c["index"], payload, "value"]})
                snippets = page.page.evaluate("() => { const d = document.querySelector('tx-embed-builder').dataset; return d.script + d.iframe; }")
                if payload in snippets:
                    sweep.problems.append(f"{c['what']}: the snippets carry {payload!r} unescaped")
            sweep.settle(f"{c['what']} back to ''", action={"set": [c["index"], c["value"], "value"]})
    print(f"\n<tx-embed-builder>: {len(controls)} controls ({sweep.tried} values checked)")
    assert not sweep.problems, "<tx-embed-builder>: problems:\n" + "\n".join(sweep.problems[:80])
