/**
 * A widget's inputs in the page address, so that a link reproduces a view:
 *
 *   /inside/logit-lens/?logit-lens.prompt=The+Eiffel+Tower&logit-lens.layer=6
 *
 * Each widget's parameters are named `<key>.<attribute>`, the key being the element's `id`, or
 * its tag without "tx-" (two widgets of one kind on a page need ids). `readState` overrides the
 * element's attributes with the address's values when the widget starts; `writeState` puts the
 * current values back (history.replaceState: no new history entry, the other widgets' kept).
 * The embed pages (embed/v1/frame.js) take the same parameters, prefixed or not. On a course
 * page of another origin that imported the widgets, the address is the course's: the widgets
 * read it but never write to it.
 * @module widgets/url-state
 */

/** Whether the page is one of this site's (whose address the widgets may keep their inputs in). */
const ownPage = () => globalThis.location?.origin === new URL(import.meta.url).origin;

/** The prefix of an element's parameters: its id, else its tag without "tx-". */
export function stateKey(element) {
  return element.id || element.localName.replace(/^tx-/, "");
}

/**
 * Copy the address's values for `names` into the element's attributes (prefixed names only).
 * @param {HTMLElement} element
 * @param {string[]} names attribute names
 */
export function readState(element, names) {
  const params = new URLSearchParams(globalThis.location?.search || "");
  const key = stateKey(element);
  for (const name of names) {
    const value = params.get(`${key}.${name}`);
    if (value !== null) element.setAttribute(name, value);
  }
}

/**
 * Put `values` into the address as this widget's parameters; empty or null values are removed.
 * @param {HTMLElement} element
 * @param {Object<string, string|number|null>} values
 */
export function writeState(element, values) {
  if (!globalThis.history?.replaceState || !ownPage()) return;
  const url = new URL(location.href);
  const key = stateKey(element);
  for (const [name, value] of Object.entries(values)) {
    if (value === null || value === undefined || value === "") url.searchParams.delete(`${key}.${name}`);
    else url.searchParams.set(`${key}.${name}`, String(value));
  }
  if (url.href !== location.href) history.replaceState(history.state, "", url.href);
}
