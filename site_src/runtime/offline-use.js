/**
 * What a runtime tells the book's offline copy (runtime/sw-register.js, on the book's own
 * pages; on a course page that imported the widgets from elsewhere these do nothing).
 *
 *   keepForOffline(workerUrl);                        // python.js, model.js: this runtime started
 *   keepModelFiles(manifestUrl, files);               // model.js, packed-weights.js: files it downloads
 *   if (await notSavedOffline(workerUrl, err)) ...    // it failed: only because it is not stored, offline?
 *
 * @module offline-use
 */

/**
 * Record that this page started the runtime that `url` (a trigger of offline_hook.py's
 * groups: a runtime's worker script, the model index) starts, so that the service worker
 * stores that runtime for offline reading, now or once it is active on a later page.
 * @param {string|URL} url
 */
export function keepForOffline(url) {
  globalThis.txOffline?.keep(String(url));
}

/**
 * Record model files (manifest entries, paths relative to `baseUrl`) that a runtime is
 * downloading into runtime/download.js's cache: a later page of the book completes them
 * when the reader left this one before they were in.
 * @param {string} baseUrl
 * @param {{path: string, bytes: number, sha256: string}[]} files
 */
export function keepModelFiles(baseUrl, files) {
  globalThis.txOffline?.keepFiles(String(baseUrl), files);
}

/**
 * Why the runtime that `url` starts failed (`err`) offline, when that is the reason: "runtime"
 * when its group is incomplete in the offline copy, "files" when the error is a failed
 * connection for a file the copy does not hold (a model file never stored); null when the
 * network answers, the copy holds it all, or no service worker controls the page (or answers).
 * @param {string|URL} url
 * @param {{kind?: string}} [err]
 * @returns {Promise<"runtime"|"files"|null>}
 */
export async function notSavedOffline(url, err) {
  const gap = await globalThis.txOffline?.gap(String(url));
  if (!gap || gap.online) return null;
  if (!gap.stored) return "runtime";
  return err?.kind === "network" ? "files" : null;
}
