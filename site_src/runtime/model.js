/**
 * The textbook's GPT-2 runtime: the one API every live-model widget uses.
 *
 *   import { loadModel } from "./model.js";
 *   const model = await loadModel({ backend: "auto", onProgress });
 *   model.info;                     // {name, backend, variant, threads, config, ...}
 *   const ids = model.tokenizer.encode("The Transformer is");
 *
 *   // Logits for the next token (and, on request, attentions / hidden states):
 *   const { logits } = await model.forward(ids);
 *   const { attentions } = await model.forward(ids, { attentions: true });
 *
 *   // Streamed generation with a KV cache:
 *   const run = model.generate("The Transformer is", { maxNewTokens: 32, temperature: 0.8, topP: 0.95, seed: 1 });
 *   for await (const token of run) console.log(token.text, token.prob, token.top);
 *   (await run.result).tokensPerSecond;
 *   run.stop();                     // from a button: ends the loop after the current step
 *
 * A module Web Worker (`model-worker.js`) owns the onnxruntime-web session; there is
 * one worker, one download and one session per model, backend, variant and thread
 * count, shared by every widget on the page (also on a course page on another origin that
 * imported the widgets from this site). A failed load is forgotten, so calling
 * `loadModel` again retries it (files already verified come from Cache Storage).
 *
 * A model that stops working (its WebGPU device lost, its worker crashed) rejects every
 * call with a `ModelError` (`retryable`), resolves `model.lost` with it, and is forgotten,
 * so `loadModel` again starts a fresh worker and session:
 *
 *   model.lost.then((err) => widget.showError(err, { retry: () => widget.update() }));
 *
 * A model too large for the device's memory (memory.js: its estimate above what a tab may
 * use, checked by the worker from the manifest before anything else is downloaded, or an
 * allocation that failed while loading)
 * rejects with a `ModelError` of kind "memory", not retryable, whose `offers` are
 * `[{label, accept}]`: "Load the smaller q8 model instead" (when one fits) and "Try anyway".
 * `accept()` records the reader's choice for the page; the next `loadModel` with the same
 * options then loads the smaller variant, or the requested one unchecked. `showError`
 * (widgets/base.js) turns the offers into buttons that accept and then retry.
 * @module model
 */
import { fetchJson, webgpuAdapter } from "./backend.js";
import { MEMORY_OFFERS, dataFileMessage, deviceLostMessage, notSavedOfflineMessage, workerMessage } from "./errors.js";
import { limits } from "./limits.js";
import { chooseForMemory, deviceMemoryGB, memoryChoice } from "./memory.js";
import { keepForOffline, keepModelFiles, notSavedOffline } from "./offline-use.js";
import { modelsURL } from "./paths.js";
import { trackStart } from "./quiet.js";
import { GPT2Tokenizer } from "./tokenizer.js";
import { createModuleWorker } from "./worker.js";

const WORKER_URL = new URL("./model-worker.js", import.meta.url);
const loaded = new Map();

/** An error from the runtime, with `kind` ("context", "missing", "mismatch", ...) and `retryable`. */
export class ModelError extends Error {
  constructor({ name, message, kind, retryable, fit }) {
    super(message);
    this.name = name && name !== "Error" ? name : "ModelError";
    this.kind = kind || null;
    this.retryable = Boolean(retryable);
    /** For kind "memory": the smaller variant that fits, or null. */
    this.fit = fit ?? null;
  }
}

/**
 * One streamed call to the worker: an async iterator of what it streams (each item through
 * `transform`), plus `result` (a promise of the call's answer through `summarize`, or of its
 * error through `explain`) and `stop()`. Leaving a `for await` loop early also stops it.
 */
class StreamedRun {
  constructor(channel, request, { transform, summarize, explain = async (err) => err }) {
    this.queue = [];
    this.waiting = null;
    this.done = false;
    this.channel = channel;
    const { id, promise } = channel.call(request, (item) => this.deliver({ value: transform(item), done: false }));
    this.requestId = id;
    this.result = promise.then(summarize, async (err) => {
      throw await explain(err);
    });
    this.result.then(
      () => this.finish(),
      (err) => this.finish(err),
    );
  }

  finish(error) {
    this.done = true;
    this.error = error;
    if (this.waiting) this.deliver(null);
  }

  deliver(item) {
    if (this.waiting) {
      const { resolve, reject } = this.waiting;
      this.waiting = null;
      if (item) resolve(item);
      else if (this.error) reject(this.error);
      else resolve({ value: undefined, done: true });
    } else if (item) {
      this.queue.push(item);
    }
  }

