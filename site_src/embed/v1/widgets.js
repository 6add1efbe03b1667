/**
 * The textbook's widgets on any web page, from any origin:
 *
 *   <script type="module" src="https://SITE/assets/tx/embed/v1/widgets.js"></script>
 *   <tx-sampling temperature="0.7" top-k="5"></tx-sampling>
 *
 * This module knows every widget of the site (`catalog.js`, generated at build time from
 * the widget files) and defines a widget's custom element as soon as one of its tags is in
 * the page, now or later (a MutationObserver watches for new ones). Only the code of the
 * widgets on the page is downloaded, and the heavy runtimes only when a widget asks for
 * them: Python (Pyodide and NumPy, for the NumPy demos) on a widget's first computation,
 * the GPT-2 model (onnxruntime-web and the weights) when a model widget starts. Everything
 * is fetched from the site that serves this file, resolved from `import.meta.url`, so the
 * course page needs nothing else; the site must send `Access-Control-Allow-Origin`
 * (GitHub Pages does) and web workers are started through a same-origin Blob
 * (`runtime/worker.js`).
 *
 * "v1" in the path is the version of this interface (tag names, attributes, events):
 * a change that would break pages using it gets a new path.
 *
 * Scripts can also use it as a module:
 *
 *   import { define, defineAll, WIDGETS, VERSION, BUILD } from ".../widgets.js";
 *   await define("tx-rope");   // resolves once <tx-rope> is a defined element
 * @module embed/widgets
 */
import { BUILD, VERSION, WIDGETS } from "./catalog.js";

export { BUILD, VERSION, WIDGETS };

const SELECTOR = Object.keys(WIDGETS).join(",");
const loading = new Map();

/**
 * Define one widget's custom element (loads its module once).
 * @param {string} tag e.g. "tx-sampling"
 * @returns {Promise<CustomElementConstructor>}
 */
export function define(tag) {
  const entry = WIDGETS[tag];
  if (!entry) return Promise.reject(new Error(`The textbook has no widget <${tag}>; it has ${Object.keys(WIDGETS).join(", ")}.`));
  if (!loading.has(tag)) {
    const url = new URL(entry.module, import.meta.url).href;
    const promise = customElements.get(tag) ? Promise.resolve(customElements.get(tag)) : import(url).then(() => customElements.whenDefined(tag));
    promise.catch((err) => {
      loading.delete(tag); // a later call retries
      showLoadError(tag, err);
    });
    loading.set(tag, promise);
  }
  return loading.get(tag);
}

/**
 * Define every widget now (e.g. for a page that creates them inside its own shadow roots,
 * which the MutationObserver does not see).
 * @returns {Promise<CustomElementConstructor[]>}
 */
export function defineAll() {
  return Promise.all(Object.keys(WIDGETS).map(define));
}

/** Define the widgets found in `root` (an element, a document or a shadow root). */
export function defineIn(root) {
  const found = new Set();
  if (root.nodeType === Node.ELEMENT_NODE && WIDGETS[root.localName]) found.add(root.localName);
  if (root.querySelectorAll) for (const el of root.querySelectorAll(SELECTOR)) found.add(el.localName);
  return Promise.all([...found].map(define));
}

/** A widget whose code could not be loaded says so in the page instead of staying empty. */
function showLoadError(tag, err) {
  for (const el of document.querySelectorAll(tag)) {
    if (customElements.get(tag)) return;
    el.dataset.state = "error";
    el.textContent = `This interactive widget could not load (${(err && err.message) || err}). Reload the page to try again.`;
  }
}

function watch() {
  defineIn(document);
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.ELEMENT_NODE) defineIn(node);
      }
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
}

if (typeof document !== "undefined") watch();
