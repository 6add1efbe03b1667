/**
 * Watching the downloads of a loader this site does not control (Pyodide's `loadPyodide`
 * and `loadPackage`), so that a missing, damaged or stalled file is named to the reader
 * instead of leaving the loader waiting forever.
 *
 *   const watch = watchDownloads(INDEX_URL, { describe: pythonStartMessage, stallNoticeMs, stallTimeoutMs, onStall });
 *   await watch.prefetch(INDEX_URL + "pyodide.asm.js");
 *   const pyodide = await Promise.race([loadPyodide({ indexURL: INDEX_URL }), watch.failed]);
 *   watch.stop();
 *
 * While it watches, `fetch` and `WebAssembly.instantiateStreaming` of the current global
 * scope (meant for a worker of its own) are wrapped. For each request below `base`:
 * - an HTTP error, or a request that fails (network, or a `integrity` mismatch: it is asked
 *   again with HEAD, without integrity, to tell a 404 from a damaged file), is a fault;
 * - a `.json` file that does not parse, or a `.wasm` / `.zip` / `.whl` file that does not
 *   start with its format's signature, is "damaged"; so is WebAssembly that does not compile;
 * - an unfinished download that gets no data for `stallNoticeMs` calls `onStall(seconds, file)`
 *   (about once a second; `onResume()` when data flows again) and is a fault after
 *   `stallTimeoutMs`.
 * The first fault rejects `failed` with a `LoadError` whose message is `describe(fault)`.
 * From then on the loader is abandoned: the failing request and every later one never
 * settle, so the loader neither carries on with broken files nor logs errors of its own;
 * whoever owns the worker replaces it to try again.
 * @module fetch-watch
 */
import { DAMAGE, LoadError, fileName } from "./errors.js";

/** First bytes of the binary formats Pyodide downloads. */
const SIGNATURES = {
  wasm: [0x00, 0x61, 0x73, 0x6d], // "\0asm"
  zip: [0x50, 0x4b], // "PK"
  whl: [0x50, 0x4b],
};

/** A promise that never settles: what an abandoned loader waits on. */
const never = () => new Promise(() => {});

/**
 * @typedef {{kind: "http"|"network"|"damaged"|"stalled", file: string, status?: number,
 *   detail?: string, seconds?: number}} Fault
 */

/**
 * Start watching the downloads below `base`.
 * @param {string} base URL prefix of the watched files (e.g. Pyodide's indexURL)
 * @param {object} options
 * @param {(fault: Fault) => string} options.describe the reader-facing message of a fault
 * @param {number} options.stallNoticeMs silence before `onStall` is called
 * @param {number} options.stallTimeoutMs silence after which the download is a fault
 * @param {(seconds: number, file: string) => void} [options.onStall]
 * @param {() => void} [options.onResume]
 * @returns {{failed: Promise<never>, fault: () => LoadError|null, idleMs: () => number,
 *   prefetch: (url: string) => Promise<void>, stop: () => void}}
 */
