/**
 * Module Web Worker that owns Pyodide and runs `demos.<module>.<fn>(**kwargs)`.
 *
 * Messages in:  {id, module, fn, kwargs} per call;
 *               {type: "interrupt-buffer", buffer} once, first, when the page is cross-origin
 *               isolated: a SharedArrayBuffer of two Int32s, [0] Pyodide's interrupt signal
 *               (the page stores 2 there to raise KeyboardInterrupt in the running code),
 *               [1] the id of the call now running in Python (0 when none).
 * Messages out: {type: "progress", stage, message, done} while starting,
 *               {type: "started", id} when a call begins to run in Python,
 *               {id, result} or {id, error: {type, message}} per call; an interrupted
 *               call answers {id, error: {type: "KeyboardInterrupt", ...}}.
 *
 * Pyodide, NumPy and the demos wheel come from the site itself (assets/vendor/pyodide/);
 * `loadPackage("demos")` resolves NumPy through the lock file and checks both sha256s.
 */
import { loadPyodide } from "../../vendor/pyodide/pyodide.mjs";

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
let interruptSignal = null; // Int32Array(1) on the shared buffer, or null
let runningCall = null; // Int32Array(1): id of the call running in Python

/** Start Python once; a failed start is forgotten so the next call retries. */
function ensureReady() {
  ready ??= boot().catch((err) => {
    ready = null;
    throw new Error(`Python failed to start: ${err.message || err}`);
  });
  return ready;
}

function progress(stage, message, done = false) {
  self.postMessage({ type: "progress", stage, message, done });
}

async function boot() {
  progress("python", "Starting Python (Pyodide 0.27)…");
  const t0 = performance.now();
  const pyodide = await loadPyodide({ indexURL: INDEX_URL });
  progress("packages", "Loading NumPy and the demos package…");
  const failures = [];
  await pyodide.loadPackage("demos", { messageCallback: () => {}, errorCallback: (m) => failures.push(m) });
  try {
    // loadPackage does not throw when a package fails: importing is the real check.
    pyodide.runPython("import numpy, demos");
  } catch (err) {
    throw new Error(`NumPy or demos failed to load: ${failures.join("; ") || err.message}`);
  }
  pyodide.runPython(CALL_PY);
  if (interruptSignal) pyodide.setInterruptBuffer(interruptSignal);
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  progress("ready", `Python ready in ${seconds} s`, true);
  return { pyodide, call: pyodide.globals.get("_tx_call"), load: pyodide.globals.get("_tx_import") };
}

function pythonError(err) {
  // A PythonError's message is the whole traceback; its last line is "Type: message".
  const text = String((err && err.message) || err).trim();
  const last = text.split("\n").filter(Boolean).pop() || text;
  const match = /^(\w+(?:\.\w+)*): ([\s\S]*)$/.exec(last);
  return match ? { type: match[1], message: match[2] } : { type: (err && err.name) || "Error", message: last };
}

function isInterrupt(err) {
  return (err && err.type === "KeyboardInterrupt") || /(^|\n)KeyboardInterrupt\s*$/.test(String((err && err.message) || ""));
}

self.onmessage = async ({ data }) => {
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
    const result = pyResult && typeof pyResult.toJs === "function"
      ? pyResult.toJs({ dict_converter: Object.fromEntries, create_proxies: false })
      : pyResult;
    if (pyResult && typeof pyResult.destroy === "function") pyResult.destroy();
    self.postMessage({ id, result });
  } catch (err) {
    const error = isInterrupt(err) ? { type: "KeyboardInterrupt", message: "interrupted" } : pythonError(err);
    self.postMessage({ id, error });
  }
};
