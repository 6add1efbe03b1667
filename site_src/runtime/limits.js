/**
 * How long the runtimes wait before they tell the reader about silence, and before they
 * give up: one definition for the Python worker, the model download and the widgets.
 *
 *   import { limits } from "./limits.js";
 *   limits().stallNoticeMs   // 5000
 *
 * `LIMITS` holds the defaults. A page may lower them before the runtimes start by setting
 * `globalThis.TX_LIMITS = {stallNoticeMs: 500}` (the fault tests do, through Playwright's
 * `add_init_script`, so that a stalled server is reported in a second, not five).
 * Workers do not see the page's globals: the clients (`python.js`, `model.js`) read
 * `limits()` on the page and send the numbers along.
 * @module limits
 */

/**
 * @typedef {object} Limits
 * @property {number} stallNoticeMs silence of an unfinished download before the reader is
 *   told "No data for 5 s — still waiting…"
 * @property {number} stallTimeoutMs silence after which the download fails (with Retry)
 * @property {number} pythonStartMs longest time Python's start-up (Pyodide, NumPy, demos) may
 *   go without a download making progress before it counts as failed, whatever the reason
 *   (e.g. WebAssembly that never finishes instantiating); a slow but moving download never
 *   trips it
 * @property {number} pythonAnswerMs longest time Python's worker may leave a ping unanswered
 *   while calls wait and none is running, once Python has started (while it starts, the
 *   limit is `pythonStartMs`), before it counts as gone (it is replaced and the
 *   waiting calls are sent to the new one; after each such replacement in a row the
 *   next worker gets twice as long, so a slow device cannot be caught in a loop)
 * @property {number} pythonHeapBytes size of Python's memory above which its worker is
 *   replaced after a call, to give the memory back (WebAssembly memory never shrinks)
 */

/** @type {Readonly<Limits>} */
export const LIMITS = Object.freeze({
  stallNoticeMs: 5000,
  stallTimeoutMs: 30000,
  pythonStartMs: 120000,
  pythonAnswerMs: 5000,
  pythonHeapBytes: 1024 ** 3,
});

/**
 * The limits in force on this page: `LIMITS` with any numbers from `globalThis.TX_LIMITS`.
 * @param {Partial<Limits>} [overrides] numbers that win over both (e.g. a call's own options)
 * @returns {Limits}
 */
export function limits(overrides = {}) {
  const out = { ...LIMITS };
  for (const source of [globalThis.TX_LIMITS, overrides]) {
    for (const [key, value] of Object.entries(source || {})) {
      if (key in LIMITS && Number.isFinite(value) && value > 0) out[key] = value;
    }
  }
  return out;
}