  /** Ask the worker to stop after the step in progress; `result.reason` becomes "stopped". */
  stop() {
    if (!this.done) this.channel.post({ type: "stop", target: this.requestId });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.done) return this.error ? Promise.reject(this.error) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  async return() {
    this.stop();
    await this.result.catch(() => {});
    return { value: undefined, done: true };
  }
}

/**
 * One streamed generation: an async iterator of tokens, plus `result` (a promise of
 * the run's summary) and `stop()`.
 */
class GenerationRun extends StreamedRun {
  constructor(channel, tokenizer, ids, options) {
    const decoder = tokenizer.createDecoder();
    const tokens = [];
    super(
      channel,
      { type: "generate", ids, options },
      {
        transform: (raw) => {
          const token = {
            ...raw,
            text: decoder.push(raw.id),
            piece: tokenizer.tokenToString(raw.id),
            top: raw.top.map((alt) => ({ ...alt, text: tokenizer.tokenToString(alt.id) })),
          };
          if (raw.guide?.blocked) token.guide = { ...raw.guide, blocked: { ...raw.guide.blocked, text: tokenizer.tokenToString(raw.guide.blocked.id) } };
          tokens.push(token);
          return token;
        },
        /** {reason, message, seed, promptTokens, newTokens, tokensPerSecond, prefillMs, totalMs, cache, prefillRuns, decodeRunMs, tail} */
        summarize: (summary) => ({ ...summary, tail: decoder.flush(), message: endMessage(summary) }),
      },
    );
    this.tokens = tokens;
  }
}

/**
 * One streamed beam search: an async iterator of its steps, plus `result` and `stop()`.
 * A step is beam.js's record with the text of every candidate's token (`pieces`), the beams
 * that run on and the finished hypotheses, each with its `text`.
 */
class BeamRun extends StreamedRun {
  constructor(channel, tokenizer, ids, options) {
    const withText = (h) => ({ ...h, text: tokenizer.decode(h.tokens) });
    super(
      channel,
      { type: "beam", ids, options },
      {
        transform: (step) => ({
          ...step,
          pieces: step.tokens.map((id) => tokenizer.tokenToString(id)),
          beams: step.beams.map(withText),
          finished: step.finished.map(withText),
        }),
        /** {reason, message, hypotheses, beams, steps, promptTokens, options, prefillMs, stepMs, totalMs} */
        summarize: (summary) => ({
          ...summary,
          hypotheses: summary.hypotheses.map(withText),
          beams: summary.beams.map(withText),
          message: beamEndMessage(summary),
        }),
      },
    );
  }
}

/**
 * One streamed run of speculative decoding: an async iterator of its events, plus `result` and
 * `stop()`. An event is `{kind: "progress", stage, message, loaded?, total?}` while the draft
 * model downloads, then `{kind: "round", ...}` per round (see `ModelHandle.speculative`), with
 * the text of each proposal (`pieces`), of the added token (`lastPiece`) and of the round's
 * written tokens (`text`).
 */
class SpeculativeRun extends StreamedRun {
  constructor(channel, tokenizer, ids, options) {
    const decoder = tokenizer.createDecoder();
    super(
      channel,
      { type: "speculative", ids, options },
      {
        transform: (event) => {
          if (event.kind !== "round") return event;
          const written = [...event.proposals.slice(0, event.kept), event.last];
          return {
            ...event,
            pieces: event.proposals.map((token) => tokenizer.tokenToString(token)),
            lastPiece: tokenizer.tokenToString(event.last),
            text: written.map((token) => decoder.push(token)).join(""),
          };
        },
        /** {reason, message, tokens, text, seed, proposed, accepted, targetPasses, draftPasses, targetMs, draftMs, totalMs, msPerToken, draft} */
        summarize: (summary) => ({ ...summary, text: tokenizer.decode(summary.tokens), message: speculativeEndMessage(summary) }),
        explain: offlineDraft,
      },
    );
  }
}

/** Offline, with the draft's files never stored: say that, not which download failed. */
async function offlineDraft(err) {
  const gap = err?.retryable ? await notSavedOffline(WORKER_URL, err) : null;
  return gap ? new ModelError({ message: notSavedOfflineMessage("draft"), kind: "offline", retryable: true }) : err;
}

