/**
 * Whether one of the page's runtimes (Python, the model) is starting, so that background
 * work waits instead of competing with it for the processor.
 *
 *   trackStart(promiseOfTheStart);           // python.js, model.js
 *   whenQuiet().then(registerServiceWorker); // sw-register.js, through globalThis.txWhenQuiet
 *
 * On two cores, installing the service worker while Pyodide started cost about 1.7 s of its
 * cold start (bench/worker.py, page without widgets). The registration (and the caching it
 * starts) waits until the page has loaded, every tracked start has settled, and for
 * `QUIET_MS` after the later of the two nothing new began (a demo the reader starts right
 * after the page loads counts).
 * @module quiet
 */

/** How long the page must stay without a new start before it counts as quiet. */
export const QUIET_MS = 2000;

let starting = 0;
let lastChange = performance.now();

/**
 * Count `start` (a promise of a runtime's start) until it settles either way.
 * @param {Promise<unknown>} start
 */
export function trackStart(start) {
  starting++;
  lastChange = performance.now();
  const settled = () => {
    starting--;
    lastChange = performance.now();
  };
  Promise.resolve(start).then(settled, settled);
}

/**
 * Resolves once the document has loaded, no tracked start is pending, and neither a start
 * nor the load event happened in the last `quietMs`.
 * @param {number} [quietMs]
 * @returns {Promise<void>}
 */
export function whenQuiet(quietMs = QUIET_MS) {
  return new Promise((resolve) => {
    const check = () => {
      if (document.readyState === "complete" && starting === 0 && performance.now() - lastChange >= quietMs) {
        clearInterval(timer);
        resolve();
      }
    };
    const timer = setInterval(check, Math.max(50, quietMs / 8));
    check();
  });
}

if (typeof window !== "undefined") {
  window.addEventListener(
    "load",
    () => {
      lastChange = performance.now();
    },
    { once: true },
  );
  // sw-register.js is a classic script that runs before any module: it finds this here.
  window.txWhenQuiet = whenQuiet;
}
