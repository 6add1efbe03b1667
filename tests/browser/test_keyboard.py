"""Every widget works without a mouse.

Each widget is put, fresh, in the frame of one bare page ``embed/<name>/`` kept for the
module (``WidgetPage``: Python and the model start once). Tab is pressed from the top of the
page until focus leaves the widget: every control in its shadow root (inputs, selects, sliders,
checkboxes, buttons, ``summary``, anything with a tabindex) must be reached, in tree order,
with a visible focus ring. Then each reached control is operated with the keys a reader
would use (arrow keys for a select, a slider or a number field; Space for a checkbox;
Enter and Space for a button or a ``summary``) and the widget must show something new.
Finally no element may react to clicks or hovering where a keyboard cannot reach it
(a clickable ``div`` or SVG cell without a tabindex and key handlers).
"""

from __future__ import annotations

import pytest

from bad_input_harness import TAGS, family, widget_entry

pytestmark = pytest.mark.browser

# conftest.py: with test_keyboard.py / test_bad_input.py, one group per widget family, whose
# page (the `widget_page` fixture) both files use in turn.
SHARED_TAB = "widget sweeps"


def xdist_group(item) -> str:
    """tests/conftest.py: the widgets of one family share a page, and a worker."""
    params = getattr(item, "callspec", None)
    return family(params.params["tag"]) if params is not None and "tag" in params.params else ""


START_TIMEOUT = 120_000
SETTLE_TIMEOUT = 30_000


def settle(p, sel, timeout=SETTLE_TIMEOUT):
    return p.evaluate("([s, t]) => __bx.settle(s, t)", [sel, timeout])


def keys_for(c: dict, state: dict) -> list[str]:
    """The keys that operate a control, the second undoing the first where it can; [] for a
    control that is typed into (text) or only holds focus (a scroll box, a link)."""
    kind = c["type"]
    if kind == "select":
        down = ["ArrowDown", "ArrowUp"]
        return down[::-1] if state["index"] == state["count"] - 1 else down
    if kind in ("range", "number"):
        up = ["ArrowRight", "ArrowLeft"] if kind == "range" else ["ArrowUp", "ArrowDown"]
        return up[::-1] if state["atMax"] else up
    if kind in ("checkbox", "radio"):
        return [" ", " "]
    if kind in ("button", "summary") or c["role"] in ("button", "switch", "tab", "menuitem"):
        return ["Enter", " "]
    return []


def changed(before: dict, after: dict, kind: str) -> bool:
    """Whether the control itself took the key (its value, checked state or details changed)."""
    if kind in ("checkbox", "radio"):
        return before["checked"] != after["checked"]
    if kind == "summary":
        return before["open"] != after["open"]
    if kind in ("select", "range", "number"):
        return before["value"] != after["value"]
    return True  # a button: what it does shows in the widget


@pytest.mark.parametrize("tag", TAGS)
def test_widget_works_with_the_keyboard(widget_page, tag):
    widget_entry(tag)
    sel = widget_page.show(tag)
    watched = widget_page.watched
    p = watched.page
    errors, external = len(watched.errors), len(watched.external)
    first = settle(p, sel, START_TIMEOUT)
    assert first["ok"] and first["state"] == "ready", f"<{tag}> did not start: {first}"
    problems: list[str] = []
    controls = p.evaluate("s => __bx.tabbables(s)", sel)
    problems += [f"{c['what']} has tabindex {c['tabindex']}: a positive tabindex breaks the order" for c in controls if c["tabindex"] > 0]

    # Tab from the top of the page (a button put before everything) until focus has been in
    # the widget and left it.
    p.evaluate("""() => { const b = document.createElement('button'); b.id = 'bx-top'; b.textContent = 'top';
                          document.body.prepend(b); b.focus(); }""")
    reached: list[int] = []
    was_inside = False
    for _ in range(len(controls) * 2 + 10):
        before = p.evaluate("s => __bx.focused(s)", sel)
        p.keyboard.press("Tab")
        now = p.evaluate("s => __bx.focused(s)", sel)
        if now["inside"] and now["kb"] == before["kb"] and now["kb"] is not None:
            p.keyboard.press("Escape")  # an editor that takes Tab lets go after Esc (tx-spot-the-bug)
            p.keyboard.press("Tab")
            now = p.evaluate("s => __bx.focused(s)", sel)
            if now["inside"] and now["kb"] == before["kb"]:
                problems.append(f"Tab is trapped in {now['what']}")
                break
        if not now["inside"]:
            if was_inside:
                break
            continue
        was_inside = True
        if now["kb"] is None:
            problems.append(f"Tab reaches {now['what']}, which is not visible or not a control")
            continue
        reached.append(int(now["kb"]))
        if not now["ring"]:
            problems.append(f"{now['what']} shows no focus ring (outline or box-shadow) when reached with Tab")
    missing = [c["what"] for c in controls if c["index"] not in reached]
    if missing:
        problems.append(f"Tab never reaches {missing}")
    if reached != sorted(reached):
        problems.append(f"Tab order is not the order on screen: {reached}")

    # Operate every control with its keys; the widget must react. A native button's second key
    # (Space) may repeat what Enter did (the same random vector again): it must click it.
    operated = 0
    for c in controls:
        state = p.evaluate("([s, i]) => __bx.kbState(s, i)", [sel, c["index"]])
        if not state or not state["usable"]:
            continue
        first = state
        for n, key in enumerate(keys_for(c, state)):
            state = p.evaluate("([s, i]) => __bx.kbState(s, i)", [sel, c["index"]])
            if not state or not state["usable"]:
                break
            p.evaluate("([s, i]) => __bx.focusKb(s, i)", [sel, c["index"]])
            shown = p.evaluate("s => __bx.fingerprint(s)", sel)
            p.keyboard.press(key)
            done = settle(p, sel)
            after = p.evaluate("([s, i]) => __bx.kbState(s, i)", [sel, c["index"]])
            key_name = "Space" if key == " " else key
            operated += 1
            undo = n == 1 and c["type"] in ("select", "range", "number")
            if not done["ok"]:
                problems.append(f"{c['what']}: {key_name} leaves the widget busy ({done})")
            elif undo:  # the way back; at a step boundary it may not get there: put the value back
                if after and after["value"] != first["value"]:
                    p.evaluate("([s, i, v]) => __bx.restoreKb(s, i, v)", [sel, c["index"], first["value"]])
                    settle(p, sel)
            elif after and not changed(state, after, c["type"]):
                problems.append(f"{c['what']}: {key_name} does not change it ({state['value']!r})")
            elif c["type"] == "button" and n == 1:
                if after and after["clicks"] <= state["clicks"]:
                    problems.append(f"{c['what']}: {key_name} does not press it")
            elif p.evaluate("s => __bx.fingerprint(s)", sel) == shown:
                problems.append(f"{c['what']}: {key_name} changes nothing in the widget")

    p.evaluate("() => document.getElementById('bx-top').remove()")
    problems += p.evaluate("s => __bx.mouseOnly(s)", sel)
    problems += [f"console/uncaught: {e[:200]}" for e in watched.errors[errors:]]
    problems += [f"request to another origin: {u[:200]}" for u in watched.external[external:]]
    print(f"\n<{tag}>: {len(controls)} controls reached by Tab: {len(reached)}; {operated} key presses checked")
    assert not problems, f"<{tag}>: {len(problems)} problems:\n" + "\n".join(problems)
