/**
 * Client for the Pyodide worker: call `demos.<module>.<fn>(**kwargs)` off the main thread.
 *
 * One worker serves the whole page (and survives instant-navigation page changes).
 * Python starts on the first call; progress events let widgets show what is loading.
 *
 *   import { callDemo, onPythonProgress } from "./python.js";
 *   const dist = await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.7 });
 *
 * @module python
 */

let worker = null;
let nextId = 1;
const pending = new Map();
const progressListeners = new Set();
let lastProgress = null;

/** An error raised inside Python (or while starting it), with the Python exception type. */
export class PythonError extends Error {
  constructor(type, message) {
    super(message);
    this.name = "PythonError";
    this.pythonType = type;
  }
}

function startWorker() {
  worker = new Worker(new URL("./python-worker.js", import.meta.url), { type: "module" });
  worker.onmessage = ({ data }) => {
    if (data.type === "progress") {
      lastProgress = data;
      for (const fn of progressListeners) fn(data);
      return;
    }
    const call = pending.get(data.id);
    if (!call) return;
    pending.delete(data.id);
    if (data.error) call.reject(new PythonError(data.error.type, data.error.message));
    else call.resolve(data.result);
  };
  worker.onerror = (event) => {
    event.preventDefault();
    const err = new PythonError("WorkerError", `The Python worker failed to start: ${event.message || "unknown error"}`);
    for (const call of pending.values()) call.reject(err);
    pending.clear();
    worker = null;
  };
}

/**
 * Call a function of the `demos` package in the worker.
 * @param {string} module module name inside `demos` (e.g. "sampling")
 * @param {string} fn public function name
 * @param {object} kwargs keyword arguments (plain data: numbers, strings, arrays, objects)
 * @returns {Promise<any>} the function's result converted to plain JS data
 */
export function callDemo(module, fn, kwargs = {}) {
  if (!worker) startWorker();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, module, fn, kwargs });
  });
}

/**
 * Listen to start-up progress (`{stage, message, done}`); the latest event is replayed.
 * @param {(event: {stage: string, message: string, done: boolean}) => void} listener
 * @returns {() => void} unsubscribe
 */
export function onPythonProgress(listener) {
  progressListeners.add(listener);
  if (lastProgress) listener(lastProgress);
  return () => progressListeners.delete(listener);
}
