/**
 * How the model worker configures onnxruntime-web: one owner for every session option and
 * runtime choice that changes speed or memory, so that `bench/browser.py` can measure the
 * alternatives in the site's own runtime (it passes `loadModel({tuning: {...}})`, which
 * overrides these defaults for that load only) and the site runs the choice the medians
 * support. The measurements behind each default are in `bench/results/browser.json`
 * and on the page docs/efficiency/quantization.md.
 *
 *   import { TUNING, withTuning, sessionOptions } from "./tuning.js";
 *   const tuning = withTuning({ prepacking: false });   // a bench's alternative
 *   ort.InferenceSession.create(graph, sessionOptions("wasm", externalData, presentNames, tuning));
 * @module tuning
 */

/**
 * @typedef {object} Tuning
 * @property {boolean} prepacking let onnxruntime pack every constant weight matrix once at
 *   session creation (MLAS's packed layout) instead of reading the plain one at every product.
 * @property {"disabled"|"basic"|"extended"|"all"} optimizationLevel graph optimizations.
 * @property {boolean} fixBatch fix the graph's free `batch_size` dimension to 1
 *   (`freeDimensionOverrides`), so that shape inference knows it.
 * @property {boolean} spinning let idle onnxruntime threads spin between operators
 *   (`session.intra_op.allow_spinning`) instead of sleeping.
 * @property {"wasm"|"webgpu"} wasmBundle which onnxruntime-web bundle runs the WASM backend:
 *   the plain threaded build, or the WebGPU build (asyncify) that WebGPU needs anyway.
 * @property {boolean} memArena let onnxruntime serve CPU tensors from its growing memory arena
 *   (`enableCpuMemArena`) instead of allocating each one on its own.
 * @property {boolean} foldDequantize let onnxruntime's constant folding turn a graph's
 *   `DequantizeLinear` of constant weights into float32 weights once, at session creation
 *   (`session.disable_quant_qdq`; by default onnxruntime keeps such nodes for its
 *   quantized-operator fusions, and then dequantizes at every run). No effect on a graph
 *   without them.
 * @property {number} warmupSteps single-token steps the worker runs right after the session
 *   is ready, after a prefill of a short prompt, so that the browser has compiled the kernels'
 *   hot code before the reader's first generation; the warm-up stops at the page's first
 *   request, so it never delays one by more than a step (model-worker.js warmUp).
 * @property {number} warmupBeforeReady single-token steps of a first warm-up that the load
 *   waits for before it says the model is ready (0: none, the load ends with the session), so
 *   that a generation started the moment the model is ready does not run on code the browser
 *   is still compiling; the later first token is the price.
 * @property {boolean} heldCache on WASM, let the worker hold a generation's key-value cache
 *   (kv-cache.js) and fetch only each pass's new keys and values, instead of copying the
 *   whole cache out of onnxruntime as `present` after every step (and in again as `past`).
 *   Needs a graph with the new.{i}.key/value outputs; without them the cache is `present`.
 * @property {number} prefillChunk most prompt tokens a pass (0: the whole prompt at once):
 *   a long prompt then runs in several passes whose logits and attention scores are that
 *   much smaller.
 */

/** @type {Readonly<Tuning>} */
export const TUNING = Object.freeze({
  prepacking: true,
  optimizationLevel: "all",
  fixBatch: false,
  spinning: true,
  wasmBundle: "wasm",
  memArena: true,
  foldDequantize: true,
  warmupSteps: 64,
  warmupBeforeReady: 0,
  heldCache: true,
  prefillChunk: 256,
});

const CHOICES = {
  optimizationLevel: ["disabled", "basic", "extended", "all"],
  wasmBundle: ["wasm", "webgpu"],
};

/**
 * `TUNING` with the fields of `overrides`, each checked (a bench typo must not silently
 * measure the default).
 * @param {Partial<Tuning>} [overrides]
 * @returns {Tuning}
 * @throws {Error} naming an unknown field or a value of the wrong kind
 */
export function withTuning(overrides = {}) {
  const out = { ...TUNING };
  for (const [key, value] of Object.entries(overrides || {})) {
    if (!(key in TUNING)) throw new Error(`Unknown tuning option "${key}"; known: ${Object.keys(TUNING).join(", ")}.`);
    const expected = typeof TUNING[key];
    const ok = CHOICES[key] ? CHOICES[key].includes(value) : expected === "number" ? Number.isInteger(value) && value >= 0 : typeof value === expected;
    if (!ok) throw new Error(`Tuning option "${key}" cannot be ${JSON.stringify(value)}.`);
    out[key] = value;
  }
  return out;
}

/**
 * onnxruntime-web session options for one backend.
 * @param {"wasm"|"webgpu"} backend
 * @param {{path: string, data: Uint8Array}[]} externalData the graph's external-data pieces
 * @param {string[]} presentNames the graph's `present.*` outputs (kept on the GPU on WebGPU)
 * @param {Tuning} tuning
 * @returns {object}
 */
export function sessionOptions(backend, externalData, presentNames, tuning) {
  const options = {
    executionProviders: [backend],
    graphOptimizationLevel: tuning.optimizationLevel,
    logSeverityLevel: 3,
    externalData,
  };
  if (tuning.fixBatch) options.freeDimensionOverrides = { batch_size: 1 };
  if (!tuning.memArena) options.enableCpuMemArena = false;
  if (backend === "wasm") {
    const session = {};
    if (!tuning.prepacking) session.disable_prepacking = "1";
    if (!tuning.spinning) session.intra_op = { allow_spinning: "0" };
    if (tuning.foldDequantize) session.disable_quant_qdq = "1";
    if (Object.keys(session).length) options.extra = { session };
  }
  // On WebGPU the KV cache stays in GPU memory from one step to the next.
  if (backend === "webgpu") options.preferredOutputLocation = Object.fromEntries(presentNames.map((n) => [n, "gpu-buffer"]));
  return options;
}