export function watchDownloads(base, { describe, stallNoticeMs, stallTimeoutMs, onStall = () => {}, onResume = () => {} }) {
  const scope = globalThis;
  const realFetch = scope.fetch;
  const realInstantiate = WebAssembly.instantiateStreaming;
  const active = new Map(); // request number -> {file, lastData}
  const wrapped = new WeakMap(); // Response we made -> file name
  let nextId = 0;
  let lastActivity = Date.now(); // a request began or ended, or bytes arrived
  let fault = null;
  let stalled = false;
  let rejectFailed;
  const failed = new Promise((_, reject) => {
    rejectFailed = reject;
  });
  failed.catch(() => {}); // the caller races it; no unhandled rejection when it does not

  /** Record the first fault and reject `failed`. */
  const fail = (details) => {
    if (fault) return;
    fault = new LoadError(describe(details), { kind: details.kind, file: details.file });
    rejectFailed(fault);
  };

  /** Why a request failed: ask again with HEAD (no integrity) for its HTTP status. */
  const diagnose = async (url, file, init) => {
    try {
      const check = await realFetch(url, { method: "HEAD", cache: "no-store" });
      if (!check.ok) return { kind: "http", file, status: check.status };
      if (init && init.integrity) return { kind: "damaged", file, detail: DAMAGE.hash };
    } catch {
      // still unreachable: a network fault
    }
    return { kind: "network", file };
  };

  const touch = (id) => {
    lastActivity = Date.now();
    const entry = active.get(id);
    if (entry) entry.lastData = lastActivity;
  };

  async function watchedFetch(input, init) {
    const url = new URL(input instanceof Request ? input.url : String(input), base).href;
    if (!url.startsWith(base)) return realFetch(input, init);
    if (fault) return never();
    const file = fileName(url);
    const id = nextId++;
    lastActivity = Date.now();
    active.set(id, { file, lastData: lastActivity });
    let response;
    try {
      response = await realFetch(input, init);
    } catch {
      active.delete(id);
      if (!fault) fail(await diagnose(url, file, init));
      return never();
    }
    touch(id);
    if (!response.ok) {
      active.delete(id);
      fail({ kind: "http", file, status: response.status });
      return never();
    }
    const init2 = { status: response.status, statusText: response.statusText, headers: response.headers };
    const type = file.split(".").pop();
    if (type === "json") {
      const text = await response.text();
      active.delete(id);
      try {
        JSON.parse(text);
      } catch {
        fail({ kind: "damaged", file, detail: DAMAGE.json });
      }
      return fault ? never() : new Response(text, init2);
    }
    if (!response.body) {
      active.delete(id);
      return response;
    }
    const signature = SIGNATURES[type];
    let seen = 0;
    const body = response.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          touch(id);
          for (let i = 0; signature && seen < signature.length && i < chunk.length; i++, seen++) {
            if (chunk[i] !== signature[seen]) fail({ kind: "damaged", file, detail: type === "wasm" ? DAMAGE.wasm : DAMAGE.zip });
          }
          if (!fault) controller.enqueue(chunk);
        },
        flush() {
          active.delete(id);
          return fault ? never() : undefined;
        },
        cancel() {
          active.delete(id);
        },
      }),
    );
    const out = new Response(body, init2);
    wrapped.set(out, file);
    return out;
  }

  async function watchedInstantiate(source, imports) {
    try {
      return await realInstantiate.call(WebAssembly, source, imports);
    } catch (err) {
      if (!fault) {
        const response = await source;
        const file = wrapped.get(response) || fileName(response.url || "WebAssembly");
        const wrongType = /MIME type/i.test(String(err && err.message));
        fail(
          wrongType
            ? { kind: "http", file, detail: "the server sent it with the wrong type (not application/wasm)" }
            : { kind: "damaged", file, detail: DAMAGE.wasm },
        );
      }
      return never();
    }
  }

  const timer = setInterval(
    () => {
      if (fault) return;
      let oldest = null;
      for (const entry of active.values()) if (!oldest || entry.lastData < oldest.lastData) oldest = entry;
      const silent = oldest ? Date.now() - oldest.lastData : 0;
      if (oldest && silent >= stallTimeoutMs) {
        fail({ kind: "stalled", file: oldest.file, seconds: silent / 1000 });
      } else if (oldest && silent >= stallNoticeMs) {
        stalled = true;
        onStall(silent / 1000, oldest.file);
      } else if (stalled) {
        stalled = false;
        onResume();
      }
    },
    Math.max(50, Math.min(1000, stallNoticeMs / 4)),
  );

  scope.fetch = watchedFetch;
  WebAssembly.instantiateStreaming = watchedInstantiate;

  return {
    failed,
    /** The fault seen so far (a LoadError), or null. */
    fault: () => fault,
    /** Milliseconds since a watched download last made progress (began, got bytes). */
    idleMs: () => Date.now() - lastActivity,
    /**
     * Download a script through the watch (status, stall), then import it; a script that
     * does not parse is "damaged". Rejects with the fault.
     */
    async prefetch(url) {
      const file = fileName(url);
      const response = await Promise.race([watchedFetch(url), failed]);
      await Promise.race([response.arrayBuffer(), failed]);
      try {
        await import(url);
      } catch (err) {
        fail(err instanceof SyntaxError ? { kind: "damaged", file, detail: DAMAGE.js } : await diagnose(url, file));
        throw fault;
      }
    },
    /** Stop the stall timer; unless a fault abandoned the loader, give back the real fetch. */
    stop() {
      clearInterval(timer);
      if (fault) return;
      scope.fetch = realFetch;
      WebAssembly.instantiateStreaming = realInstantiate;
    },
  };
}
