/**
 * Client for the Pyodide worker: call `demos.<module>.<fn>(**kwargs)` off the main thread.
 *
 * One worker serves the whole page (and survives instant-navigation page changes). It is
 * started with `createModuleWorker`, so this also works on a course page on another origin
 * that imported the widgets from the textbook's site.
 * Python starts on the first call; progress events let widgets show what is loading.
 *
 *   import { callDemo, onPythonProgress } from "./python.js";
 *   const dist = await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.7 });
 *
 * Calls that run the reader's own code can be given a time limit and a Stop button:
 *
 *   const stop = new AbortController();
 *   callDemo("bugs", "check", { bug_id, code }, { timeoutMs: 5000, signal: stop.signal })
 *     .catch((err) => { if (err instanceof StoppedError) show(err.message); });  // "Stopped after 5.0 s …"
 *
 * The time limit counts from the moment the call starts running in Python (not while
 * Python is still loading or another call is running). Stopping uses Pyodide's interrupt
 * buffer (a SharedArrayBuffer, available when the page is cross-origin isolated): the
 * running Python code gets a KeyboardInterrupt and the worker stays up. Without cross-origin
 * isolation, or when the code does not stop within a grace period (e.g. inside one long
 * NumPy call), the worker is terminated and a fresh one started; other calls that were
 * waiting are sent to the new worker.
 *
 * @module python
 */

import { createModuleWorker } from "./worker.js";

let worker = null;
let nextId = 1;
const pending = new Map();
const progressListeners = new Set();
let lastProgress = null;
/** Views on the SharedArrayBuffer shared with the current worker, or null. */
let interrupt = null;

const SIGINT = 2; // what Pyodide's interrupt buffer expects: raise KeyboardInterrupt
const GRACE_MS = 1500; // an interrupted call that has not stopped by then costs the worker

/** An error raised inside Python (or while starting it), with the Python exception type. */
export class PythonError extends Error {
  constructor(type, message) {
    super(message);
    this.name = "PythonError";
    this.pythonType = type;
  }
}

/** A call stopped by its time limit or by its AbortSignal; `seconds` it had run, `reason`. */
export class StoppedError extends PythonError {
  constructor(seconds, reason) {
    const why = reason === "timeout" ? "the time limit" : "you stopped it";
    super("Stopped", `Stopped after ${seconds.toFixed(1)} s (${why}).`);
    this.name = "StoppedError";
    this.seconds = seconds;
    this.reason = reason;
  }
}

/**
 * How a running call is stopped on this page: "interrupt" (Pyodide's interrupt buffer,
 * the worker survives) or "restart" (the worker is replaced).
 * @returns {"interrupt" | "restart"}
 */
export function interruptMode() {
  return globalThis.crossOriginIsolated && typeof SharedArrayBuffer === "function" ? "interrupt" : "restart";
}

function startWorker() {
  worker = createModuleWorker(new URL("./python-worker.js", import.meta.url));
  interrupt = null;
  if (interruptMode() === "interrupt") {
    const buffer = new SharedArrayBuffer(8);
    interrupt = { signal: new Int32Array(buffer, 0, 1), running: new Int32Array(buffer, 4, 1) };
    worker.postMessage({ type: "interrupt-buffer", buffer });
  }
  worker.onmessage = ({ data }) => {
    if (data.type === "progress") {
      lastProgress = data;
      for (const fn of progressListeners) fn(data);
      return;
    }
    const call = pending.get(data.id);
    if (!call) return;
    if (data.type === "started") {
      started(call);
      return;
    }
    pending.delete(data.id);
    finish(call);
    if (data.error && data.error.type === "KeyboardInterrupt") call.reject(stoppedError(call));
    else if (data.error) call.reject(new PythonError(data.error.type, data.error.message));
    else call.resolve(data.result);
  };
  worker.onerror = (event) => {
    event.preventDefault();
    const err = new PythonError("WorkerError", `The Python worker failed to start: ${event.message || "unknown error"}`);
    for (const call of pending.values()) {
      finish(call);
      call.reject(err);
    }
    pending.clear();
    worker = null;
  };
}

