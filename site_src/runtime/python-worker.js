/**
 * Module Web Worker that owns Pyodide and runs `demos.<module>.<fn>(**kwargs)`.
 *
 * Messages in:  {id, module, fn, kwargs} per call;
 *               {type: "limits", limits} once, first: the page's `limits()` (limits.js);
 *               {type: "interrupt-buffer", buffer} once, first, when the page is cross-origin
 *               isolated: a SharedArrayBuffer of two Int32s, [0] Pyodide's interrupt signal
 *               (the page stores 2 there to raise KeyboardInterrupt in the running code),
 *               [1] the id of the call now running in Python (0 when none);
 *               {type: "start"}: start Python now, without a call (a replacement worker);
 *               {type: "ping"}: answered {type: "pong"} whenever no Python code is running
 *               (the page's watch for a worker that has stopped answering).
 * Messages out: {type: "progress", stage, message, done} while starting ("stalled" while a
 *               download gets no data),
 *               {type: "started", id} when a call begins to run in Python,
 *               {id, result} or {id, error: {type, message}} per call; an interrupted
 *               call answers {id, error: {type: "KeyboardInterrupt", ...}}; every call
 *               after a failed start answers {id, error: {type: "StartError", message, file}};
 *               a call after which Python can no longer run (its code called `os._exit`,
 *               or the interpreter failed fatally) answers {id, error: {type: "PythonEnded",
 *               message}} (the page replaces this worker). Every answer carries
 *               `heapBytes`, the size of Python's memory after the call (WebAssembly memory
 *               only grows: the page replaces a worker that has grown too big).
 *
 * Pyodide, NumPy and the demos wheel come from the site itself (assets/vendor/pyodide/);
 * `loadPackage("demos")` resolves NumPy through the lock file and checks both sha256s.
 * Their downloads are watched (fetch-watch.js): a missing, damaged or stalled file fails the
 * start at once with a message naming it, and so does a start that takes longer than
 * `pythonStartMs`. A worker whose start failed stays failed (Pyodide is left half-loaded);
 * the page replaces it to try again.
 */
import { loadPyodide } from "../../vendor/pyodide/pyodide.mjs";
import { LoadError, pythonStartMessage, stallNotice } from "./errors.js";
import { watchDownloads } from "./fetch-watch.js";
import { LIMITS } from "./limits.js";

const INDEX_URL = new URL("../../vendor/pyodide/", import.meta.url).href;
const NAME = /^[a-z_][a-z0-9_]*$/;

const CALL_PY = `
import importlib

def _tx_import(module):
    importlib.import_module("demos." + module)

def _tx_call(module, fn, kwargs):
    mod = importlib.import_module("demos." + module)
    return getattr(mod, fn)(**kwargs)
`;

let ready = null;
let python = null; // what boot() returned, once it has
let failed = null; // the LoadError of a failed start: this worker does not try again
let limits = { ...LIMITS };
let interruptSignal = null; // Int32Array(1) on the shared buffer, or null
let runningCall = null; // Int32Array(1): id of the call running in Python

/** Start Python once; after a failed start every call gets the same error. */
function ensureReady() {
  if (failed) return Promise.reject(failed);
  ready ??= boot().catch((err) => {
    failed = err instanceof LoadError ? err : new LoadError(pythonStartMessage({ detail: lastLine(err) }), { kind: "start" });
    throw failed;
  });
  return ready;
}

let stage = null; // the last start-up step announced: what to show again when a stall ends

function progress(name, message, done = false) {
  if (name !== "stalled") stage = { name, message };
  self.postMessage({ type: "progress", stage: name, message, done });
}

/**
 * Start Python, failing as soon as a download fails or stalls, or when the start makes no
 * progress (no download moving) for `pythonStartMs`: e.g. WebAssembly that never finishes.
 */
async function boot() {
  const watch = watchDownloads(INDEX_URL, {
    describe: pythonStartMessage,
    stallNoticeMs: limits.stallNoticeMs,
    stallTimeoutMs: limits.stallTimeoutMs,
    onStall: (seconds, file) => progress("stalled", stallNotice(seconds, file)),
    onResume: () => stage && progress(stage.name, stage.message),
  });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setInterval(
      () => {
        if (watch.idleMs() < limits.pythonStartMs) return;
        reject(new LoadError(pythonStartMessage({ kind: "timeout", seconds: limits.pythonStartMs / 1000 }), { kind: "timeout" }));
      },
      Math.min(1000, limits.pythonStartMs / 4),
    );
  });
  try {
    python = await Promise.race([start(watch), watch.failed, timeout]);
    return python;
  } finally {
    clearInterval(timer);
    watch.stop();
  }
}