/** The reader-facing sentence for how a speculative run ended. */
function speculativeEndMessage({ reason, tokens, targetPasses, accepted, proposed }) {
  const n = `${tokens.length} new token${tokens.length === 1 ? "" : "s"}`;
  const kept = accepted.reduce((a, b) => a + b, 0);
  const offered = proposed.reduce((a, b) => a + b, 0);
  const passes = `${targetPasses} pass${targetPasses === 1 ? "" : "es"} of the model`;
  const share = offered ? `; ${kept} of the draft's ${offered} proposals kept` : "";
  return `${reason === "stopped" ? "Stopped after" : "Done:"} ${n} from ${passes}${share}.`;
}

/** The reader-facing sentence for how a beam search ended (beam.js BEAM_ENDINGS). */
function beamEndMessage({ reason, steps, options }) {
  const n = `${steps} step${steps === 1 ? "" : "s"}`;
  const k = options.numBeams;
  switch (reason) {
    case "stopped":
      return `Stopped after ${n}; the finished hypotheses so far are listed.`;
    case "early":
      return `Done after ${n}: ${k} hypotheses had finished, and early stopping ends the search there.`;
    case "settled":
      return `Done after ${n}: no running beam could still beat the worst of the ${k} finished hypotheses.`;
    case "all-ended":
      return `Done after ${n}: every candidate ended.`;
    default:
      return `Done: the length limit of ${n}.`;
  }
}

/** The reader-facing sentence for how a generation ended. */
function endMessage({ reason, newTokens, contextLimit }) {
  const n = `${newTokens} new token${newTokens === 1 ? "" : "s"}`;
  switch (reason) {
    case "stopped":
      return `Stopped after ${n}.`;
    case "eos":
      return `The model wrote <|endoftext|> after ${n}: it considers the text finished.`;
    case "complete":
      return `The JSON is complete after ${n}.`;
    case "context":
      return `Stopped at the context limit after ${n}: this model reads at most ${contextLimit} tokens, prompt included.`;
    default:
      return `Done: ${n}.`;
  }
}

class ModelHandle {
  constructor(channel, info, tokenizer, key) {
    this.channel = channel;
    /**
     * {name, backend, variant, dtype, threads, config, inspect, outputs: {attentions, hiddenStates}, storage, notices, bytes, timings,
     * backendNote, draft}: `backendNote` says why an "auto" load runs on WASM ("" otherwise); `draft`, the
     * manifest's draft model of speculative decoding ({blocks}), or null
     */
    this.info = info;
    this.tokenizer = tokenizer;
    this.key = key;
    /** Promise of the ModelError that ended this model (device lost, worker crashed); pending while it works. */
    this.lost = channel.lost;
  }

  /**
   * One forward pass over `ids` (no cache).
   * @param {number[]} ids token ids, 1 to n_positions of them
   * @param {{attentions?: boolean, hiddenStates?: boolean, allPositions?: boolean}} [options]
   *   attentions / hiddenStates: also fetch those outputs (only variants that have them);
   *   allPositions: logits for every position instead of the last one
   * @returns {Promise<{logits: Float32Array, dims: number[], attentions?: {data: Float32Array, dims: number[]}[],
   *   hiddenStates?: {data: Float32Array, dims: number[]}[]}>} `dims` of the logits are
   *   [rows, vocab_size]; per layer, attentions are (n_head, T, T), hidden states (T, n_embd)
   */
  forward(ids, { attentions = false, hiddenStates = false, allPositions = false } = {}) {
    return this.channel.call({ type: "forward", ids, attentions, hiddenStates, allPositions }).promise;
  }

  /**
   * One pass of the inspect graph (a model loaded with `needs: ["inspect"]`; model_export/probes.py)
   * over `ids`, with probes set: see probe-feeds.js for their names and shapes (batch axis left out).
   * @param {number[]} ids token ids
   * @param {{probes?: Object<string, Float32Array>, want?: string[], lastOnly?: boolean}} [options]
   *   want: output names ("logits", "hidden_states.3", "head_outputs.0", "lens_logits", ...);
   *   lastOnly: "logits" of the last position only
   * @returns {Promise<Object<string, {data: Float32Array, dims: number[]}>>} the outputs by name,
   *   without the batch axis
   */
  async inspect(ids, { probes = {}, want = ["logits"], lastOnly = false } = {}) {
    return (await this.channel.call({ type: "inspect", ids, probes, want, lastOnly }).promise).outputs;
  }

