/**
 * Module Web Worker that owns the onnxruntime-web session for one exported model.
 *
 * Messages in:  {id, type: "load", manifestUrl, backend: "auto" | "webgpu" | "wasm"}
 *               {id, type: "logits", ids: number[]}   (logits of the last position)
 * Messages out: {type: "progress", stage, message, loaded?, total?}
 *               {id, result} or {id, error: {type, message}}
 *
 * The manifest (written by `model-export`) lists each file with its size and sha256;
 * every file is checked with SubtleCrypto before the session sees it.
 */
import { vendorURL } from "./paths.js";

const ORT_URL = new URL("ort/", vendorURL).href;

let ort = null;
let model = null; // {session, config, backend, variant, threads}

function progress(stage, message, extra = {}) {
  self.postMessage({ type: "progress", stage, message, ...extra });
}

async function importOrt() {
  if (ort) return ort;
  ort = await import(new URL("ort.webgpu.min.mjs", ORT_URL).href);
  ort.env.wasm.wasmPaths = ORT_URL;
  ort.env.logLevel = "error"; // ORT's node-placement warnings are not page errors
  // Threads need SharedArrayBuffer, i.e. a cross-origin isolated page.
  ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1)) : 1;
  return ort;
}

async function pickBackend(requested) {
  const adapter = navigator.gpu ? await navigator.gpu.requestAdapter().catch(() => null) : null;
  if (requested === "webgpu" && !adapter) {
    throw new Error("WebGPU was requested but this browser offers no WebGPU adapter; choose WASM instead.");
  }
  if (requested === "wasm") return "wasm";
  return adapter ? "webgpu" : "wasm";
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Fetch all files of a variant, reporting bytes as they arrive; check size and sha256. */
async function download(baseUrl, files) {
  const total = files.reduce((sum, f) => sum + f.bytes, 0);
  let loaded = 0;
  const report = () => progress("download", "Downloading the model", { loaded, total });
  report();
  const buffers = [];
  for (const file of files) {
    const url = new URL(file.path, baseUrl).href;
    const response = await fetch(url);
    if (!response.ok) throw new Error(`Could not download ${file.path}: HTTP ${response.status}`);
    const bytes = new Uint8Array(file.bytes);
    let offset = 0;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (offset + value.length > bytes.length) throw new Error(`${file.path} is larger than the manifest says (${file.bytes} bytes)`);
      bytes.set(value, offset);
      offset += value.length;
      loaded += value.length;
      report();
    }
    if (offset !== file.bytes) throw new Error(`${file.path} is truncated: ${offset} of ${file.bytes} bytes arrived`);
    if ((await sha256Hex(bytes)) !== file.sha256) throw new Error(`${file.path} does not match its sha256 in the manifest`);
    buffers.push(bytes);
  }
  return buffers;
}

async function load({ manifestUrl, backend: requested = "auto" }) {
  progress("runtime", "Loading onnxruntime-web…");
  await importOrt();
  const backend = await pickBackend(requested);
  const response = await fetch(manifestUrl);
  if (!response.ok) throw new Error(`Could not read the model manifest: HTTP ${response.status} for ${manifestUrl}`);
  const manifest = await response.json();
  const variant = manifest.variants.find((v) => v.backends.includes(backend));
  if (!variant) throw new Error(`The model has no variant for ${backend}`);
  if (variant.files.length !== 1) throw new Error(`Variant ${variant.name} has ${variant.files.length} files; this runtime reads one`);
  const [bytes] = await download(manifestUrl, variant.files);
  progress("session", `Creating the ${backend === "webgpu" ? "WebGPU" : "WASM"} session…`);
  const session = await ort.InferenceSession.create(bytes, { executionProviders: [backend], graphOptimizationLevel: "all", logSeverityLevel: 3 });
  model = { session, config: manifest.config, backend, variant: variant.name, threads: backend === "wasm" ? ort.env.wasm.numThreads : null };
  progress("ready", "Model ready");
  return { backend, variant: variant.name, threads: model.threads, config: manifest.config, name: manifest.name };
}

/** Run the whole prompt with an empty KV cache and return the last position's logits. */
async function lastLogits({ ids }) {
  if (!model) throw new Error("The model is not loaded");
  const { session, config } = model;
  const T = ids.length;
  if (T === 0) throw new Error("The prompt is empty: type some text");
  if (T > config.n_positions) {
    throw new Error(`The prompt is ${T} tokens; this model reads at most ${config.n_positions}. Shorten it.`);
  }
  const headDim = config.n_embd / config.n_head;
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, T]),
    attention_mask: new ort.Tensor("int64", new BigInt64Array(T).fill(1n), [1, T]),
    position_ids: new ort.Tensor("int64", BigInt64Array.from({ length: T }, (_, i) => BigInt(i)), [1, T]),
  };
  for (let i = 0; i < config.n_layer; i++) {
    for (const kv of ["key", "value"]) {
      feeds[`past_key_values.${i}.${kv}`] = new ort.Tensor("float32", new Float32Array(0), [1, config.n_head, 0, headDim]);
    }
  }
  const out = await session.run(feeds, ["logits"]);
  const V = out.logits.dims[2];
  const all = await out.logits.getData();
  const logits = all.slice((T - 1) * V, T * V);
  out.logits.dispose?.();
  return { logits };
}

const handlers = { load, logits: lastLogits };

self.onmessage = async ({ data }) => {
  const { id, type } = data;
  try {
    const handler = handlers[type];
    if (!handler) throw new Error(`unknown request ${type}`);
    const result = await handler(data);
    const transfer = result.logits ? [result.logits.buffer] : [];
    self.postMessage({ id, result }, transfer);
  } catch (err) {
    self.postMessage({ id, error: { type: (err && err.name) || "Error", message: String((err && err.message) || err) } });
  }
};