async function start(watch) {
  progress("python", "Starting Python (Pyodide 0.27)…");
  const t0 = performance.now();
  // pyodide.asm.js first, on its own: loadPyodide would report a missing or damaged copy
  // only as a bare "Failed to fetch dynamically imported module" or SyntaxError.
  await watch.prefetch(new URL("pyodide.asm.js", INDEX_URL).href);
  const pyodide = await loadPyodide({ indexURL: INDEX_URL });
  progress("packages", "Loading NumPy and the demos package…");
  const failures = [];
  await pyodide.loadPackage("demos", { messageCallback: () => {}, errorCallback: (m) => failures.push(m) });
  try {
    // loadPackage does not throw when a package fails: importing is the real check.
    pyodide.runPython("import numpy, demos");
  } catch (err) {
    throw watch.fault() || new LoadError(pythonStartMessage({ detail: `NumPy or demos failed to load (${failures.join("; ") || lastLine(err)})` }));
  }
  pyodide.runPython(CALL_PY);
  if (interruptSignal) pyodide.setInterruptBuffer(interruptSignal);
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  progress("ready", `Python ready in ${seconds} s`, true);
  return { pyodide, call: pyodide.globals.get("_tx_call"), load: pyodide.globals.get("_tx_import") };
}

/** The last line of an error's message (a Python traceback ends with "Type: message"). */
function lastLine(err) {
  const text = String((err && err.message) || err).trim();
  return text.split("\n").filter(Boolean).pop() || text;
}

function pythonError(err) {
  // A PythonError's message is the whole traceback; its last line is "Type: message".
  const last = lastLine(err);
  const match = /^(\w+(?:\.\w+)*): ([\s\S]*)$/.exec(last);
  return match ? { type: match[1], message: match[2] } : { type: (err && err.name) || "Error", message: last };
}

/**
 * How Python ended, if it can no longer run (Pyodide turns its whole API into throwing
 * getters after an exit or a fatal error), else null.
 */
function endedBy(err) {
  if (!python) return null;
  try {
    void python.pyodide.globals;
    return null;
  } catch {
    const exit = /exit\((-?\d+)\)/.exec(String((err && err.message) || err));
    return exit ? `exit(${exit[1]})` : `a fatal error: ${lastLine(err).slice(0, 120)}`;
  }
}

/** The size of Python's WebAssembly memory in bytes (0 before Python has started). */
function heapBytes() {
  try {
    return python.pyodide._module.HEAP8.buffer.byteLength;
  } catch {
    return 0; // not started, or ended
  }
}

function isInterrupt(err) {
  return (err && err.type === "KeyboardInterrupt") || /(^|\n)KeyboardInterrupt\s*$/.test(String((err && err.message) || ""));
}

self.onmessage = async ({ data }) => {
  if (data.type === "limits") {
    limits = { ...limits, ...data.limits };
    return;
  }
  if (data.type === "start") {
    ensureReady().catch(() => {}); // a failure answers the next call, as a StartError
    return;
  }
  if (data.type === "ping") {
    self.postMessage({ type: "pong" });
    return;
  }
  if (data.type === "interrupt-buffer") {
    interruptSignal = new Int32Array(data.buffer, 0, 1);
    runningCall = new Int32Array(data.buffer, 4, 1);
    return;
  }
  const { id, module, fn, kwargs } = data;
  try {
    if (!NAME.test(module) || !NAME.test(fn) || fn.startsWith("_")) {
      throw new Error(`not a public demos function: demos.${module}.${fn}`);
    }
    const { pyodide, call, load } = await ensureReady();
    load(module); // importing is not part of the call's time limit
    const pyKwargs = pyodide.toPy(kwargs);
    let pyResult;
    if (interruptSignal) {
      Atomics.store(interruptSignal, 0, 0); // a late interrupt meant for an earlier call
      Atomics.store(runningCall, 0, id);
    }
    self.postMessage({ type: "started", id });
    try {
      pyResult = call(module, fn, pyKwargs);
    } finally {
      if (runningCall) Atomics.store(runningCall, 0, 0);
      pyKwargs.destroy();
    }
    const result = pyResult && typeof pyResult.toJs === "function" ? pyResult.toJs({ dict_converter: Object.fromEntries, create_proxies: false }) : pyResult;
    if (pyResult && typeof pyResult.destroy === "function") pyResult.destroy();
    self.postMessage({ id, result, heapBytes: heapBytes() });
  } catch (err) {
    const ended = err !== failed && endedBy(err);
    const error = ended
      ? { type: "PythonEnded", message: ended }
      : err === failed
        ? { type: "StartError", message: err.message, file: err.file }
        : isInterrupt(err)
          ? { type: "KeyboardInterrupt", message: "interrupted" }
          : pythonError(err);
    self.postMessage({ id, error, heapBytes: heapBytes() });
  }
};