  /**
   * Generate a continuation, streamed token by token.
   * @param {string|number[]} prompt text (or token ids); an empty prompt starts from <|endoftext|>
   * @param {{maxNewTokens?: number, temperature?: number, topK?: number, topP?: number,
   *   seed?: number, alternatives?: number, stopAtEos?: boolean, schema?: object}} [options]
   *   defaults: 32 new tokens, temperature 1 (0 = greedy), top-k 0 and top-p 1 (off),
   *   a random seed (reported in the result), 5 alternatives, stop at <|endoftext|>
   * @returns {GenerationRun} async iterator of tokens
   *   {index, id, text, piece, prob, sampleProb, candidates, top: [{id, text, prob}], elapsedMs, tokensPerSecond}:
   *   `prob` and `top` come from the model's own distribution (temperature 1, unfiltered),
   *   `sampleProb` from the distribution the token was drawn from; `text` is the
   *   decoded text this token completes (empty while a character is still incomplete).
   *   With `schema` (a JSON Schema, grammar.js's subset) the text is guided: each step's tokens are
   *   masked to those that keep it a prefix of a JSON text the schema allows, and each token has
   *   `guide`: {allowed, allowedAny, removed, blocked: {id, prob, text}|null, maskMs} (`allowedAny`:
   *   before the length budget and the end of text); the run ends "complete"
   */
  generate(prompt, options = {}) {
    return new GenerationRun(this.channel, this.tokenizer, this.promptIds(prompt), options);
  }

  /** Token ids of a prompt (text or ids); <|endoftext|> alone for an empty one. */
  promptIds(prompt) {
    const ids = typeof prompt === "string" ? this.tokenizer.encode(prompt) : Array.from(prompt);
    return ids.length ? ids : [this.info.config.eos_token_id];
  }

  /**
   * Beam search from a prompt, streamed step by step (beam.js has the rules: transformers'
   * `generate(num_beams=...)`).
   * @param {string|number[]} prompt text (or token ids); an empty prompt starts from <|endoftext|>
   * @param {{numBeams?: number, maxNewTokens?: number, lengthPenalty?: number,
   *   earlyStopping?: boolean|"never", eos?: number|null}} [options] defaults: 4 beams, 16 new tokens,
   *   length penalty 1, no early stopping, the end token <|endoftext|> (null: none); limits in beam.js BEAM_LIMITS
   * @returns {BeamRun} async iterator of steps {index, parents, tokens, pieces, logProbs, ended, kept,
   *   rows, done, beams: [{tokens, text, logProb}], finished: [{tokens, text, score, logProb}], elapsedMs}
   */
  beamSearch(prompt, options = {}) {
    return new BeamRun(this.channel, this.tokenizer, this.promptIds(prompt), options);
  }

  /**
   * Speculative decoding from a prompt: the model's draft (its first blocks, an early exit, from
   * the manifest) proposes, the model checks, round by round (speculative.js has the rule).
   * @param {string|number[]} prompt text (or token ids); an empty prompt starts from <|endoftext|>
   * @param {{gamma?: number, maxNewTokens?: number, temperature?: number, seed?: number}} [options]
   *   defaults: 4 proposals a round, 32 new tokens, temperature 0 (greedy: the model's own greedy
   *   output), a random seed; limits in speculative.js SPECULATIVE_LIMITS
   * @returns {SpeculativeRun} async iterator of events: while the draft downloads,
   *   {kind: "progress", stage, message, loaded?, total?}; then per round {kind: "round", index,
   *   proposals, pieces, draftProbs, targetProbs (null for a proposal after a refusal: never
   *   checked), kept, last, lastPiece, lastProb, fromResidual, text, newTokens, elapsedMs}
   */
  speculative(prompt, options = {}) {
    return new SpeculativeRun(this.channel, this.tokenizer, this.promptIds(prompt), options);
  }

  /**
   * Download and open the draft model of speculative decoding now (as the first `speculative`
   * run would), so that it is stored for offline reading; `info.draft` says whether there is one.
   * @returns {Promise<{variant: string, blocks: number, bytes: number}>}
   */
  async prepareDraft() {
    try {
      return await this.channel.call({ type: "draft" }).promise;
    } catch (err) {
      throw await offlineDraft(err);
    }
  }

  /** End the worker and free its memory; a later loadModel starts afresh. */
  dispose() {
    this.channel.terminate();
    if (loaded.get(this.key)?.handle === this) loaded.delete(this.key);
  }
}

