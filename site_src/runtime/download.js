/**
 * Downloading the model's files: in parallel, with one byte-accurate progress total,
 * each file checked against its size and sha256 (SubtleCrypto) before anyone uses it,
 * and kept in Cache Storage so that the next visit needs no network at all.
 *
 *   const bytes = await fetchVerified(files, { baseUrl, onProgress, onNotice });
 *   bytes.get("q4/model.onnx")  // Uint8Array
 *
 * `files` are manifest entries `{path, bytes, sha256}`, paths relative to `baseUrl`.
 * Cache entries are keyed by URL plus sha256, so a rebuilt model never reuses stale
 * bytes; older versions of the same file are deleted when a new one is stored.
 * When the browser refuses to store (QuotaExceededError, or no Cache Storage at all)
 * the files stay in memory for this visit and `onNotice` says so once.
 *
 * Works in Web Workers and on the page.
 * @module download
 */
import { stallNotice } from "./errors.js";
import { LIMITS } from "./limits.js";

/** Name of the Cache Storage bucket holding model files. */
export const CACHE_NAME = "tx-models-v1";

/** A file that could not be fetched or did not match the manifest. The reader can retry. */
export class ModelFileError extends Error {
  /**
   * @param {string} message what went wrong, for the reader
   * @param {{kind: "http"|"missing"|"network"|"stalled"|"truncated"|"size"|"mismatch", path: string}} details
   */
  constructor(message, { kind, path }) {
    super(message);
    this.name = "ModelFileError";
    this.kind = kind;
    this.path = path;
    this.retryable = true;
  }
}

/** Lower-case hex sha256 of some bytes. */
export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function cacheKey(url, sha256) {
  const key = new URL(url);
  key.searchParams.set("tx-sha256", sha256);
  return key.href;
}

function withoutHash(url) {
  const u = new URL(url);
  u.searchParams.delete("tx-sha256");
  return u.href;
}

async function openCache() {
  try {
    return globalThis.caches ? await globalThis.caches.open(CACHE_NAME) : null;
  } catch {
    return null; // e.g. storage disabled by the browser's privacy settings
  }
}

/** Remove cached versions of these URLs whose hash is not the wanted one. */
async function pruneStale(cache, wanted) {
  const byUrl = new Map(wanted.map(({ url, key }) => [url, key]));
  for (const request of await cache.keys()) {
    const url = withoutHash(request.url);
    if (byUrl.has(url) && byUrl.get(url) !== request.url) await cache.delete(request);
  }
}

/** Cached bytes of a file, or null when absent or no longer matching its hash. */
async function fromCache(cache, file) {
  const response = await cache.match(file.key);
  if (!response) return null;
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length === file.bytes && (await sha256Hex(bytes)) === file.sha256) return bytes;
  await cache.delete(file.key);
  return null;
}

const STATUS_TEXT = { 403: "Forbidden", 404: "Not Found", 410: "Gone", 500: "Internal Server Error", 503: "Service Unavailable" };

/**
 * Fetch one file into a buffer of exactly the manifest's size.
 * `onBytes(n)` is called as chunks arrive; `watch` resets the stall timer.
 */
async function fetchFile(file, { signal, onBytes, watch }) {
  let response;
  try {
    response = await fetch(file.url, { signal, cache: "no-store" });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw new ModelFileError(`Could not download ${file.path}: ${err.message || err}. Check your connection and retry.`, { kind: "network", path: file.path });
  }
  if (!response.ok) {
    const what = `${response.status} ${response.statusText || STATUS_TEXT[response.status] || ""}`.trim();
    throw new ModelFileError(
      response.status === 404
        ? `Could not download ${file.path}: the server has no such file (HTTP ${what}). The site may be updating; retry in a moment.`
        : `Could not download ${file.path}: the server answered HTTP ${what}.`,
      { kind: response.status === 404 ? "missing" : "http", path: file.path },
    );
  }
  const bytes = new Uint8Array(file.bytes);
  let offset = 0;
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      watch();
      if (offset + value.length > bytes.length) {
        throw new ModelFileError(
          `${file.path} is larger than the manifest says (${file.bytes.toLocaleString("en")} bytes): the download does not match this model.`,
          { kind: "size", path: file.path },
        );
      }
      bytes.set(value, offset);
      offset += value.length;
      onBytes(value.length);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    if (signal.aborted) throw signal.reason;
    if (err instanceof ModelFileError) throw err;
    throw new ModelFileError(`The download of ${file.path} broke off: ${err.message || err}. Retry to continue.`, { kind: "network", path: file.path });
  }
  if (offset !== file.bytes) {
    throw new ModelFileError(`${file.path} arrived truncated: ${offset.toLocaleString("en")} of ${file.bytes.toLocaleString("en")} bytes.`, {
      kind: "truncated",
      path: file.path,
    });
  }
  if ((await sha256Hex(bytes)) !== file.sha256) {
    throw new ModelFileError(`${file.path} is corrupted: its sha256 does not match the manifest.`, { kind: "mismatch", path: file.path });
  }
  return bytes;
}

