/**
 * Client for the model worker: load an exported GPT-2 and ask for next-token logits.
 *
 *   import { loadModel } from "./model.js";
 *   const model = await loadModel({ backend: "auto", onProgress });
 *   const ids = model.tokenizer.encode("The Transformer is");
 *   const logits = await model.lastLogits(ids);         // Float32Array(vocab_size)
 *
 * One worker (and one download) per model name and backend, shared by every widget.
 * @module model
 */
import { modelsURL } from "./paths.js";
import { GPT2Tokenizer } from "./tokenizer.js";

const loaded = new Map();

class ModelHandle {
  constructor(worker, info, tokenizer) {
    this.worker = worker;
    this.info = info; // {name, backend, variant, threads, config}
    this.tokenizer = tokenizer;
  }

  /** Logits over the vocabulary for the token after `ids`. */
  async lastLogits(ids) {
    const { logits } = await this.worker.request({ type: "logits", ids });
    return logits;
  }
}

function workerChannel(onProgress) {
  const worker = new Worker(new URL("./model-worker.js", import.meta.url), { type: "module" });
  const pending = new Map();
  let nextId = 1;
  worker.onmessage = ({ data }) => {
    if (data.type === "progress") return onProgress(data);
    const call = pending.get(data.id);
    pending.delete(data.id);
    if (data.error) call.reject(new Error(data.error.message));
    else call.resolve(data.result);
  };
  worker.onerror = (event) => {
    event.preventDefault();
    for (const call of pending.values()) call.reject(new Error(`The model worker failed: ${event.message || "unknown error"}`));
    pending.clear();
  };
  return {
    request(message) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, ...message });
      });
    },
  };
}

async function fetchJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  return response.json();
}

/** The site's default model name (from models/index.json). */
export async function defaultModelName() {
  return (await fetchJson(new URL("index.json", modelsURL))).default;
}

/**
 * Load a model (once per name and backend) with its tokenizer.
 * @param {{model?: string, backend?: "auto"|"webgpu"|"wasm", onProgress?: Function}} options
 * @returns {Promise<ModelHandle>}
 */
export function loadModel({ model, backend = "auto", onProgress = () => {} } = {}) {
  const key = `${model || ""}|${backend}`;
  if (!loaded.has(key)) {
    const listeners = new Set([onProgress]);
    const promise = (async () => {
      const name = model || (await defaultModelName());
      const base = new URL(`${name}/`, modelsURL);
      const manifest = await fetchJson(new URL("manifest.json", base));
      const channel = workerChannel((event) => listeners.forEach((fn) => fn(event)));
      const [info, tokenizer] = await Promise.all([
        channel.request({ type: "load", manifestUrl: new URL("manifest.json", base).href, backend }),
        GPT2Tokenizer.load(new URL(manifest.tokenizer.vocab.path, base).href, new URL(manifest.tokenizer.merges.path, base).href),
      ]);
      return new ModelHandle(channel, info, tokenizer);
    })();
    promise.catch(() => loaded.delete(key)); // a failed load can be retried
    loaded.set(key, { promise, listeners });
  } else {
    loaded.get(key).listeners.add(onProgress);
  }
  return loaded.get(key).promise;
}
