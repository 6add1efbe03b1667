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
 * Code that ends Python (the reader's `os._exit`, a fatal error in the interpreter) rejects
 * its call with a `PythonError` of type "PythonEnded"; the worker is replaced at once and
 * Python starts again (with progress), so the page's other widgets keep working. So is a
 * worker that has grown past `pythonHeapBytes` of memory after a call, and one that leaves
 * a ping unanswered for `pythonAnswerMs` while calls wait (limits.js): its waiting calls go
 * to the new worker, and the progress line says why Python is starting again.
 *
 * When Python cannot start (a runtime file missing, damaged or stalled, the worker script
 * not loading), every waiting call rejects with a `PythonError` whose `retryable` is true
 * and whose message names what failed; the next call replaces the worker and starts
 * Python afresh. Widgets show both with `followPython`:
 *
 *   this.unsubscribe = followPython(this);   // progress while loading; a Retry elsewhere re-runs this one too
 *   callDemo(...).catch((err) => this.showError(err, { retry: () => this.update() }));
 *
 * @module python
 */

import { notSavedOfflineMessage, pythonEndedMessage, pythonRestartNote, workerMessage } from "./errors.js";
import { limits } from "./limits.js";
import { keepForOffline, notSavedOffline } from "./offline-use.js";
import { trackStart } from "./quiet.js";
import { createModuleWorker } from "./worker.js";

const WORKER_URL = new URL("./python-worker.js", import.meta.url);
let worker = null;
/** Counts the workers started: a start failure that is explained late speaks only for its own. */
let generation = 0;
/** The error the current worker's failed start shows (a promise), or null while none failed. */
let startError = null;
let nextId = 1;
const pending = new Map();
const progressListeners = new Set();
let lastProgress = null;
/** Whether the current worker's Python start failed (the next call replaces the worker). */
let startFailed = false;
/** Views on the SharedArrayBuffer shared with the current worker, or null. */
let interrupt = null;
/** Ends the current worker's start for quiet.js (ready or failed), or null once it has. */
let startSettled = null;
/** Why the current worker replaced the last one: said before its progress until it is ready. */
let restartNote = "";
/** When the current worker last sent anything (performance.now()), and the ping's timer. */
let lastHeard = 0;
let pingTimer;
/** Whether the current worker's Python has started (while it starts, pings get `pythonStartMs`). */
let pythonStarted = false;
/** Workers replaced in a row for not answering a ping: each doubles the next one's time. */
let silentRenewals = 0;

const SIGINT = 2; // what Pyodide's interrupt buffer expects: raise KeyboardInterrupt
const GRACE_MS = 1500; // an interrupted call that has not stopped by then costs the worker

/**
 * An error raised inside Python (or while starting it), with the Python exception type;
 * `retryable` when Python itself could not start ("StartError", "WorkerError").
 */
export class PythonError extends Error {
  constructor(type, message, { retryable = false } = {}) {
    super(message);
    this.name = "PythonError";
    this.pythonType = type;
    this.retryable = retryable;
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

/** Tell every progress listener (and later ones) something about Python's start. */
function announce(event) {
  if (event.done) restartNote = "";
  else if (restartNote) event = { ...event, message: restartNote + event.message };
  lastProgress = event;
  if (event.done && startSettled) {
    startSettled();
    startSettled = null;
  }
  for (const fn of progressListeners) fn(event);
}

/**
 * Python could not start in this worker: the next call replaces it. Resolves to the error its
 * calls get, said once to the widgets following Python: `err`, or, when Python is not stored
 * for offline reading and the network is gone, a sentence that says so.
 * @param {PythonError} err
 * @returns {Promise<PythonError>}
 */
function startFault(err) {
  startFailed = true;
  const own = generation;
  startError ??= notSavedOffline(WORKER_URL).then((offline) => {
    const shown = offline ? new PythonError(err.pythonType, notSavedOfflineMessage("python"), { retryable: true }) : err;
    if (own === generation) announce({ stage: "failed", message: shown.message, done: true, error: shown });
    return shown;
  });
  return startError;
}

function startWorker() {
  const current = (worker = createModuleWorker(WORKER_URL));
  generation++;
  startError = null;
  keepForOffline(WORKER_URL);
  startFailed = false;
  pythonStarted = false;
  startSettled?.(); // a replaced worker's start is over
  trackStart(
    new Promise((resolve) => {
      startSettled = resolve;
    }),
  );
  current.postMessage({ type: "limits", limits: limits() });
  interrupt = null;
  if (interruptMode() === "interrupt") {
    const buffer = new SharedArrayBuffer(8);
    interrupt = { signal: new Int32Array(buffer, 0, 1), running: new Int32Array(buffer, 4, 1) };
    current.postMessage({ type: "interrupt-buffer", buffer });
  }
  current.onmessage = ({ data }) => {
    if (current !== worker) return; // a replaced worker's last words
    lastHeard = performance.now();
    if (data.type === "pong") return;
    if (data.type === "progress") {
      pythonStarted ||= data.stage === "ready";
      announce(data);
      return;
    }
    const call = pending.get(data.id);
    if (!call) return;
    if (data.type === "started") {
      started(call);
      keepWatch(); // a call is running: the worker cannot answer pings until it ends
      return;
    }
    pending.delete(data.id);
    finish(call);
    silentRenewals = 0; // this worker answers
    if (data.error && data.error.type === "KeyboardInterrupt") {
      call.reject(stoppedError(call));
    } else if (data.error && data.error.type === "PythonEnded") {
      // The call's code ended Python: a fresh worker takes the other calls and starts now.
      call.reject(new PythonError("PythonEnded", pythonEndedMessage(data.error.message)));
      renew("");
      return;
    } else if (data.error && data.error.type === "StartError") {
      startFault(new PythonError("StartError", data.error.message, { retryable: true })).then((err) => call.reject(err));
    } else if (data.error) {
      call.reject(new PythonError(data.error.type, data.error.message));
    } else {
      call.resolve(data.result);
    }
    if (data.heapBytes > limits().pythonHeapBytes) renew(pythonRestartNote({ heapBytes: data.heapBytes }));
    else keepWatch();
  };
  // The worker script did not load (e.g. HTTP 404), or it threw outside any call.
  current.onerror = (event) => {
    event.preventDefault();
    if (current !== worker) return;
    const failed = startFault(new PythonError("WorkerError", workerMessage("python", event.message), { retryable: true }));
    current.terminate();
    worker = null;
    clearTimeout(pingTimer);
    for (const call of pending.values()) {
      finish(call);
      failed.then((err) => call.reject(err));
    }
    pending.clear();
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
  const others = [...pending.values()].filter((call) => call !== stopped);
  finish(stopped);
  stopped.reject(stoppedError(stopped));
  replaceWorker(others);
}

/** Terminate the worker and send `calls` (waiting calls) to a fresh one. */
function replaceWorker(calls = [...pending.values()]) {
  worker.terminate();
  pending.clear();
  startWorker();
  for (const call of calls) {
    clearTimeout(call.timer);
    clearTimeout(call.grace);
    call.timer = call.grace = call.startedAt = undefined;
    pending.set(call.id, call);
    worker.postMessage(call.message);
  }
  keepWatch();
}

/**
 * Replace a worker that is dead, silent or too big (`note`: why, for the progress line),
 * send it the waiting calls and start Python at once, so the page works again without a reload.
 */
function renew(note) {
  replaceWorker();
  restartNote = note;
  worker.postMessage({ type: "start" });
}

/**
 * While calls wait and none is running, ping the worker every `pythonAnswerMs`; one that
 * has not answered by then (closed, crashed, stuck) is replaced by `renew`.
 */
function keepWatch() {
  clearTimeout(pingTimer);
  const waiting = [...pending.values()];
  if (!worker || !waiting.length || waiting.some((call) => call.startedAt !== undefined)) return;
  // Starting Python runs for seconds without a break (no pong then); the start has its own limit.
  const ms = (pythonStarted ? limits().pythonAnswerMs : limits().pythonStartMs) * 2 ** silentRenewals;
  const sentAt = performance.now();
  worker.postMessage({ type: "ping" });
  pingTimer = setTimeout(() => {
    if (lastHeard >= sentAt) {
      silentRenewals = 0;
      keepWatch();
    } else {
      silentRenewals += 1; // a device too slow to answer in time gets twice as long next time
      renew(pythonRestartNote({ ms }));
    }
  }, ms);
}

/**
 * `value` with every string made well-formed: a lone surrogate (a script can put one in a
 * text field; no keyboard types one) becomes U+FFFD, which Python can encode.
 */
function wellFormed(value) {
  if (typeof value === "string") return value.toWellFormed ? value.toWellFormed() : value;
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wellFormed(v)]));
  }
  return value;
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
  else if (startFailed) replaceWorker(); // Python could not start there: try afresh
  const id = nextId++;
  const message = { id, module, fn, kwargs: wellFormed(kwargs) };
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
    keepWatch();
  });
}

