/**
 * Module Web Worker that owns Pyodide and runs `demos.<module>.<fn>(**kwargs)`.
 *
 * Messages in:  {id, module, fn, kwargs}
 * Messages out: {type: "progress", stage, message, done} while starting,
 *               {id, result} or {id, error: {type, message}} per call.
 *
 * Pyodide, NumPy and the demos wheel come from the site itself (assets/vendor/pyodide/);
 * `loadPackage("demos")` resolves NumPy through the lock file and checks both sha256s.
 */
import { loadPyodide } from "../../vendor/pyodide/pyodide.mjs";

const INDEX_URL = new URL("../../vendor/pyodide/", import.meta.url).href;
const NAME = /^[a-z_][a-z0-9_]*$/;

const CALL_PY = `
import importlib

def _tx_call(module, fn, kwargs):
    mod = importlib.import_module("demos." + module)
    return getattr(mod, fn)(**kwargs)
`;

let ready = null;

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
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  progress("ready", `Python ready in ${seconds} s`, true);
  return { pyodide, call: pyodide.globals.get("_tx_call") };
}

function pythonError(err) {
  // A PythonError's message is the whole traceback; its last line is "Type: message".
  const text = String((err && err.message) || err).trim();
  const last = text.split("\n").filter(Boolean).pop() || text;
  const match = /^(\w+(?:\.\w+)*): ([\s\S]*)$/.exec(last);
  return match ? { type: match[1], message: match[2] } : { type: (err && err.name) || "Error", message: last };
}

self.onmessage = async ({ data }) => {
  const { id, module, fn, kwargs } = data;
  try {
    if (!NAME.test(module) || !NAME.test(fn) || fn.startsWith("_")) {
      throw new Error(`not a public demos function: demos.${module}.${fn}`);
    }
    const { pyodide, call } = await ensureReady();
    const pyKwargs = pyodide.toPy(kwargs);
    let pyResult;
    try {
      pyResult = call(module, fn, pyKwargs);
    } finally {
      pyKwargs.destroy();
    }
    const result = pyResult && typeof pyResult.toJs === "function"
      ? pyResult.toJs({ dict_converter: Object.fromEntries, create_proxies: false })
      : pyResult;
    if (pyResult && typeof pyResult.destroy === "function") pyResult.destroy();
    self.postMessage({ id, result });
  } catch (err) {
    self.postMessage({ id, error: pythonError(err) });
  }
};
