/**
 * The bare iframe pages `embed/<name>/?...`: one widget, no site chrome.
 *
 * The widget is `<html data-widget>`; every query parameter except `theme` becomes one of
 * its attributes (`embed/sampling/?temperature=0.7&top-k=5`; a boolean attribute such as
 * `causal` is on when the parameter is present, `?causal`). A parameter may also carry the
 * widget's prefix, as the book's pages write them into the address (widgets/url-state.js:
 * `?logit-lens.prompt=...`), so a book page's query works here unchanged. `theme=light|dark|auto`
 * picks the colours (auto follows the reader's system setting). A parameter the widget
 * does not know is reported above it, so a typo does not go unnoticed.
 *
 * Whenever the content's height changes the page tells its parent window:
 *
 *   {type: "tx:resize", widget: "tx-sampling", height: 412}   (CSS pixels)
 *
 * A course page sizes the iframe with a few lines (see "Embed in your course").
 * @module embed/frame
 */
import { RESERVED, WIDGETS } from "./catalog.js";
import { define } from "./widgets.js";

export const RESIZE_MESSAGE = "tx:resize";

/**
 * The widget element for these query parameters, and the parameters it does not take.
 * @param {string} tag
 * @param {URLSearchParams} params
 * @returns {{element: HTMLElement, unknown: string[]}}
 */
export function widgetFromParams(tag, params) {
  const entry = WIDGETS[tag];
  const known = new Map(entry.attributes.map((a) => [a.name, a]));
  const element = document.createElement(tag);
  const unknown = [];
  const prefix = `${tag.replace(/^tx-/, "")}.`;
  for (const [given, value] of params) {
    const name = given.startsWith(prefix) ? given.slice(prefix.length) : given;
    if (RESERVED.includes(name)) continue;
    if (!known.has(name)) {
      unknown.push(name);
      continue;
    }
    element.setAttribute(name, known.get(name).boolean ? "" : value);
  }
  return { element, unknown };
}

function reportUnknown(tag, unknown, main) {
  if (unknown.length === 0) return;
  const names = WIDGETS[tag].attributes.map((a) => a.name);
  const note = document.createElement("p");
  note.className = "tx-note";
  note.setAttribute("role", "alert");
  note.textContent =
    `<${tag}> has no attribute ${unknown.map((n) => `“${n}”`).join(", ")}: ` +
    (names.length ? `it takes ${names.join(", ")}` : "it takes none") +
    " (and theme=light|dark|auto).";
  main.before(note);
}

/** Post the page's height to the parent window now and whenever it changes. */
function reportHeight(tag) {
  if (window.parent === window) return;
  let last = -1;
  const send = () => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === last) return;
    last = height;
    window.parent.postMessage({ type: RESIZE_MESSAGE, widget: tag, height }, "*");
  };
  new ResizeObserver(send).observe(document.body);
  send();
}

function start() {
  const tag = document.documentElement.dataset.widget;
  const main = document.getElementById("tx-frame");
  if (!WIDGETS[tag]) {
    main.textContent = `This page has no widget (${tag}).`;
    return;
  }
  const { element, unknown } = widgetFromParams(tag, new URLSearchParams(window.location.search));
  main.replaceChildren(element);
  reportUnknown(tag, unknown, main);
  define(tag);
  reportHeight(tag);
}

start();