/**
 * Listen to start-up progress (`{stage, message, done}`); the latest event is replayed.
 * `stage` is "stalled" while a download gets no data, and "failed" (with `error`, `done`
 * true) when Python could not start.
 * @param {(event: {stage: string, message: string, done: boolean, error?: PythonError}) => void} listener
 * @returns {() => void} unsubscribe
 */
export function onPythonProgress(listener) {
  progressListeners.add(listener);
  if (lastProgress) listener(lastProgress);
  return () => progressListeners.delete(listener);
}

/**
 * Keep a widget's status line in step with Python's start: show the progress while the
 * widget waits (not ready yet, or `computing` an answer), leave its own results and input messages alone, and, when the widget shows
 * a start failure with Retry and Python is restarted by another widget's Retry, re-run this
 * widget's Retry once Python is ready (or show the new failure).
 * @param {import("../widgets/widget.js").Widget} widget
 * @returns {() => void} unsubscribe
 */
export function followPython(widget) {
  let waiting = false; // showing progress for a restart that another widget began
  return onPythonProgress((event) => {
    const state = widget.dataset.state;
    if (event.stage === "failed") {
      if (waiting) widget.showError(event.error, { retry: widget.retryAction });
      waiting = false;
      return;
    }
    if (event.done) {
      if (waiting && state === "loading") widget.runRetry();
      waiting = false;
      return;
    }
    if (state === "ready" && !widget.computing) return; // (computing: a lab waiting for its answer)
    if (state === "error") {
      if (!widget.retryAction) return; // an input problem or a Python error: keep its message
      waiting = true;
    }
    widget.showProgress(event.message);
  });
}
