/**
 * What the reader reads when something fails: the one place that turns low-level errors
 * (`TypeError: Failed to fetch`, a JSON `SyntaxError`, an HTTP status, a hash mismatch,
 * `WebAssembly.CompileError`, a worker that does not start) into a sentence about what
 * failed, and says whether trying again can help.
 *
 *   import { explain, isRetryable, pythonStartMessage } from "./errors.js";
 *   explain(new TypeError("Failed to fetch"))
 *   // "A file could not be downloaded: the connection failed. Check your connection and retry."
 *   pythonStartMessage({ file: "pyodide.asm.wasm", kind: "http", status: 404 })
 *   // "Python could not start: a runtime file (pyodide.asm.wasm) could not be downloaded (HTTP 404)."
 *
 * The runtimes (Python worker, model worker, download) build their messages with the
 * helpers here; `Widget.showError` (widgets/widget.js) passes whatever reaches a widget through `explain`.
 * Works in Web Workers, on the page and under node.
 * @module errors
 */

/** A fault the reader can act on: `kind` says what went wrong, `file` which file, `retryable` whether Retry may help. */
export class LoadError extends Error {
  /**
   * @param {string} message the reader-facing sentence
   * @param {{kind?: string, file?: string, retryable?: boolean}} [details]
   */
  constructor(message, { kind = "load", file, retryable = true } = {}) {
    super(message);
    this.name = "LoadError";
    this.kind = kind;
    this.file = file;
    this.retryable = retryable;
  }
}

/** Why a file that arrived cannot be used, by what was checked. */
export const DAMAGE = Object.freeze({
  wasm: "it is not valid WebAssembly",
  json: "it is not valid JSON",
  zip: "it is not a zip archive",
  js: "it is not valid JavaScript",
  hash: "its checksum does not match the one the site lists",
});

