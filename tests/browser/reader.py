"""What a reader sees on a page: visible text, horizontal overflow, clipped content, screenshots.

Shared by the reader-view tests (``test_reader_view.py``), the bad-input sweep and the
fault tests. Each function takes a Playwright page and returns plain data, so a test can
report every problem of a page at once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PHONE_WIDTH = 375  # px: a small phone in portrait (iPhone SE / 12 mini class)
DESKTOP_WIDTH = 1280
# Words that stand where a value belongs when code stringified the wrong thing.
BAD_VALUE = re.compile(r"\[object \w*\]|\bundefined\b|\bNaN\b|-?\bInfinity\b|\bnull\b")
VALUE_WORDS = 3  # a page text this short is a value or a label, not a sentence about NaN
SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"

# The visible text nodes of the document and of every open shadow root whose text matches
# `pattern` (BAD_VALUE's source), each with where it sits: the tx-* widget that holds it (or "")
# and whether it is inside code or a formula. The pattern is tried first: most text holds no
# such word, and only a match is worth the visibility check (which lays the page out).
_VISIBLE_TEXT = """(pattern) => {
  const bad = new RegExp(pattern);
  const out = [];
  const walk = (root, widget) => {
    const it = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let node = it.currentNode; node; node = it.nextNode()) {
      if (node.nodeType !== Node.TEXT_NODE) {
        if (node.shadowRoot) walk(node.shadowRoot, node.localName.startsWith("tx-") ? node.localName : widget);
        continue;
      }
      if (!bad.test(node.nodeValue)) continue;
      const text = node.nodeValue.trim();
      const parent = node.parentElement;
      if (!text || !parent || ["SCRIPT", "STYLE", "TEMPLATE", "TITLE"].includes(parent.tagName)) continue;
      if (parent.closest("svg") ? false : !parent.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
      const quoted = !!parent.closest("code, pre, kbd, samp, .katex, .arithmatex, textarea, [data-tx-literal]");
      out.push({ text, widget, quoted });
    }
  };
  walk(document.body, "");
  return out;
}"""


def bad_values(page, allowed: dict[str, set[str]] | None = None) -> list[str]:
    """Visible text where a stringified non-value shows: "[object Object]", "undefined", "NaN", ...

    Text inside code, formulas and text fields is skipped (code may say ``None`` or ``NaN``).
    In a widget every occurrence counts; in the page's own prose, which may discuss NaN,
    ``[object …]`` always counts and the other words only in a short text (at most
    ``VALUE_WORDS`` words: a table cell or a label, where a value belongs).
    ``allowed`` maps a widget tag ("" for the page prose) to words it may show on purpose,
    such as ``NaN`` in a float-overflow demo.
    """
    allowed = allowed or {}
    problems = []
    for item in page.evaluate(_VISIBLE_TEXT, BAD_VALUE.pattern):
        if item["quoted"]:
            continue
        prose = not item["widget"] and len(item["text"].split()) > VALUE_WORDS
        for match in BAD_VALUE.finditer(item["text"]):
            if prose and not match.group(0).startswith("[object"):
                continue
            if match.group(0) in allowed.get(item["widget"], set()):
                continue
            where = f"<{item['widget']}>" if item["widget"] else "page text"
            problems.append(f"{where} shows {match.group(0)!r} in {item['text'][:120]!r}")
    return problems


# Elements (in the document or a shadow root) whose box ends right of the viewport while no
# ancestor scrolls or clips them: what makes a phone page scroll sideways. Only the outermost
# such element of each subtree is named (its children stick out because it does).
_OVERFLOW = """(width) => {
  const found = [];
  const scrolls = (el) => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(el).overflowX);
  const name = (el) => {
    const host = el.getRootNode().host;
    const cls = typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    return (host ? `<${host.localName}> ` : "") + el.localName + cls;
  };
  // contained: an ancestor scrolls or clips; reported: an ancestor was already named.
  const walk = (el, contained, reported) => {
    if (getComputedStyle(el).position === "fixed") return;  // a toast or dialog: does not widen the page
    const r = el.getBoundingClientRect();
    const sticks = !contained && r.width > 0 && r.right > width + 1;
    if (sticks && !reported) found.push(`${name(el)} ends at ${Math.round(r.right + scrollX)} px`);
    const inner = contained || (el !== document.body && el !== document.documentElement && scrolls(el));
    const kids = [...el.children, ...(el.shadowRoot ? el.shadowRoot.children : [])];
    for (const kid of kids) walk(kid, inner, reported || sticks);
  };
  walk(document.body, false, false);
  return found;
}"""


def page_width(page) -> int:
    """How wide the page can be scrolled (the reader's sideways scroll is this minus the viewport)."""
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


def overflow(page, width: int = PHONE_WIDTH) -> list[str]:
    """Why the page is wider than `width`: the elements that stick out (empty when it fits)."""
    if page_width(page) <= width:
        return []
    culprits = page.evaluate(_OVERFLOW, width)
    return [f"page is {page_width(page)} px wide at a {width} px viewport"] + culprits[:8]


# Inside widgets: an element that hides part of its content (overflow hidden/clip, or a
# select narrower than its text) — the "heatmap cut after six columns" kind of fault.
_CLIPPED = """() => {
  const found = [];
  const walk = (root, widget) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot, el.localName);
      if (!widget || !el.checkVisibility()) continue;
      const style = getComputedStyle(el);
      if (el.localName === "select") {
        const option = el.options[el.selectedIndex];
        if (!option) continue;
        const probe = document.createElement("span");
        probe.style.cssText = `font:${style.font};position:absolute;visibility:hidden;white-space:pre`;
        probe.textContent = option.textContent;
        document.body.appendChild(probe);
        const need = probe.getBoundingClientRect().width + 16;  // the text, and the arrow beside it
        probe.remove();
        if (el.clientWidth < need) {
          found.push(`<${widget}> select[name=${el.name}] is ${el.clientWidth} px, its "${option.textContent}" needs ${Math.ceil(need)}`);
        }
      } else if (!["input", "textarea"].includes(el.localName)  // a field scrolls its own text
                 && ["hidden", "clip"].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 2) {
        found.push(`<${widget}> ${el.localName}.${el.className} hides ${el.scrollWidth - el.clientWidth} px of its content`);
      }
    }
  };
  walk(document, "");
  return found;
}"""


def clipped(page) -> list[str]:
    """Widget content that is cut off instead of wrapping or scrolling."""
    return page.evaluate(_CLIPPED)


# Inside widgets: a box the reader must scroll sideways to see whole. Code (pre, textarea) and a
# box marked `.scroll` (a wide numeric table, a pipeline figure, the decoding steps) may; a figure of the
# page's own example must fit the screen (the attention map of ten keys on a phone, say).
_SCROLLS = """() => {
  const found = [];
  const walk = (root, widget) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot, el.localName);
      if (!widget || el.matches("pre, textarea, .scroll") || !el.checkVisibility()) continue;
      if (!["auto", "scroll"].includes(getComputedStyle(el).overflowX)) continue;
      if (el.scrollWidth > el.clientWidth + 2) {
        found.push(`<${widget}> ${el.localName}.${el.className} must be scrolled sideways: ${el.scrollWidth} px of content in ${el.clientWidth}`);
      }
    }
  };
  walk(document, "");
  return found;
}"""


def scrolls_sideways(page) -> list[str]:
    """Widget figures wider than their box, that the reader must scroll to see whole."""
    return page.evaluate(_SCROLLS)


# Every widget's screenshot on every page, not only the first of each kind per device and scheme.
ALL_SCREENSHOTS = bool(os.environ.get("TX_ALL_SCREENSHOTS"))


def screenshot_widgets(page, label: str, shown: set[str] | None = None) -> list[Path]:
    """A PNG of every tx-* widget on the page under build/screenshots/<label>/ (not committed);
    with `shown` (the tags that have one already, updated), only of the widgets whose kind has
    none yet, unless TX_ALL_SCREENSHOTS is set. A screenshot takes about 0.13 s here, and a
    widget kind looks the same from page to page: 38 predict boxes added 5 s a tour.

    Material's sticky header is hidden meanwhile, so it does not cover the top of a widget."""
    folder = SHOTS / label
    paths = []
    page.evaluate("document.querySelector('.md-header')?.style.setProperty('visibility', 'hidden')")
    try:
        for i, handle in enumerate(page.query_selector_all("[data-state]")):
            tag = handle.evaluate("el => el.localName")
            if not tag.startswith("tx-") or (shown is not None and tag in shown and not ALL_SCREENSHOTS):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{i:02d}-{tag}.png"
            try:
                handle.screenshot(path=str(path), timeout=5000)
                paths.append(path)
                if shown is not None:
                    shown.add(tag)
            except Exception:  # an element that is not visible (0 × 0) has no screenshot
                continue
    finally:
        page.evaluate("document.querySelector('.md-header')?.style.removeProperty('visibility')")
    return paths


# Inside widgets' SVG figures: two labels drawn over each other (rows too short for their text).
_OVERLAPS = """() => {
  const found = [];
  const walk = (root, widget) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot, el.localName);
      if (!widget || el.localName !== "svg" || !el.checkVisibility()) continue;
      const boxes = [...el.querySelectorAll("text")].slice(0, 400).map(t => [t, t.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && r.height > 0);
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const [a, ra] = boxes[i], [b, rb] = boxes[j];
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (w > 0 && h > 0 && w * h > 0.25 * Math.min(ra.width * ra.height, rb.width * rb.height)) {
          const figure = el.closest("[data-name]");
          found.push(`<${widget}> ${figure ? `figure "${figure.dataset.name}"` : "svg"}: "${a.textContent}" overlaps "${b.textContent}"`);
          i = boxes.length; break;  // one report per figure
        }
      }
    }
  };
  walk(document, "");
  return found;
}"""


def overlapping_text(page) -> list[str]:
    """SVG labels in widgets drawn on top of each other (one line per figure)."""
    return page.evaluate(_OVERLAPS)