function elapsedSeconds(call) {
  return call.startedAt === undefined ? 0 : (performance.now() - call.startedAt) / 1000;
}

function stoppedError(call) {
  return new StoppedError(call.stoppedAfter ?? elapsedSeconds(call), call.stopping || "stopped");
}

/** The worker began running this call in Python: start its clock. */
function started(call) {
  call.startedAt = performance.now();
  if (call.stopping) {
    stop(call, call.stopping); // stopped while it was still waiting its turn
  } else if (call.timeoutMs > 0) {
    call.timer = setTimeout(() => stop(call, "timeout"), call.timeoutMs);
  }
}

/** Clear a call's timers and listeners once it is settled (or handed to a new worker). */
function finish(call) {
  clearTimeout(call.timer);
  clearTimeout(call.grace);
  call.timer = call.grace = undefined;
  if (call.signal && call.onAbort) call.signal.removeEventListener("abort", call.onAbort);
}

/** Stop a call: interrupt it where possible, otherwise replace the worker. */
function stop(call, reason) {
  if (!pending.has(call.id)) return;
  if (call.startedAt === undefined) {
    // Not running yet: answer now; when its turn comes it is interrupted at once.
    if (!call.stopping) {
      call.stopping = reason;
      call.stoppedAfter = 0;
      call.reject(stoppedError(call));
      call.reject = call.resolve = () => {};
    }
    return;
  }
  if (call.grace !== undefined) return; // already being stopped
  call.stopping ||= reason;
  call.stoppedAfter ??= elapsedSeconds(call);
  clearTimeout(call.timer);
  if (interrupt) {
    // Interrupt only this call: if the worker has just finished it, its answer is on the way.
    if (Atomics.load(interrupt.running, 0) === call.id) Atomics.store(interrupt.signal, 0, SIGINT);
    call.grace = setTimeout(() => restart(call), GRACE_MS);
  } else {
    restart(call);
  }
}

/** Terminate the worker (stopping `stopped`) and resend every other waiting call to a new one. */
function restart(stopped) {
  worker.terminate();
  const others = [...pending.values()].filter((call) => call !== stopped);
  pending.clear();
  finish(stopped);
  stopped.reject(stoppedError(stopped));
  startWorker();
  for (const call of others) {
    clearTimeout(call.timer);
    clearTimeout(call.grace);
    call.timer = call.grace = call.startedAt = undefined;
    pending.set(call.id, call);
    worker.postMessage(call.message);
  }
}

/**
 * Call a function of the `demos` package in the worker.
 * @param {string} module module name inside `demos` (e.g. "sampling")
 * @param {string} fn public function name
 * @param {object} kwargs keyword arguments (plain data: numbers, strings, arrays, objects)
 * @param {{timeoutMs?: number, signal?: AbortSignal}} [options] `timeoutMs`: stop the call
 *   after this long in Python (0 = no limit); `signal`: stop it when the signal aborts.
 *   A stopped call rejects with a `StoppedError`.
 * @returns {Promise<any>} the function's result converted to plain JS data
 */
export function callDemo(module, fn, kwargs = {}, { timeoutMs = 0, signal } = {}) {
  if (!worker) startWorker();
  const id = nextId++;
  const message = { id, module, fn, kwargs };
  return new Promise((resolve, reject) => {
    const call = { id, message, resolve, reject, timeoutMs, signal };
    if (signal?.aborted) {
      reject(new StoppedError(0, "stopped"));
      return;
    }
    if (signal) {
      call.onAbort = () => stop(call, "stopped");
      signal.addEventListener("abort", call.onAbort, { once: true });
    }
    pending.set(id, call);
    worker.postMessage(message);
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