/** The last path segment of a URL or path ("…/pyodide.asm.wasm?x=1" -> "pyodide.asm.wasm"). */
export function fileName(url) {
  return String(url).split(/[?#]/)[0].split("/").filter(Boolean).pop() || String(url);
}

/**
 * The line shown while a download gets no data.
 * @param {number} seconds how long nothing has arrived
 * @param {string} [what] what is awaited, e.g. "pyodide.asm.wasm"
 * @returns {string} e.g. "No data for 6 s — still waiting for pyodide.asm.wasm…"
 */
export function stallNotice(seconds, what) {
  const shown = seconds >= 1 ? Math.floor(seconds) : Math.round(seconds * 10) / 10;
  return `No data for ${shown} s — still waiting${what ? ` for ${what}` : ""}…`;
}

/** How the reader-facing messages name a file of the Python runtime. */
export function pythonFileLabel(file) {
  if (/^numpy-.*\.whl$/.test(file)) return `the NumPy package (${file})`;
  if (/^demos-.*\.whl$/.test(file)) return `the textbook's demos package (${file})`;
  if (file === "python-worker.js") return `its worker script (${file})`;
  return `a runtime file (${file})`;
}

/** "could not be downloaded (HTTP 404)", "is damaged: it is not valid JSON", ... */
function fileProblem({ kind, status, detail, seconds }) {
  switch (kind) {
    case "http":
      return status ? `could not be downloaded (HTTP ${status})` : `could not be used: ${detail}`;
    case "network":
      return "could not be downloaded (the connection failed)";
    case "damaged":
      return `is damaged: ${detail || "it is not what the site published"}`;
    case "stalled":
      return `stopped arriving: no data for ${Math.round(seconds)} s`;
    case "worker":
      return "could not be loaded";
    default:
      return detail ? `failed: ${detail}` : "failed";
  }
}

/**
 * The message of a failed Python start.
 * @param {{kind: "http"|"network"|"damaged"|"stalled"|"worker"|"timeout"|string, file?: string,
 *   status?: number, detail?: string, seconds?: number}} fault
 * @returns {string}
 */
export function pythonStartMessage(fault) {
  if (fault.kind === "timeout") return `Python could not start: it made no progress for ${Math.round(fault.seconds)} s.`;
  const sentence = fault.file ? `${pythonFileLabel(fault.file)} ${fileProblem(fault)}` : fault.detail || "an unknown error";
  return `Python could not start: ${sentence.replace(/[.\s]+$/, "")}.`;
}

const NOT_SAVED = {
  python: "Python is",
  model: "The model is",
  inspect: "The model's “Looking inside” graph is",
  figure: "The weights this figure reads are",
  draft: "The draft model of speculative decoding is",
};

/**
 * What a widget says offline when what it needs was never stored for offline reading.
 * @param {"python"|"model"|"inspect"|"figure"|"draft"} what Python, the model (runtime or weights), the
 *   model's inspect graph (the "Looking inside" widgets), a figure's weights, the draft model of
 *   speculative decoding
 * @returns {string} e.g. "Python is not saved for offline use yet: open this page once online."
 */
export function notSavedOfflineMessage(what) {
  return `${NOT_SAVED[what]} not saved for offline use yet: open this page once online.`;
}

/**
 * The message of a JSON file the model runtime reads that cannot be used.
 * @param {string} what how to name the file, e.g. "The model's file list (manifest.json)"
 * @param {{kind: "http"|"network"|"json"|"fields", status?: number, field?: string}} fault
 * @returns {string}
 */
export function dataFileMessage(what, { kind, status, field }) {
  switch (kind) {
    case "http":
      return `${what} could not be downloaded (HTTP ${status}).`;
    case "network":
      return `${what} could not be downloaded: the connection failed. Check your connection and retry.`;
    case "json":
      return `${what} is damaged: ${DAMAGE.json}.`;
    default:
      return `${what} is incomplete: it has no ${field}.`;
  }
}

/** The message of a model manifest that cannot be used (see `dataFileMessage`). */
export function manifestMessage(fault) {
  return dataFileMessage("The model's file list (manifest.json)", fault);
}

/**
 * The message of a Web Worker that did not start or crashed.
 * @param {"python"|"model"} which whose worker
 * @param {string} [detail] the browser's own message, when it gave one
 */
export function workerMessage(which, detail) {
  if (which === "python") {
    return detail ? `Python stopped: its worker crashed (${detail}).` : pythonStartMessage({ kind: "worker", file: "python-worker.js" });
  }
  return detail ? `The model stopped: its worker crashed (${detail}).` : "The model could not start: its worker script (model-worker.js) could not be loaded.";
}

/**
 * The message when code ended the page's Python (`os._exit`, a fatal error in the
 * interpreter): the worker is replaced at once, so the page works again without a reload.
 * @param {string} how what ended it, as the worker saw it (e.g. "exit(1)")
 */
export function pythonEndedMessage(how) {
  return `That code ended Python (${how}); Python is starting again, so every widget on the page works again in a few seconds.`;
}

/**
 * What the progress line says first while a replaced Python starts again, and why it was
 * replaced: it stopped answering for `ms`, or it had grown to `heapBytes` of memory.
 * @param {{ms?: number, heapBytes?: number}} why
 */
export function pythonRestartNote({ ms, heapBytes }) {
  if (heapBytes) return `Python had grown to ${(heapBytes / 1024 ** 3).toFixed(1)} GB of memory, so it is starting again to give it back: `;
  return `Python stopped answering for ${(ms / 1000).toFixed(0)} s, so it is starting again: `;
}

/** The message when the GPU device under a WebGPU session is lost. */
export function deviceLostMessage(reason) {
  const why = String(reason || "")
    .trim()
    .replace(/\.+$/, "");
  return `The GPU stopped working for this page (WebGPU device lost${why ? `: ${why}` : ""}). Retry to start the model again.`;
}

const FETCH_FAILED = /^(Failed to fetch|NetworkError|Load failed|network error)/i;
const IMPORT_FAILED = /(?:Failed to fetch dynamically imported module|error loading dynamically imported module|Importing a module script failed)[:\s]*(\S*)/i;
const RAW_HTTP = /^HTTP (\d{3})(?: [A-Za-z ]+)? for (\S+?)\.?$/;

function messageOf(error) {
  return String((error && error.message) || error || "").trim();
}

/** Which low-level error this is, or null for one that already reads well. */
function classify(error) {
  if (!error || typeof error !== "object") return null;
  const message = messageOf(error);
  if (typeof WebAssembly !== "undefined" && (error instanceof WebAssembly.CompileError || error instanceof WebAssembly.LinkError)) return "wasm";
  if (error.name === "CompileError" || error.name === "LinkError") return "wasm";
  if (IMPORT_FAILED.test(message)) return "import";
  if (error.name === "TypeError" && FETCH_FAILED.test(message)) return "network";
  if (error.name === "SyntaxError" && /JSON/i.test(message)) return "json";
  if (RAW_HTTP.test(message)) return "http";
  if (/sha-?256|integrity/i.test(message) && /match/i.test(message)) return "hash";
  return null;
}

/**
 * The reader-facing sentence for any error (or a string, which is kept as it is).
 * @param {unknown} error
 * @returns {string}
 */
export function explain(error) {
  if (error === null || error === undefined || error === "") return "Something went wrong.";
  if (typeof error === "string") return error;
  const message = messageOf(error);
  switch (classify(error)) {
    case "wasm":
      return "A WebAssembly file is damaged: it does not compile. Retry, or reload the page.";
    case "import": {
      const url = IMPORT_FAILED.exec(message)[1];
      return `A script${url ? ` (${fileName(url)})` : ""} could not be downloaded. Check your connection and retry.`;
    }
    case "network":
      return "A file could not be downloaded: the connection failed. Check your connection and retry.";
    case "json":
      return `A data file is damaged: ${DAMAGE.json}.`;
    case "http": {
      const [, status, url] = RAW_HTTP.exec(message);
      return `A file (${fileName(url)}) could not be downloaded (HTTP ${status}).`;
    }
    default:
      return message || "Something went wrong.";
  }
}

/**
 * Whether trying again may help: the error says so (`retryable`), or it is a download,
 * network or damaged-file error. Input problems and errors in Python code say no.
 * @param {unknown} error
 * @returns {boolean}
 */
export function isRetryable(error) {
  if (!error || typeof error !== "object") return false;
  if (typeof error.retryable === "boolean") return error.retryable;
  return classify(error) !== null;
}

/**
 * An allocation that failed: Chromium's `RangeError: Array buffer allocation failed`,
 * `WebAssembly.Memory(): could not allocate memory`, Emscripten's `Cannot enlarge memory`
 * and `Aborted(OOM)`, onnxruntime's `failed to allocate` / `bad_alloc`, "Out of memory".
 */
const OUT_OF_MEMORY = /allocation failed|could not allocate|failed to allocate|cannot enlarge memory|out of memory|bad_alloc|\bOOM\b/i;

/** Whether an error (or its message) says the browser ran out of memory. */
export function isOutOfMemory(error) {
  return OUT_OF_MEMORY.test(messageOf(error));
}

/** "315 MB", "1.6 GB" (10^6 and 10^9 bytes). */
export function memoryAmount(bytes) {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

/** The buttons offered with a memory error. */
export const MEMORY_OFFERS = Object.freeze({
  smaller: (variant) => `Load the smaller ${variant} model instead`,
  anyway: "Try anyway",
});

/**
 * The message when a model variant does not fit in this device's memory.
 * @param {{cause: "estimate"|"allocation", deviceGB: number|null, budget: number, variant: string,
 *   need: number, fit: {name: string, need: number}|null, detail?: string}} fault
 *   `cause`: the estimate exceeds the budget (before any download), or an allocation failed
 *   while loading (`detail`: the browser's words); `deviceGB`: what the device reports;
 *   `budget`: the bytes a tab may use; `need`: the variant's estimate; `fit`: a smaller variant
 * @returns {string}
 */
export function memoryMessage({ cause, deviceGB, budget, variant, need, fit, detail }) {
  const device = deviceGB === null ? "" : `This device reports ${deviceGB} GB of memory, of which a browser tab can count on about ${memoryAmount(budget)}`;
  const first =
    cause === "allocation"
      ? `The browser ran out of memory while loading the ${variant} model (${String(detail || "")
          .replace(/[.\s]+$/, "")
          .slice(0, 160)}); it needs about ${memoryAmount(need)}.${device ? ` ${device}.` : ""}`
      : `${device}; the ${variant} model needs about ${memoryAmount(need)} while it loads, so loading it could stop this tab.`;
  const offer = fit
    ? `The smaller ${fit.name} model needs about ${memoryAmount(fit.need)} and fits.`
    : `No ${cause === "allocation" ? "smaller " : ""}variant of this model fits; ${MEMORY_OFFERS.anyway} may work, or may stop this tab.`;
  return `${first} ${offer} The text and figures of this page do not need the model.`;
}
