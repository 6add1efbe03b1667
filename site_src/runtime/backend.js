/**
 * What the page and the model worker both ask of the browser before a model loads: a WebGPU
 * adapter, and a JSON file of the site (the models' index, a manifest) read with its faults told
 * apart (no connection, an HTTP error, damaged JSON), each named by the caller's message.
 * @module backend
 */

/** The browser's WebGPU adapter, or null when it offers none (no `navigator.gpu`, or no adapter). */
export async function webgpuAdapter() {
  if (!globalThis.navigator?.gpu) return null;
  return navigator.gpu.requestAdapter().catch(() => null);
}

/**
 * A JSON file, fetched past the HTTP cache and parsed.
 * @param {string|URL} url
 * @param {(fault: {kind: "network"|"http"|"json", status?: number}) => Error} fail the error to
 *   throw for a fault (errors.js dataFileMessage words it)
 * @returns {Promise<unknown>}
 */
export async function fetchJson(url, fail) {
  let response;
  try {
    response = await fetch(url, { cache: "no-cache" });
  } catch {
    throw fail({ kind: "network" });
  }
  if (!response.ok) throw fail({ kind: "http", status: response.status });
  try {
    return JSON.parse(await response.text());
  } catch {
    throw fail({ kind: "json" });
  }
}