function workerChannel({ onProgress, onNotice, onBroken }) {
  // createModuleWorker also works when a course page on another origin imported the widgets.
  const worker = createModuleWorker(WORKER_URL);
  keepForOffline(WORKER_URL);
  const pending = new Map();
  let nextId = 1;
  let broken = null;
  let markLost;
  const lost = new Promise((resolve) => {
    markLost = resolve;
  });
  /** The worker can no longer serve: fail every call, now and later, and end it. */
  const breakDown = (err) => {
    if (broken) return;
    broken = err;
    worker.terminate();
    for (const call of pending.values()) call.reject(err);
    pending.clear();
    markLost(err);
    onBroken(err);
  };
  worker.onmessage = ({ data }) => {
    if (data.type === "progress") return onProgress(data);
    if (data.type === "notice") return onNotice(data.message);
    if (data.type === "files") return keepModelFiles(data.baseUrl, data.files);
    if (data.type === "token") return pending.get(data.target)?.onToken?.(data.token);
    if (data.type === "lost") return breakDown(new ModelError({ message: deviceLostMessage(data.reason), kind: "device-lost", retryable: true }));
    const call = pending.get(data.id);
    if (!call) return;
    pending.delete(data.id);
    if (data.error) call.reject(new ModelError(data.error));
    else call.resolve(data.result);
  };
  // The worker script did not load (e.g. HTTP 404), or it threw outside any request.
  worker.onerror = (event) => {
    event.preventDefault();
    breakDown(new ModelError({ message: workerMessage("model", event.message), kind: "worker", retryable: true }));
  };
  return {
    lost,
    call(message, onToken) {
      const id = nextId++;
      const promise = new Promise((resolve, reject) => {
        if (broken) return reject(broken);
        pending.set(id, { resolve, reject, onToken });
        worker.postMessage({ id, ...message });
      });
      return { id, promise };
    },
    post(message) {
      if (!broken) worker.postMessage(message);
    },
    terminate() {
      worker.terminate();
      for (const call of pending.values()) call.reject(new ModelError({ message: "The model was unloaded.", kind: "disposed" }));
      pending.clear();
    },
  };
}

/** A JSON file of the model runtime, named `what` in messages. */
function readJson(url, what) {
  return fetchJson(url, (fault) => new ModelError({ message: dataFileMessage(what, fault), kind: fault.kind, retryable: true }));
}

const INDEX_WHAT = "The site's list of models (models/index.json)";
let modelIndex = null; // Promise of models/index.json, fetched once per page (a failure is forgotten)

/** models/index.json: read once per page, not at every widget update (a failed read is retried next time). */
function readModelIndex() {
  modelIndex ??= readJson(new URL("index.json", modelsURL), INDEX_WHAT).catch((err) => {
    modelIndex = null;
    throw err;
  });
  return modelIndex;
}

/** The site's default model name (from models/index.json). */
export async function defaultModelName() {
  const index = await readModelIndex();
  if (typeof index?.default !== "string") {
    throw new ModelError({ message: dataFileMessage(INDEX_WHAT, { kind: "fields", field: "default model" }), kind: "fields", retryable: true });
  }
  return index.default;
}

/**
 * `name` when models/index.json lists it; otherwise an error naming the models there are
 * (before any request is made with it: a name from an attribute may be anything).
 */
async function knownModelName(name) {
  const models = (await readModelIndex())?.models ?? {};
  if (Object.hasOwn(models, name)) return name;
  const shown = String(name).length > 40 ? `${String(name).slice(0, 40)}…` : String(name);
  throw new ModelError({
    message: `This site has no model “${shown}”; the model must be one of ${Object.keys(models)
      .map((n) => `“${n}”`)
      .join(", ")}.`,
    kind: "missing",
  });
}

/** Where "auto" runs, and the sentence that says why when it is not WebGPU. */
async function autoBackend() {
  if (!globalThis.navigator?.gpu) return { backend: "wasm", note: "This browser has no WebGPU, so the model runs on the CPU (WASM)." };
  const adapter = await webgpuAdapter();
  return adapter ? { backend: "webgpu", note: "" } : { backend: "wasm", note: "This browser offers no WebGPU adapter, so the model runs on the CPU (WASM)." };
}

