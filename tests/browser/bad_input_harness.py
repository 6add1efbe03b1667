"""What the bad-input and keyboard sweeps share: the widget catalogue and a page script that
says when a widget has settled.

The catalogue is the built site's ``assets/tx/embed/v1/catalog.js`` (every widget with an
embed page and its documented attributes), so a new widget is swept without editing a test.

``INSTRUMENT`` is added to every page before its own scripts. It counts what is still on
its way (timers of up to a second, such as a debounce; fetches; the WebGPU adapter and Cache
Storage requests; calls posted to a Web Worker and not answered yet), so ``settle`` can wait exactly until a widget has finished reacting
to an input instead of sleeping, and it records what an injected payload would do
(``alert()``, ``window.__pwned``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from site_under_test import SITE

from watched import NO_SERVICE_WORKER, WatchedPage

ROOT = Path(__file__).resolve().parents[2]
CATALOG = SITE / "assets" / "tx" / "embed" / "v1" / "catalog.js"


def catalog() -> dict:
    """WIDGETS of the built catalog.js: tag -> {name, attributes: [{name, boolean}], ...}."""
    if not CATALOG.exists():
        return {}
    match = re.search(r"export const WIDGETS = (\{.*?\n\});", CATALOG.read_text(encoding="utf-8"), re.S)
    return json.loads(match.group(1))


WIDGETS = catalog()
TAGS = sorted(WIDGETS) or ["(site not built)"]

# Widgets whose button starts a run meant to last long (a reader watches it), with the attributes
# that make a press end within one value's settle time of the sweeps (a bare <tx-train> trains
# 600 steps: 16 s here when the machine is quiet, over 30 s when both test workers are busy).
SHORT_RUNS = {"tx-train": {"steps": "40"}}
LONE_SURROGATE = "<<lone surrogate>>"  # the page puts "\ud800" in its place (no wire format carries it)

INSTRUMENT = r"""(() => {
  if (window.__bx) return;
  const raw = { setTimeout: window.setTimeout.bind(window), clearTimeout: window.clearTimeout.bind(window) };
  const bx = { timers: new Set(), fetches: 0, workers: [], alerts: 0, raw };
  window.__bx = bx;

  // Short timers (debounces, chained steps) keep the page busy, and run ten times sooner (a
  // 300 ms debounce waits 30 ms) so that a sweep of thousands of values stays quick; long ones
  // (stall watchdogs, time limits) keep their delay and do not count.
  window.setTimeout = function (fn, ms, ...args) {
    if (typeof fn !== "function") return raw.setTimeout(fn, ms, ...args);
    const short = !(Number(ms) > 1000);
    const id = raw.setTimeout((...a) => { bx.timers.delete(id); fn(...a); }, short ? Number(ms || 0) / 10 : ms, ...args);
    if (short) bx.timers.add(id);
    return id;
  };
  window.clearTimeout = (id) => { bx.timers.delete(id); raw.clearTimeout(id); };
  // A fetch is on its way until its body is read too.
  const track = (p) => { bx.fetches++; p.then(() => bx.fetches--, () => bx.fetches--); return p; };
  const rawFetch = window.fetch;
  window.fetch = function (...args) { return track(rawFetch.apply(this, args)); };
  for (const name of ["text", "json", "arrayBuffer", "blob"]) {
    const rawRead = Response.prototype[name];
    Response.prototype[name] = function (...args) { return track(rawRead.apply(this, args)); };
  }
  // Other promises a widget may wait on before it posts to a worker: the digest of a download,
  // the WebGPU adapter (what loadModel's "auto" asks for on every run, null in a browser
  // without one) and the Cache Storage of the downloads. Untracked, such a wait looks quiet
  // while the widget is about to draw again.
  const trackMethod = (owner, name) => {
    const rawMethod = owner?.[name];
    if (typeof rawMethod === "function") owner[name] = function (...args) { return track(rawMethod.apply(this, args)); };
  };
  trackMethod(globalThis.crypto?.subtle, "digest");
  trackMethod(navigator.gpu, "requestAdapter");
  for (const name of ["open", "match", "has", "keys", "delete"]) trackMethod(globalThis.CacheStorage?.prototype, name);
  for (const name of ["match", "matchAll", "put", "add", "addAll", "keys", "delete"]) trackMethod(globalThis.Cache?.prototype, name);
  // The Python and model workers answer a request {id, ...} with {id, result|error} (no type).
  const RawWorker = window.Worker;
  window.Worker = class extends RawWorker {
    constructor(...args) {
      super(...args);
      this.__pending = new Set();
      bx.workers.push(this);
      this.addEventListener("message", (e) => {
        const d = e.data;
        if (d && typeof d === "object" && d.id !== undefined && d.type === undefined) this.__pending.delete(d.id);
      });
      this.addEventListener("error", () => this.__pending.clear());
    }
    postMessage(m, ...rest) {
      if (m && typeof m === "object" && m.id !== undefined) this.__pending.add(m.id);
      return super.postMessage(m, ...rest);
    }
    terminate() {
      this.__pending.clear();
      return super.terminate();
    }
  };
  window.alert = window.confirm = window.prompt = () => { bx.alerts++; };
  // Which elements listen to which events (for the keyboard test: mouse-only handlers).
  const listeners = new WeakMap();
  const rawAdd = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, ...rest) {
    if (this instanceof Element) {
      if (!listeners.has(this)) listeners.set(this, new Set());
      listeners.get(this).add(type);
    }
    return rawAdd.call(this, type, ...rest);
  };
  bx.rawAdd = rawAdd;
  bx.listens = (el, types) => types.some((t) => listeners.get(el)?.has(t) || typeof el[`on${t}`] === "function");

  bx.busy = () => bx.timers.size > 0 || bx.fetches > 0 || bx.workers.some((w) => w.__pending.size > 0);
  bx.decode = (v) => (typeof v === "string" ? v.replaceAll("<<lone surrogate>>", "\ud800") : v);
  bx.root = (sel) => { const el = document.querySelector(sel); return el && (el.shadowRoot || el); };
  bx.roots = (root = document) => {
    const out = [root];
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) out.push(...bx.roots(el.shadowRoot));
    return out;
  };

  /**
   * Wait until nothing is on its way and `settled()` holds, both for 12 ms; `state()` is
   * reported when the time runs out.
   */
  bx.quiet = async (settled, timeout, state = () => null) => {
    const t0 = performance.now();
    let quiet = null;
    for (;;) {
      const now = performance.now();
      if (!bx.busy() && settled()) {
        quiet ??= now;
        if (now - quiet >= 12) return { ok: true, ms: Math.round(now - t0) };
      } else {
        quiet = null;
      }
      if (now - t0 > timeout) {
        return { ok: false, ms: Math.round(now - t0), state: state(), busy: { timers: bx.timers.size, fetches: bx.fetches,
          calls: bx.workers.map((w) => w.__pending.size) } };
      }
      await new Promise((r) => raw.setTimeout(r, 10));
    }
  };
  // `widget.computing` is set the moment an update starts, before its first request is posted:
  // on a busy machine that gap outlasted the quiet window, and a sweep read the old markup.
  const loaded = (el) => Boolean(el && el.dataset.state && el.dataset.state !== "loading" && !el.widget?.computing);

  /** Wait until nothing is on its way, the widget's data-state is not "loading" and it is not computing. */
  bx.settle = async (sel, timeout) => {
    const el = () => document.querySelector(sel);
    const result = await bx.quiet(() => loaded(el()), timeout, () => el()?.dataset.state ?? null);
    return result.ok ? { ...result, state: el().dataset.state } : result;
  };
  /** Markup or script that a payload could have created, anywhere on the page. */
  bx.injected = () => {
    const found = [];
    if (window.__pwned) found.push("window.__pwned is set");
    if (bx.alerts) found.push(`alert() was called ${bx.alerts} time(s)`);
    for (const root of bx.roots()) {
      for (const el of root.querySelectorAll('img[src="x"], [onerror], [onload], a[href^="javascript:" i], iframe[src^="javascript:" i]')) {
        found.push(`element from a payload: ${el.outerHTML.slice(0, 100)}`);
      }
      if (root !== document) for (const el of root.querySelectorAll("script")) found.push(`<script> in a shadow root: ${el.outerHTML.slice(0, 80)}`);
    }
    for (const s of document.querySelectorAll("script")) if (s.textContent.includes("__pwned")) found.push("<script> with the payload in the document");
    return found;
  };

  /** A hash of the widget's markup without its status line (which inspect() returns as text). */
  bx.markup = (root) => {
    const status = root.querySelector(".status");
    let text = root.innerHTML;
    if (status) text = text.replace(status.outerHTML, "");
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return `${text.length}:${h >>> 0}`;
  };

  /** The widget's state, its status line and a hash of the rest. */
  bx.look = (el) => {
    const root = el && (el.shadowRoot || el);
    const status = root ? root.querySelector(".status-text") : null;
    return { state: el ? el.dataset.state ?? null : "(gone)", status: status ? status.textContent.trim() : "",
             markup: root ? bx.markup(root) : null };
  };
  /** bx.look of the widget `sel` selects, and anything injected. */
  bx.inspect = (sel) => ({ ...bx.look(document.querySelector(sel)), injected: bx.injected() });

  const describe = (c) => {
    const own = (el) => [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.data).join(" ");
    const holder = c.closest("label");
    const label = (c.getAttribute("aria-label") || (holder && own(holder)) || (c.localName === "button" ? c.textContent : "") || "")
      .trim().replace(/\s+/g, " ");
    const name = c.name || [...c.classList].join(".") || "";
    return `${c.localName}${c.type && c.localName === "input" ? `[${c.type}]` : ""}${name ? ` ${name}` : ""}${label ? ` “${label.slice(0, 32)}”` : ""}`;
  };
  bx.describe = describe;

  /** Every control of the widget (shadow root, or light DOM for a widget without one), numbered. */
  bx.controls = (sel) => {
    const root = bx.root(sel);
    if (!root) return [];
    return [...root.querySelectorAll("input, textarea, select, button")].map((c, i) => {
      c.dataset.bx = String(i);
      return { index: i, tag: c.localName, type: c.localName === "input" ? c.type : c.localName,
               what: describe(c), value: c.value, checked: c.checked,
               options: c.localName === "select" ? [...c.options].map((o) => o.value) : [] };
    });
  };
  /** What the control would hold after `.value = value` (a number field turns "abc" into ""). */
  bx.wouldHold = (sel, i, value) => {
    const probe = bx.control(sel, i)?.cloneNode(true);
    if (!probe) return null;
    probe.value = bx.decode(value);
    return probe.value;
  };
  bx.control = (sel, i) => {
    const root = bx.root(sel);
    if (!root) return null;
    // A widget that redrew its controls (the builder's attribute fields) is numbered afresh.
    if (!root.querySelector(`[data-bx="${i}"]`)) bx.controls(sel);
    return root.querySelector(`[data-bx="${i}"]`);
  };
  bx.usable = (sel, i) => {
    const c = bx.control(sel, i);
    return Boolean(c && c.checkVisibility() && !c.disabled && !c.readOnly);
  };

  /** Set a control from script (value or checked) and dispatch input and change, as a page script would. */
  bx.set = (sel, i, value, prop) => {
    const c = bx.control(sel, i);
    if (!c) return false;
    if (prop === "checked") c.checked = Boolean(value);
    else if (prop === "click") { if (c.disabled) return false; c.click(); return true; }
    else c.value = bx.decode(value);
    c.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    c.dispatchEvent(new Event("change", { bubbles: true, composed: true }));
    return true;
  };

  /**
   * One value in one round trip: do `action` ({set: [index, value, prop]}, {replace: [tag, attrs]}
   * or nothing), wait for the widget to settle and say how it looks. With `fresh`, a value the
   * control would turn into one of those already tried (`fresh`: what it held then) is skipped.
   */
  bx.step = async (sel, action, timeout, fresh) => {
    if (action.set) {
      const [i, value, prop] = action.set;
      if (fresh) {
        const held = bx.wouldHold(sel, i, value);
        if (fresh.includes(held)) return { skipped: true, held };
        action.held = held;
      }
      if (!bx.set(sel, i, value, prop)) return { skipped: true, held: null };
    } else if (action.replace) {
      bx.replace(sel, ...action.replace);
    }
    const settled = await bx.settle(sel, timeout);
    return { ...settled, ...bx.inspect(sel), held: action.held };
  };

  // ------------------------------------------------------------ keyboard

  const TABBABLE = 'input:not([type=hidden]), select, textarea, button, a[href], summary, [tabindex], [contenteditable=""], [contenteditable=true]';
  const reachable = (el) => el.tabIndex >= 0 && !el.disabled && el.checkVisibility() && !el.closest("[inert]");

  /** The widget's elements a reader should reach with Tab, in tree order, numbered (data-kb). */
  bx.tabbables = (sel) => {
    const root = bx.root(sel);
    return [...root.querySelectorAll(TABBABLE)].filter(reachable).map((el, i) => {
      el.dataset.kb = String(i);
      return { index: i, what: describe(el), tag: el.localName, type: el.localName === "input" ? el.type : el.localName,
               role: el.getAttribute("role"), tabindex: el.tabIndex };
    });
  };

  /** The focused element, through every shadow root: its data-kb, whether it is in the widget, how it looks. */
  bx.focused = (sel) => {
    let a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    if (!a || a === document.body) return { kb: null, inside: false, what: a ? "body" : "nothing" };
    const host = document.querySelector(sel);
    const inside = host.contains(a) || (host.shadowRoot && host.shadowRoot.contains(a));
    const style = getComputedStyle(a);
    const ring = (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== "none";
    return { kb: a.dataset.kb ?? null, inside, what: describe(a), ring };
  };

  /** Elements that react to the mouse with nothing a keyboard can reach or do the same. */
  bx.mouseOnly = (sel) => {
    const root = bx.root(sel);
    const out = [];
    const native = "button, input, select, textarea, a[href], summary, label";
    const focusables = (el) => [el, ...el.querySelectorAll(TABBABLE)].filter((e) => e.tabIndex >= 0 && !e.disabled);
    const listensInside = (el, types) => [el, ...el.querySelectorAll("*")].some((e) => bx.listens(e, types));
    for (const el of root.querySelectorAll("*")) {
      if (el.matches(native) || el.closest(native)) continue;
      const click = bx.listens(el, ["click", "mousedown", "mouseup", "pointerdown", "pointerup", "dblclick"]);
      const hover = bx.listens(el, ["mouseover", "mouseenter", "mousemove", "pointerover", "pointerenter"]);
      if (!click && !hover) continue;
      if (!el.children.length && !el.textContent.trim()) continue; // nothing there yet
      const name = `${el.localName}${el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : ""}`;
      if (!focusables(el).length) {
        out.push(`${name} reacts to ${click ? "clicks" : "hovering"} but nothing in it can be focused with Tab`);
      } else if (click && !listensInside(el, ["keydown", "keyup", "keypress"])) {
        out.push(`${name} reacts to clicks but to no key`);
      } else if (hover && !listensInside(el, ["focusin", "focus"])) {
        out.push(`${name} shows something on hover that focus does not`);
      }
    }
    return out;
  };

  /** A short fingerprint of everything the widget shows (its shadow DOM and data-*). */
  bx.fingerprint = (sel) => {
    const el = document.querySelector(sel);
    const text = JSON.stringify(el.dataset) + (el.shadowRoot || el).innerHTML;
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return `${text.length}:${h >>> 0}`;
  };

  /** The state of a control numbered by tabbables() (value, checked, open details). */
  bx.kbState = (sel, i) => {
    const el = bx.root(sel).querySelector(`[data-kb="${i}"]`);
    if (!el) return null;
    if (el.__bxClicks === undefined) {
      el.__bxClicks = 0;
      bx.rawAdd.call(el, "click", () => { el.__bxClicks++; }); // not counted as the widget's own listener
    }
    return { clicks: el.__bxClicks, value: el.value ?? null, checked: el.checked ?? null, open: el.parentElement?.open ?? null,
             usable: reachable(el), index: el.selectedIndex ?? null, count: el.options?.length ?? null,
             atMax: el.type === "range" || el.type === "number" ? el.max !== "" && Number(el.value) >= Number(el.max) : null };
  };
  bx.restoreKb = (sel, i, value) => {
    const el = bx.root(sel).querySelector(`[data-kb="${i}"]`);
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true, composed: true }));
  };
  bx.focusKb = (sel, i) => { bx.root(sel).querySelector(`[data-kb="${i}"]`)?.focus(); };

  /**
   * Every value of one attribute at once: a fresh `tag` per value, with `name` set to it
   * (setAttribute), side by side in the parent of `sel`'s widget; waits until nothing is on its
   * way and none is loading, and says how each looks. The widgets then make way for one fresh
   * `tag` without attributes.
   */
  bx.stepAttribute = async (sel, tag, name, values, timeout) => {
    const frame = document.querySelector(sel).parentElement;
    const els = values.map((value) => {
      const el = document.createElement(tag);
      el.setAttribute(name, bx.decode(value));
      return el;
    });
    frame.replaceChildren(...els);
    const { ok, ms, busy } = await bx.quiet(() => els.every(loaded), timeout);
    return { ok, ms, busy, looks: els.map(bx.look), injected: bx.injected() };
  };
  bx.restore = (sel, tag) => {
    document.querySelector(sel).parentElement.replaceChildren(document.createElement(tag));
  };

  /** Put a fresh widget with these attributes (set with setAttribute) in place of the old one. */
  bx.replace = (sel, tag, attrs) => {
    const old = document.querySelector(sel);
    const el = document.createElement(tag);
    for (const [name, value] of attrs) el.setAttribute(name, bx.decode(value));
    old.replaceWith(el);
    return true;
  };
})();"""


def family(tag: str) -> str:
    """Which widgets share a page: the pipeline stages, the other model widgets, the Python ones."""
    if tag.startswith("tx-stage-"):
        return "stages"
    return "model" if WIDGETS.get(tag, {}).get("runtime") == "model" else "python"


class WidgetPage:
    """One embed page per widget family (``family``), into which each test puts a fresh widget.

    Python (Pyodide and NumPy) and the model start once for a family instead of once per
    widget, which is most of the time a sweep of 40 widgets would otherwise take. Each test
    still sees only what its own widget did: the errors logged since it started. A family
    gets a page of its own: the model sessions and workers earlier widgets left in a page
    (one per variant and graph they asked for) made each later widget in it slower, the
    pipeline stages three to four times.
    """

    def __init__(self, browser, site_url):
        self.browser = browser
        self.site_url = site_url
        self.watched = None
        self.family = None

    def open(self, tag: str):
        """A fresh context on the embed page of `tag` (the first widget of its family)."""
        context = self.browser.new_context(**NO_SERVICE_WORKER)
        self.watched = WatchedPage(context, self.site_url)
        self.watched.page.add_init_script(INSTRUMENT)
        self.watched.goto(f"embed/{WIDGETS[tag]['name']}/")
        self.watched.page.wait_for_selector("#tx-frame > *", state="attached")

    def show(self, tag: str) -> str:
        """Replace the frame's widget by a fresh `<tag>` (no attributes but its SHORT_RUNS ones); its CSS selector."""
        if self.watched is not None and self.family != family(tag):
            self.close()
        if self.watched is None or self.watched.page.is_closed():
            self.open(tag)
            self.family = family(tag)
        self.watched.page.evaluate(
            """([tag, attributes]) => {
                const el = document.createElement(tag);
                for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
                document.querySelector('#tx-frame').replaceChildren(el);
            }""",
            [tag, SHORT_RUNS.get(tag, {})],
        )
        return f"#tx-frame > {tag}"

    def close(self):
        if self.watched is not None:
            self.watched.page.context.close()
            self.watched = None


def widget_entry(tag: str) -> dict:
    """The catalogue entry of `tag`; fails the test when the site under test is not built."""
    if tag not in WIDGETS:
        pytest.fail("site/ is not built (no assets/tx/embed/v1/catalog.js): run `make site`")
    return WIDGETS[tag]