/**
 * Get every file, from Cache Storage when it holds a verified copy, else from the network.
 * @param {{path: string, bytes: number, sha256: string}[]} files
 * @param {object} options
 * @param {string} options.baseUrl URL the paths are relative to (the manifest's)
 * @param {(p: {stage: string, message: string, loaded?: number, total?: number}) => void} [options.onProgress]
 * @param {(message: string) => void} [options.onNotice] a one-off remark for the reader
 * @param {number} [options.concurrency=4] files downloaded at the same time
 * @param {number} [options.stallNoticeMs=LIMITS.stallNoticeMs] silence before the reader is told
 *   "No data for 5 s — still waiting…" (progress stage "stalled", updated every second)
 * @param {number} [options.stallTimeoutMs=LIMITS.stallTimeoutMs] silence after which the download fails (retryable)
 * @param {boolean} [options.useCache=true] read and write Cache Storage
 * @returns {Promise<{files: Map<string, Uint8Array>, fromCache: number, fromNetwork: number, storage: "cache"|"memory"}>}
 *   `fromCache` / `fromNetwork` count bytes
 */
export async function fetchVerified(
  files,
  {
    baseUrl,
    onProgress = () => {},
    onNotice = () => {},
    concurrency = 4,
    stallNoticeMs = LIMITS.stallNoticeMs,
    stallTimeoutMs = LIMITS.stallTimeoutMs,
    useCache = true,
  } = {},
) {
  const entries = files.map((f) => {
    const url = new URL(f.path, baseUrl).href;
    return { ...f, url, key: cacheKey(url, f.sha256) };
  });
  const total = entries.reduce((sum, f) => sum + f.bytes, 0);
  const out = new Map();
  let loaded = 0;
  let lastReport = 0;
  const report = (force = false) => {
    const now = Date.now();
    if (!force && now - lastReport < 50) return;
    lastReport = now;
    onProgress({ stage: "download", message: "Downloading the model", loaded, total });
  };

  let cache = useCache ? await openCache() : null;
  let storage = cache ? "cache" : "memory";
  if (useCache && !cache) onNotice("This browser offers no storage for the model here, so it stays in memory and downloads again on your next visit.");
  let fromCacheBytes = 0;
  const missing = [];
  if (cache) {
    onProgress({ stage: "cache", message: "Looking for the model in your browser's storage" });
    try {
      await pruneStale(cache, entries);
      for (const file of entries) {
        const bytes = await fromCache(cache, file);
        if (bytes) {
          out.set(file.path, bytes);
          loaded += bytes.length;
          fromCacheBytes += bytes.length;
        } else {
          missing.push(file);
        }
      }
    } catch {
      missing.length = 0;
      missing.push(...entries.filter((f) => !out.has(f.path)));
    }
  } else {
    missing.push(...entries);
  }
  if (missing.length === 0) return { files: out, fromCache: fromCacheBytes, fromNetwork: 0, storage };
  report(true);

  const abort = new AbortController();
  let silentSince = Date.now();
  let warned = null; // the stall notice shown last, or null while data flows
  const watch = () => {
    silentSince = Date.now();
    if (warned) {
      warned = null;
      report(true);
    }
  };
  const stallTimer = setInterval(
    () => {
      const silent = Date.now() - silentSince;
      if (silent >= stallTimeoutMs) {
        const path = missing.find((f) => !out.has(f.path))?.path ?? "the model";
        abort.abort(
          new ModelFileError(`The server stopped sending ${path}: nothing arrived for ${Math.round(silent / 1000)} s. Retry to continue the download.`, {
            kind: "stalled",
            path,
          }),
        );
      } else if (silent >= stallNoticeMs) {
        const message = stallNotice(silent / 1000);
        if (message !== warned) onProgress({ stage: "stalled", message, loaded, total }); // once a second
        warned = message;
      }
    },
    Math.max(50, Math.min(1000, stallNoticeMs / 4)),
  );

  const storeOne = async (file, bytes) => {
    if (!cache) return;
    try {
      await cache.put(file.key, new Response(bytes, { headers: { "content-type": "application/octet-stream", "content-length": String(bytes.length) } }));
    } catch (err) {
      cache = null;
      if (storage === "memory") return; // another file's store failed first and said so
      storage = "memory";
      onNotice(
        err && err.name === "QuotaExceededError"
          ? "Your browser has no room left to store the model (storage quota), so it stays in memory for this visit and downloads again next time."
          : "Your browser would not store the model, so it stays in memory for this visit and downloads again next time.",
      );
    }
  };

  const queue = [...missing];
  const worker = async () => {
    while (queue.length && !abort.signal.aborted) {
      const file = queue.shift();
      const bytes = await fetchFile(file, {
        signal: abort.signal,
        watch,
        onBytes: (n) => {
          loaded += n;
          report();
        },
      });
      out.set(file.path, bytes);
      await storeOne(file, bytes);
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, missing.length) }, worker).map((p) =>
        p.catch((err) => {
          if (!abort.signal.aborted) abort.abort(err);
          throw err;
        }),
      ),
    );
  } catch {
    throw abort.signal.reason;
  } finally {
    clearInterval(stallTimer);
  }
  report(true);
  return { files: out, fromCache: fromCacheBytes, fromNetwork: total - fromCacheBytes, storage };
}

/**
 * Store for offline reading those of `files` that the cache lacks (checked by key only: the
 * stored ones are not read), downloaded and verified as `fetchVerified` does. A page calls
 * it for the model files a runtime started to download on a page the reader has left
 * (runtime/sw-register.js keeps that record).
 * @param {{path: string, bytes: number, sha256: string}[]} files manifest entries
 * @param {{baseUrl: string}} options
 * @returns {Promise<boolean>} whether every file is stored now
 */
export async function keepFiles(files, { baseUrl }) {
  const cache = await openCache();
  if (!cache) return false;
  const missing = [];
  for (const f of files) if (!(await cache.match(cacheKey(new URL(f.path, baseUrl).href, f.sha256)))) missing.push(f);
  if (!missing.length) return true;
  const { storage } = await fetchVerified(missing, { baseUrl });
  return storage === "cache";
}