/**
 * Load a model (once per model, backend, variant and thread count) with its tokenizer.
 * @param {object} [options]
 * @param {string} [options.model] a model name under models/ (default: the site's default)
 * @param {"auto"|"webgpu"|"wasm"} [options.backend="auto"] auto: WebGPU when an adapter exists, else WASM
 * @param {string} [options.variant] force a variant by its name in the manifest; default: the best for the backend
 * @param {number} [options.threads] WASM threads (default min(4, cores); 1 without cross-origin isolation)
 * @param {("attentions"|"hiddenStates"|"inspect")[]} [options.needs] only variants with these outputs;
 *   "inspect": load the variant's inspect graph (same weights, with probes) for `model.inspect`
 * @param {(p: {stage: string, message: string, loaded?: number, total?: number}) => void} [options.onProgress]
 * @param {(message: string) => void} [options.onNotice] remarks such as "kept in memory only"
 * @param {{stallNoticeMs?: number, stallTimeoutMs?: number, concurrency?: number, useCache?: boolean}} [options.download]
 *   stall limits default to the page's `limits()` (limits.js)
 * @param {Partial<import("./tuning.js").Tuning>} [options.tuning] session options that override
 *   the site's (tuning.js), for benchmarks; such a load gets its own worker and session
 * @returns {Promise<ModelHandle>}
 */
export async function loadModel({
  model,
  backend = "auto",
  variant,
  threads,
  needs = [],
  onProgress = () => {},
  onNotice = () => {},
  download = {},
  tuning,
} = {}) {
  const auto = backend === "auto" ? await autoBackend() : { backend, note: "" };
  const resolved = auto.backend;
  const name = model ? await knownModelName(model) : await defaultModelName();
  const asked = { name, backend: resolved, variant, needs };
  const choice = memoryChoice(asked); // after a memory error: the smaller variant, or "anyway"
  variant = choice ? (choice.variant ?? asked.variant) : variant;
  const memory = { check: !choice, deviceGB: deviceMemoryGB() };
  const key = JSON.stringify([name, resolved, variant || null, threads || null, [...needs].sort(), tuning || null]);
  let entry = loaded.get(key);
  if (entry) {
    entry.progress.add(onProgress);
    entry.notice.add(onNotice);
    return entry.promise;
  }
  entry = { progress: new Set([onProgress]), notice: new Set([onNotice]) };
  loaded.set(key, entry);
  const channel = workerChannel({
    onProgress: (event) => entry.progress.forEach((fn) => fn(event)),
    onNotice: (message) => entry.notice.forEach((fn) => fn(message)),
    onBroken: () => {
      if (loaded.get(key) === entry) loaded.delete(key); // the next loadModel starts afresh
    },
  });
  const manifestUrl = new URL(`${name}/manifest.json`, modelsURL).href;
  const { stallNoticeMs, stallTimeoutMs } = limits(download);
  entry.promise = (async () => {
    const { tokenizer: files, ...info } = await channel.call({
      type: "load",
      manifestUrl,
      backend: resolved,
      fallback: backend === "auto",
      variant,
      threads,
      needs,
      tuning,
      memory,
      download: { ...download, stallNoticeMs, stallTimeoutMs },
    }).promise;
    const tokenizer = new GPT2Tokenizer(JSON.parse(files.vocab), files.merges);
    info.backendNote = info.backend === "wasm" ? auto.note : "";
    entry.handle = new ModelHandle(channel, info, tokenizer, key);
    return entry.handle;
  })();
  entry.promise = entry.promise.catch(async (err) => {
    if (err.kind === "memory") throw memoryError(err, asked, variant);
    // Offline, with the model runtime or these files never stored: say that, not which download failed.
    const gap = err.retryable ? await notSavedOffline(WORKER_URL, err) : null;
    if (gap) {
      const what = gap === "files" && needs.includes("inspect") ? "inspect" : "model";
      throw new ModelError({ message: notSavedOfflineMessage(what), kind: "offline", retryable: true });
    }
    throw err;
  });
  entry.promise.catch(() => {
    channel.terminate();
    if (loaded.get(key) === entry) loaded.delete(key); // a failed load can be retried
  });
  trackStart(entry.promise);
  return entry.promise;
}

// ---------------------------------------------------------------- memory (see memory.js)

/**
 * The "memory" error the worker answered (`message`, and `fit`: the smaller variant, or null),
 * with the offers that record the reader's choice for the request `asked`: the smaller
 * variant, or `tried` (the variant that did not fit; undefined: the default) unchecked.
 */
function memoryError(problem, asked, tried = asked.variant) {
  const err = new ModelError({ message: problem.message, kind: "memory", retryable: false });
  err.offers = [{ label: MEMORY_OFFERS.anyway, accept: () => chooseForMemory(asked, { variant: tried, anyway: true }) }];
  if (problem.fit) err.offers.unshift({ label: MEMORY_OFFERS.smaller(problem.fit), accept: () => chooseForMemory(asked, { variant: problem.fit }) });
  return err;
}
