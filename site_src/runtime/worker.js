/**
 * Module Web Workers that also start when the page is on another origin than the script.
 *
 *   import { createModuleWorker } from "./worker.js";
 *   const worker = createModuleWorker(new URL("./python-worker.js", import.meta.url));
 *
 * Browsers refuse `new Worker(url)` when `url` is on another origin than the page, which
 * is the case for every widget embedded in a course page by script tag. For such a URL
 * the worker is started from a one-line module made in memory (a Blob URL, which has the
 * page's origin) that imports the real script by its absolute URL. The real script keeps
 * its own `import.meta.url`, so everything it resolves relative to itself (Pyodide,
 * onnxruntime-web, the model) still comes from the site that serves it; the site must
 * send `Access-Control-Allow-Origin` (GitHub Pages does).
 * @module worker
 */

/**
 * Whether `url` has the same origin as the code running now (page or worker).
 * @param {string | URL} url an absolute URL
 * @returns {boolean}
 */
export function isSameOrigin(url) {
  const here = globalThis.location;
  return Boolean(here) && new URL(url, here.href).origin === here.origin;
}

/**
 * The source of the module that a cross-origin worker starts from.
 * A static import, so the worker script has run before the worker takes its first message.
 * @param {string} href absolute URL of the worker script
 * @returns {string}
 */
export function bootstrapSource(href) {
  return `import ${JSON.stringify(href)};\n`;
}

/**
 * Start a module worker running the script at `url`.
 * @param {string | URL} url the worker script; relative URLs resolve against the page
 * @param {{name?: string}} [options] passed on to the Worker (its `type` is always "module")
 * @returns {Worker}
 */
export function createModuleWorker(url, options = {}) {
  const href = new URL(url, globalThis.location?.href).href;
  if (isSameOrigin(href)) return new Worker(href, { ...options, type: "module" });
  const blobUrl = URL.createObjectURL(new Blob([bootstrapSource(href)], { type: "text/javascript" }));
  const worker = new Worker(blobUrl, { ...options, type: "module" });
  // The worker has fetched its bootstrap once it answers or fails; the Blob URL can go then.
  const release = () => {
    URL.revokeObjectURL(blobUrl);
    worker.removeEventListener("message", release);
    worker.removeEventListener("error", release);
  };
  worker.addEventListener("message", release);
  worker.addEventListener("error", release);
  return worker;
}
