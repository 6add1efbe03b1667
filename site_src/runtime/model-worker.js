/**
 * Module Web Worker that owns the onnxruntime-web session of one exported GPT-2, so
 * that downloading, session creation and every forward pass stay off the page's thread.
 * `model.js` is its client; widgets never talk to it directly.
 *
 * Messages in:
 *   {id, type: "load", manifestUrl, backend: "webgpu"|"wasm", fallback: boolean,
 *    variant?, threads?, needs?, download?, tuning?, memory?: {check, deviceGB}}   (tuning.js, memory.js)
 *   {id, type: "forward", ids, attentions?, hiddenStates?, allPositions?}
 *   {id, type: "inspect", ids, probes?, want, lastOnly?}   (a model loaded with needs ["inspect"])
 *   {id, type: "generate", ids, options}      (streams "token" messages, then answers; options.schema:
 *                                             guided by a JSON Schema, grammar.js and token-mask.js)
 *   {id, type: "beam", ids, options}          (beam search, beam.js: streams one "token" message a step, then answers)
 *   {id, type: "speculative", ids, options}   (speculative decoding with the manifest's draft model, speculative.js:
 *                                             streams the draft's download, then one "token" message a round)
 *   {id, type: "draft"}                       (download and open the draft now, e.g. to store it for offline reading)
 *   {type: "stop", target}                    (ends the generation with that id)
 * Messages out:
 *   {type: "progress", stage, message, loaded?, total?}
 *   {type: "notice", message}
 *   {type: "files", baseUrl, files}           (what a load downloads: kept for offline reading)
 *   {type: "lost", reason}                    (the WebGPU device is gone: the page ends this worker)
 *   {type: "token", target, token}           (a new token; for "beam", a step of the search)
 *   {id, result} or {id, error: {name, message, kind?, retryable?}}
 *
 * The graph's inputs are input_ids, attention_mask, position_ids and
 * past_key_values.{i}.key/value of shape (1, n_head, past, head_dim); its outputs
 * logits and present.{i}.key/value (past + new positions), optionally attentions.{i}
 * and hidden_states.{i}, and new.{i}.key/value (the new positions alone). An empty past
 * (past = 0) makes the same graph do the prefill. On WASM the worker holds the cache of a
 * generation itself when the graph has the new.* outputs (kv-cache.js); on WebGPU it stays on
 * the GPU as present tensors.
 * A model loaded with `needs: ["inspect"]` runs the variant's inspect graph instead: the same
 * weights with the probes of model_export/probes.py (its extra inputs and outputs).
 */
import { vendorURL } from "./paths.js";
import { fetchJson, webgpuAdapter } from "./backend.js";
import { fetchVerified } from "./download.js";
import { isOutOfMemory, isRetryable, manifestMessage } from "./errors.js";
import { memoryProblem } from "./memory.js";
import { expandWeights } from "./expand.js";
import { REQUANT_FORMAT, requantWeights } from "./requant.js";
import { missingManifestField, rankVariants, variantFiles, variantOutputs, outputsWithPrefix, OPTIONAL_OUTPUTS, INSPECT } from "./variants.js";
import { probeFeeds } from "./probe-feeds.js";
import { Rng, randomSeed, MAX_SEED } from "./rng.js";
import { BeamSearch, BEAM_ENDINGS, checkBeamOptions } from "./beam.js";
import { checkSpeculativeOptions, speculativeRounds } from "./speculative.js";
import { SchemaError, compileSchema } from "./grammar.js";
import { TokenMask, VocabularyTrie } from "./token-mask.js";
import { GPT2Tokenizer } from "./tokenizer.js";
import { checkSampling, sampleToken, summarize } from "./sampler.js";
import { sessionOptions, withTuning } from "./tuning.js";
import { HeldCache, passesOf } from "./kv-cache.js";

const ORT_URL = new URL("ort/", vendorURL).href;

/**
 * onnxruntime-web bundle per backend. The WebGPU bundle (built with asyncify) is the one
 * that gave correct WebGPU logits, but the WASM backend runs several times faster from
 * the plain threaded build: per GPT-2-small token, 0.15 s against 2.3 s (q8) and
 * 0.14 s against 0.59 s (fp32), one thread, on this project's 2-core test machine.
 */
const ORT_BUNDLES = { webgpu: "ort.webgpu.min.mjs", wasm: "ort.wasm.min.mjs" };

let ort = null;
let model = null; // {session, config, backend, variant, threads, outputs, inspect, probes, presentNames, newNames, prefillChunk, kvOnGpu}
const stopped = new Set(); // ids of generations asked to stop

function progress(stage, message, extra = {}) {
  self.postMessage({ type: "progress", stage, message, ...extra });
}

/** An error whose `kind` the page can act on (e.g. "context"). */
function tagged(message, kind, retryable = false) {
  const err = new Error(message);
  err.kind = kind;
  err.retryable = retryable;
  return err;
}

/** Run session calls one at a time (onnxruntime-web refuses overlapping runs of a session). */
let queue = Promise.resolve();
function exclusive(fn) {
  const result = queue.then(fn);
  queue = result.catch(() => {});
  return result;
}

/** Let queued messages (such as "stop") in before the next step, without timer clamping. */
function yieldToEvents() {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

/** Threads to use: the request, else min(4, cores); 1 unless the page is cross-origin isolated. */
function threadCount(requested) {
  if (!self.crossOriginIsolated) return 1;
  const cores = navigator.hardwareConcurrency || 1;
  return Math.max(1, requested || Math.min(4, cores));
}

async function importOrt(backend, threads, tuning) {
  if (ort) return ort;
  const bundle = backend === "wasm" ? ORT_BUNDLES[tuning.wasmBundle] : ORT_BUNDLES[backend];
  ort = await import(new URL(bundle, ORT_URL).href);
  ort.env.wasm.wasmPaths = ORT_URL;
  ort.env.logLevel = "error"; // ORT's node-placement warnings are not page errors
  ort.env.wasm.numThreads = threads; // ORT would pick 1 on a 2-core machine
  return ort;
}

async function pickBackend(requested, fallback) {
  if (requested === "wasm") return { backend: "wasm", gpuFeatures: [] };
  const adapter = await webgpuAdapter();
  if (adapter) return { backend: "webgpu", gpuFeatures: [...adapter.features] };
  if (fallback) return { backend: "wasm", gpuFeatures: [] };
  throw tagged("WebGPU was requested but this browser offers no WebGPU adapter; choose WASM instead.", "backend");
}

/** The parsed manifest, checked for the fields the runtime reads (all faults retryable: the site may be updating). */
async function readManifest(url) {
  // a damaged file is a "manifest" fault, the others keep their kind ("network", "http")
  const manifest = await fetchJson(url, (fault) => tagged(manifestMessage(fault), fault.kind === "json" ? "manifest" : fault.kind, true));
  const missing = missingManifestField(manifest);
  if (missing) throw tagged(manifestMessage({ kind: "fields", field: missing }), "manifest", true);
  return manifest;
}

/** Tell the page when the GPU device under the WebGPU session is lost (destroyed, driver reset, ...). */
async function watchDevice() {
  let device;
  try {
    device = await ort.env.webgpu.device;
  } catch {
    return; // no device to watch
  }
  device?.lost?.then((info) => self.postMessage({ type: "lost", reason: (info && (info.message || info.reason)) || "" }));
}

/** The external-data pieces of a compact variant (float32 for q4x, int8 for q8x), built from its packed files. */
function expandedData(index, packed, files, report) {
  let parsed;
  try {
    parsed = JSON.parse(new TextDecoder().decode(files.get(index.path)));
  } catch (err) {
    throw tagged(`The weight index ${index.path} is not valid JSON: ${err.message}`, "session");
  }
  const int8 = parsed && parsed.format === REQUANT_FORMAT; // q8x: int8 codes (requant.js); q4x: float32 (expand.js)
  report("expand", int8 ? "Turning the 4-bit weights into int8…" : "Expanding the 4-bit weights to float32…", { loaded: 0, total: 1 });
  let targets;
  try {
    targets = (int8 ? requantWeights : expandWeights)(
      parsed,
      packed.map((f) => files.get(f.path)),
    );
  } catch (err) {
    throw tagged(`The compact weights could not be expanded: ${err.message}`, "session");
  }
  report("expand", "Weights expanded", { loaded: 1, total: 1 });
  return [...targets].map(([path, data]) => ({ path, data }));
}

/** A "memory" error for `problem` (memory.js memoryProblem): its words and the variant that fits. */
function memoryFault(problem) {
  const err = tagged(problem.message, "memory");
  err.fit = problem.fit;
  return err;
}

/** memoryProblem, or null when it cannot tell (no variant for the backend: the load says so). */
function memoryCheck(request) {
  try {
    return memoryProblem(request);
  } catch {
    return null;
  }
}

/**
 * Load a model. With `memory.check`, the manifest's estimate (memory.js) is compared with
 * `memory.deviceGB` before anything else is fetched, and a load whose allocation fails
 * reports the same "memory" error (with `fit`, the smaller variant to offer).
 */
async function load(request) {
  const { manifestUrl, backend: requested, fallback = false, variant, needs = [], memory = {} } = request;
  const picked = await pickBackend(requested, fallback);
  const manifest = await readManifest(manifestUrl);
  const asked = { manifest, backend: picked.backend, deviceGB: memory.deviceGB ?? null, variant, needs };
  if (memory.check && asked.deviceGB !== null) {
    const problem = memoryCheck(asked);
    if (problem) throw memoryFault(problem);
  }
  try {
    return await loadFrom(manifest, picked, request);
  } catch (err) {
    const problem = isOutOfMemory(err) && memoryCheck({ ...asked, failure: String(err.message) });
    throw problem ? memoryFault(problem) : err;
  }
}

/**
 * Download one variant's files and the tokenizer's (each checked against its hash) and build
 * its weights (a compact variant's from its packed files).
 * @returns {Promise<{graph: Uint8Array, externalData: {path: string, data: Uint8Array}[], fetched: object,
 *   downloaded: number, expanded: number}>} `fetched`: download.js's result, its `files` left holding the tokenizer's
 */
async function fetchVariant(variant, { manifestUrl, tokenizerFiles, inspect, download, notice, report }) {
  const { graph, data, index, packed } = variantFiles(variant, { inspect });
  const listed = index ? [graph, index, ...packed] : [graph, ...data];
  // The page records them: a reader who leaves before they are in gets them stored later.
  self.postMessage({ type: "files", baseUrl: manifestUrl, files: [...listed, ...tokenizerFiles] });
  const fetched = await fetchVerified([...listed, ...tokenizerFiles], {
    baseUrl: manifestUrl,
    onProgress: (p) => report(p.stage, p.message, p),
    onNotice: notice,
    ...download,
  });
  const downloaded = performance.now();
  const externalData = index
    ? expandedData(index, packed, fetched.files, report)
    : data.map((piece) => ({ path: piece.location, data: fetched.files.get(piece.path) }));
  const graphBytes = fetched.files.get(graph.path);
  for (const f of listed) fetched.files.delete(f.path); // the session gets its own copy; packed bytes are spent
  return { graph: graphBytes, externalData, fetched, downloaded, expanded: performance.now() };
}

/**
 * The best variant for `target` that onnxruntime-web opens (variants.js rankVariants): each is
 * downloaded and tried in turn, the next when its session cannot be created (a notice says so);
 * `bytes` counts every download on the way. `report(stage, message, extra)` hears the progress
 * (by default the page's load progress).
 */
async function openBest(manifest, target, { forced, gpuFeatures, needs, presentNames, tuning, notice, report = progress, ...fetching }) {
  const where = target === "webgpu" ? "WebGPU" : "WASM";
  const candidates = rankVariants(manifest, target, { variant: forced, gpuFeatures, needs });
  const bytes = { fromCache: 0, fromNetwork: 0 };
  for (const candidate of candidates) {
    const weights = await fetchVariant(candidate, { ...fetching, notice, report, inspect: needs.includes(INSPECT) });
    bytes.fromCache += weights.fetched.fromCache;
    bytes.fromNetwork += weights.fetched.fromNetwork;
    report("session", `Creating the ${where} session…`);
    try {
      const session = await ort.InferenceSession.create(weights.graph, sessionOptions(target, weights.externalData, presentNames, tuning));
      const { fetched, downloaded, expanded } = weights; // onnxruntime holds its own copy of the weights now
      return { session, variant: candidate, fetched, bytes, downloaded, expanded };
    } catch (err) {
      const reason = String((err && err.message) || err).slice(0, 300);
      if (candidate === candidates[candidates.length - 1]) {
        throw tagged(`onnxruntime-web could not create the ${candidate.name} session on ${where}: ${reason}`, "session");
      }
      notice(`The ${candidate.name} weights do not run on ${where} in this browser (${reason}), so the next variant is used.`);
    }
  }
  throw tagged(`The model has no variant for ${where}.`, "session"); // rankVariants never returns an empty list
}

async function loadFrom(manifest, picked, { manifestUrl, fallback = false, variant: forced, threads: wanted, needs = [], download = {}, tuning: overrides }) {
  const started = performance.now();
  let tuning;
  try {
    tuning = withTuning(overrides);
  } catch (err) {
    throw tagged(err.message, "input");
  }
  let { backend } = picked;
  const { gpuFeatures } = picked;
  progress("runtime", "Loading onnxruntime-web…");
  const threads = threadCount(wanted);
  await importOrt(backend, threads, tuning);
  const tokenizerFiles = [manifest.tokenizer.vocab, manifest.tokenizer.merges];
  const presentNames = [];
  for (let i = 0; i < manifest.config.n_layer; i++) presentNames.push(`present.${i}.key`, `present.${i}.value`);
  const notices = [];
  const notice = (message) => {
    notices.push(message);
    self.postMessage({ type: "notice", message });
  };
  const options = { forced, gpuFeatures, needs, notice, manifestUrl, tokenizerFiles, presentNames, tuning, download };

  let opened;
  try {
    opened = await openBest(manifest, backend, options);
  } catch (err) {
    // "auto" chose WebGPU, but nothing runs there: the CPU is slower but works.
    if (!(fallback && backend === "webgpu" && err.kind === "session")) throw err;
    notice(`WebGPU could not run this model in this browser (${err.message}), so it runs on the CPU (WASM) instead.`);
    backend = "wasm";
    opened = await openBest(manifest, backend, options);
  }
  const { session, variant, fetched, bytes, downloaded, expanded } = opened;
  if (backend === "webgpu") watchDevice();
  const outputs = new Set(session.outputNames || variantOutputs(manifest, variant));
  model = {
    session,
    config: manifest.config,
    backend,
    variant: variant.name,
    threads: backend === "wasm" ? threads : null,
    outputs: [...outputs],
    inspect: needs.includes(INSPECT), // the load asked for the inspect graph: its probes are inputs
    probes: manifest.probes, // their contract (probe-feeds.js)
    presentNames,
    newNames: heldCacheNames(session, manifest.config, backend, tuning),
    prefillChunk: tuning.prefillChunk,
    kvOnGpu: backend === "webgpu",
    // what loading the draft model of speculative decoding takes (draftModel)
    name: manifest.name,
    draftSpec: manifest.draft ?? null,
    draft: null, // a promise of it, once asked for
    opening: { manifestUrl, gpuFeatures, tuning, download },
  };
  const ready = performance.now();
  if (backend === "wasm" && tuning.warmupBeforeReady > 0) {
    progress("warmup", "Warming up the model…");
    await warmUp(tuning.warmupBeforeReady, { untilRequest: false });
  }
  const warmed = performance.now();
  progress("ready", "Model ready");
  if (backend === "wasm" && tuning.warmupSteps > 0) warmUp(tuning.warmupSteps);
  const decoder = new TextDecoder();
  const tokenizer = {
    vocab: decoder.decode(fetched.files.get(tokenizerFiles[0].path)),
    merges: decoder.decode(fetched.files.get(tokenizerFiles[1].path)),
  };
  model.tokenizerText = tokenizer; // for guided decoding's vocabulary trie, built on first use
  fetched.files.clear();
  return {
    name: manifest.name,
    backend,
    variant: variant.name,
    dtype: variant.dtype,
    threads: model.threads,
    crossOriginIsolated: self.crossOriginIsolated,
    gpuFeatures,
    config: manifest.config,
    inspect: model.inspect,
    randomWeights: manifest.random_weights === true,
    draft: manifest.draft ? { blocks: manifest.draft.blocks } : null,
    outputs: {
      attentions: outputsWithPrefix(model.outputs, OPTIONAL_OUTPUTS.attentions).length > 0,
      hiddenStates: outputsWithPrefix(model.outputs, OPTIONAL_OUTPUTS.hiddenStates).length > 0,
    },
    bytes: { total: bytes.fromCache + bytes.fromNetwork, ...bytes },
    storage: fetched.storage,
    notices,
    timings: { downloadMs: downloaded - started, expandMs: expanded - downloaded, sessionMs: ready - expanded, warmupMs: warmed - ready },
    tokenizer,
    tuning,
  };
}

/** Requests the page has sent (a warm-up stops at the first one that arrives after it began). */
let requestCount = 0;

/** Prompt length of the warm-up's prefill: a short prompt's, as a reader's first one. */
const WARMUP_PROMPT = 32;

/**
 * Warm the new session up, so that the browser compiles the hot code and onnxruntime's arena
 * holds buffers of a generation's sizes (the first generation after loading is otherwise slower
 * than later ones): a prefill of WARMUP_PROMPT tokens, then `steps` single-token steps, each
 * queued on its own. In the background (`untilRequest`, the default) it runs while the reader
 * is still reading and ends as soon as the page sends any request, so a reader who presses
 * Generate at once waits for one step at most; the load awaits one with `untilRequest: false`
 * (`tuning.warmupBeforeReady`). Failures are ignored: the reader's own request reports any
 * real fault.
 * @returns {Promise<void>} settled when the warm-up has ended
 */
function warmUp(steps, { untilRequest = true } = {}) {
  const { config, session } = model;
  const since = requestCount;
  const prompt = Math.min(WARMUP_PROMPT, Math.floor(config.n_positions / 2));
  const runner = cachedRunner(model); // the path a generation takes
  const tokens = new Array(prompt).fill(config.eos_token_id);
  const step = async () => {
    if ((untilRequest && requestCount !== since) || model?.session !== session) return false;
    await runner.feed(tokens, 1);
    tokens.push(config.eos_token_id);
    return tokens.length <= prompt + steps && tokens.length < config.n_positions;
  };
  return (async () => {
    while (await step()) await yieldToEvents();
  })()
    .catch(() => {})
    .finally(() => runner.release());
}

/**
 * The graph's new.{i}.key/value outputs, in cache order, when the worker holds the cache itself
 * (WASM, `tuning.heldCache`, a graph that has them); else null, and present is fed back as past.
 */
function heldCacheNames(session, config, backend, tuning) {
  if (backend !== "wasm" || !tuning.heldCache) return null;
  const names = [];
  for (let i = 0; i < config.n_layer; i++) names.push(`new.${i}.key`, `new.${i}.value`);
  return names.every((name) => session.outputNames.includes(name)) ? names : null;
}

function requireModel() {
  if (!model) throw new Error("The model is not loaded");
  return model;
}

function checkPrompt(ids, config) {
  if (!Array.isArray(ids) || ids.some((id) => !Number.isInteger(id) || id < 0 || id >= config.vocab_size)) {
    throw tagged(`Token ids must be whole numbers from 0 to ${config.vocab_size - 1}.`, "input");
  }
  if (ids.length === 0) throw tagged("The prompt is empty: type some text.", "input");
  if (ids.length > config.n_positions) {
    throw tagged(`The prompt is ${ids.length} tokens; this model reads at most ${config.n_positions}. Shorten it.`, "context");
  }
}

const int64 = (values) => BigInt64Array.from(values, BigInt);
const float32Tensor = (data, dims) => new ort.Tensor("float32", data, [1, ...dims]);

/**
 * Feeds for a batch of `rows` (token ids, all of one length), each after `pastLength` cached positions.
 * `session` is the model whose graph takes them: the model, or its draft (`{config, presentNames}`).
 * An inspect graph's probes are fed neutral: it then computes what the variant's graph computes.
 * `mask` is the attention mask over past then new positions when it is not all ones (a held
 * cache's free positions, kv-cache.js).
 */
function batchFeeds(rows, pastLength, past, session = model, mask = null) {
  const { config } = session;
  const B = rows.length;
  const T = rows[0].length;
  const total = pastLength + T;
  const positions = Array.from({ length: T }, (_, i) => pastLength + i);
  const feeds = {
    input_ids: new ort.Tensor("int64", int64(rows.flat()), [B, T]), // (B, T)
    attention_mask: new ort.Tensor("int64", mask ?? new BigInt64Array(B * total).fill(1n), [B, mask ? mask.length : total]), // (B, P + T)
    position_ids: new ort.Tensor("int64", int64(rows.flatMap(() => positions)), [B, T]), // (B, T)
  };
  const headDim = config.n_embd / config.n_head;
  session.presentNames.forEach((name, k) => {
    const input = name.replace("present.", "past_key_values.");
    feeds[input] = past ? past[k] : new ort.Tensor("float32", new Float32Array(0), [B, config.n_head, 0, headDim]); // (B, nh, P, hd)
  });
  if (session.inspect) Object.assign(feeds, probeFeeds(session.probes, config, T, {}, float32Tensor));
  return feeds;
}

/** Copy a CPU or GPU output tensor out as {data, dims} and release it. */
async function takeTensor(tensor) {
  const data = await tensor.getData();
  const out = { data: data.buffer.byteLength === data.byteLength ? data : data.slice(), dims: [...tensor.dims] };
  tensor.dispose?.();
  return out;
}

/** Logits of the last position, as a fresh Float32Array(vocab_size). */
async function lastRow(logitsTensor) {
  return (await lastRows(logitsTensor))[0];
}

/** Logits of the last position of every row of the batch, each a fresh Float32Array(vocab_size). */
async function lastRows(logitsTensor) {
  const [B, T, V] = logitsTensor.dims; // (B, T, V)
  const all = await logitsTensor.getData();
  const rows = Array.from({ length: B }, (_, b) => all.slice((b * T + T - 1) * V, (b * T + T) * V));
  logitsTensor.dispose?.();
  return rows;
}

/**
 * One full forward pass with an empty cache.
 * Returns logits (last position, or all with `allPositions`) and, on request,
 * attention probabilities and hidden states, each as {data, dims}.
 */
async function forward({ ids, attentions = false, hiddenStates = false, allPositions = false }) {
  const { session, config, outputs, variant } = requireModel();
  checkPrompt(ids, config);
  const fetchNames = ["logits"];
  const extra = {};
  for (const [want, key] of [
    [attentions, "attentions"],
    [hiddenStates, "hiddenStates"],
  ]) {
    if (!want) continue;
    const names = outputsWithPrefix(outputs, OPTIONAL_OUTPUTS[key]);
    if (names.length === 0) {
      throw tagged(
        `The ${variant} variant of this model has no ${key === "attentions" ? "attention" : "hidden-state"} outputs; load a variant that has them.`,
        "outputs",
      );
    }
    extra[key] = names;
    fetchNames.push(...names);
  }
  const out = await exclusive(() => session.run(batchFeeds([ids], 0, null), fetchNames));
  const result = {};
  if (allPositions) {
    const logits = await takeTensor(out.logits);
    result.logits = logits.data;
    result.dims = logits.dims.slice(1);
  } else {
    result.logits = await lastRow(out.logits);
    result.dims = [1, config.vocab_size];
  }
  for (const [key, names] of Object.entries(extra)) {
    result[key] = [];
    for (const name of names) {
      const { data, dims } = await takeTensor(out[name]);
      result[key].push({ data, dims: dims.slice(1) });
    }
  }
  return result;
}

/** A run's seed: the one asked for, checked, or a fresh random one. */
function checkSeed(asked) {
  const seed = asked ?? randomSeed();
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) throw tagged(`The seed must be a whole number from 0 to ${MAX_SEED}, got ${seed}.`, "input");
  return seed;
}

function checkGeneration(options, config) {
  const sampling = checkSampling(options, config.vocab_size);
  const maxNewTokens = options.maxNewTokens ?? 32;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
    throw tagged(`Max new tokens must be a whole number ≥ 1, got ${maxNewTokens}.`, "input");
  }
  const seed = checkSeed(options.seed);
  const alternatives = options.alternatives ?? 5;
  if (!Number.isInteger(alternatives) || alternatives < 0 || alternatives > 100) throw tagged("Alternatives must be a whole number from 0 to 100.", "input");
  return { sampling, maxNewTokens, seed, alternatives, stopAtEos: options.stopAtEos ?? true, guide: guideFor(options.schema) };
}

/** The vocabulary as a trie of token bytes (token-mask.js), built once per model. */
function vocabularyTrie() {
  if (!model.trie) {
    const { vocab, merges } = model.tokenizerText;
    const tokenizer = new GPT2Tokenizer(JSON.parse(vocab), merges);
    model.trie = new VocabularyTrie((id) => tokenizer.tokenBytes(id), model.config.vocab_size, [model.config.eos_token_id]);
  }
  return model.trie;
}

/** A JSON Schema's grammar and token mask, or null without a schema. */
function guideFor(schema) {
  if (schema === undefined || schema === null) return null;
  let grammar;
  try {
    grammar = compileSchema(schema);
  } catch (err) {
    if (err instanceof SchemaError) throw tagged(err.message, "input");
    throw err;
  }
  return { grammar, mask: new TokenMask(grammar, vocabularyTrie()), state: grammar.start };
}

/** Refuse a guided generation whose token limit could cut its JSON short. */
function checkRoom(guide, limit) {
  const shortest = guide.grammar.bytesToEnd[guide.grammar.start];
  if (shortest > limit) {
    throw tagged(
      `The shortest JSON this schema allows is ${shortest} characters; allow at least ${shortest} new tokens so that it can always be finished.`,
      "input",
    );
  }
}

/**
 * Apply the guide to a step's logits: every token the grammar does not allow (or that would
 * leave too few tokens to finish) gets -Infinity. Returns the masked logits and what the mask
 * did: tokens allowed, probability removed, the model's favourite token when the mask removed it.
 */
function guideStep(guide, logits, tokensLeft, seen, eos) {
  const started = performance.now();
  const { ids, next } = guide.mask.allowedWithin(guide.state, tokensLeft);
  if (guide.grammar.accepts(guide.state)) (ids.push(eos), next.push(guide.state)); // a complete text may end here
  const masked = new Float32Array(logits.length).fill(-Infinity);
  let kept = 0;
  for (const id of ids) {
    masked[id] = logits[id];
    kept += seen.prob(id);
  }
  const first = seen.top[0]; // the model's own favourite
  const blocked = masked[first.id] === -Infinity ? first : null;
  guide.offered = { ids, next }; // the state after each; only the chosen token's is looked up
  const allowedAny = guide.mask.allowed(guide.state).ids.length; // before the length budget, without the end
  return { masked, view: { allowed: ids.length, allowedAny, removed: Math.max(0, 1 - kept), blocked, maskMs: performance.now() - started } };
}

/**
 * Autoregressive generation with a KV cache: one prefill over the prompt, then one
 * single-token step per new token, each reading the keys and values cached so far.
 */
async function generate({ id, ids, options = {} }) {
  const { config } = requireModel();
  checkPrompt(ids, config);
  const { sampling, maxNewTokens, seed, alternatives, stopAtEos, guide } = checkGeneration(options, config);
  const room = config.n_positions - ids.length;
  if (room === 0) {
    throw tagged(`The prompt fills the whole context of ${config.n_positions} tokens, so there is no room for a new one. Shorten it.`, "context");
  }
  const limit = Math.min(maxNewTokens, room);
  if (guide) checkRoom(guide, limit);
  const rng = new Rng(seed);
  const started = performance.now();
  const runner = cachedRunner(model);
  const tokens = [...ids];
  let [logits] = await runner.feed(tokens, 1); // prefill: the whole prompt (in passes of tuning.prefillChunk)
  const prefillMs = performance.now() - started;
  const prefillRuns = runner.runs;
  const prefillRunMs = runner.runMs;
  let firstTokenAt = 0;
  let reason = "max_tokens";
  let count = 0;
  try {
    for (let n = 0; n < limit; n++) {
      if (stopped.has(id)) {
        reason = "stopped";
        break;
      }
      const seen = summarize(logits, Math.max(alternatives, guide ? 1 : 0));
      const guided = guide ? guideStep(guide, logits, limit - n - 1, seen, config.eos_token_id) : null;
      const pick = sampleToken(guided ? guided.masked : logits, sampling, rng);
      if (guided && pick.id === config.eos_token_id) {
        reason = "complete"; // the JSON was complete and the model chose to end it there
        break;
      }
      const now = performance.now();
      if (n === 0) firstTokenAt = now;
      count = n + 1;
      self.postMessage({
        type: "token",
        target: id,
        token: {
          index: n,
          id: pick.id,
          prob: seen.prob(pick.id),
          sampleProb: pick.sampleProb,
          candidates: pick.candidates,
          top: seen.top.slice(0, alternatives),
          ...(guided && { guide: guided.view }),
          elapsedMs: now - started,
          tokensPerSecond: n > 0 ? n / ((now - firstTokenAt) / 1000) : null,
        },
      });
      if (guide) {
        guide.state = guide.offered.next[guide.offered.ids.indexOf(pick.id)];
        if (guide.grammar.accepts(guide.state) && guide.mask.allowed(guide.state).ids.length === 0) {
          reason = "complete"; // the JSON is finished (and nothing may follow it)
          break;
        }
      }
      if (stopAtEos && pick.id === config.eos_token_id) {
        reason = "eos";
        break;
      }
      if (n === limit - 1) {
        reason = limit < maxNewTokens ? "context" : "max_tokens";
        break;
      }
      tokens.push(pick.id);
      [logits] = await runner.feed(tokens, 1);
      await yieldToEvents();
    }
  } finally {
    runner.release();
    stopped.delete(id);
  }
  const ended = performance.now();
  const decodeSeconds = (ended - firstTokenAt) / 1000;
  return {
    reason,
    seed,
    promptTokens: ids.length,
    newTokens: count,
    contextLimit: config.n_positions,
    prefillMs,
    totalMs: ended - started,
    tokensPerSecond: count > 1 && decodeSeconds > 0 ? (count - 1) / decodeSeconds : null,
    cache: runner.held ? "held" : "present", // where the key-value cache lived between steps
    prefillRuns, // session runs of the prefill (tuning.prefillChunk)
    decodeRunMs: runner.runMs - prefillRunMs, // of the decode steps' time, the part inside onnxruntime's run
  };
}

/**
 * The key-value cache for the next step of a beam search: row i holds the cache of old row
 * `rows[i]` (the beam that the new row i extends). A cache already in that order is used as it
 * is; otherwise each tensor is copied out, its rows gathered, and fed back in (from the GPU too).
 * @param {object[]} present the last run's present.{i}.key/value, each (B, nh, P, hd)
 * @param {number[]} rows the old row of each new row
 */
async function reorderCache(present, rows) {
  if (rows.length === present[0].dims[0] && rows.every((row, i) => row === i)) return present;
  return rebuildCache(present, ([B, ...rest], data) => {
    const size = data.length / B; // one row's cache
    const gathered = new Float32Array(rows.length * size);
    rows.forEach((row, i) => gathered.set(data.subarray(row * size, (row + 1) * size), i * size));
    return { data: gathered, dims: [rows.length, ...rest] };
  });
}

/**
 * Each cache tensor copied out (from the GPU too), rebuilt on the CPU by `rebuild(dims, data)`
 * into `{data, dims}`, and its GPU buffer freed: what a beam search's reordering and speculative
 * decoding's cut share.
 */
function rebuildCache(present, rebuild) {
  return Promise.all(
    present.map(async (tensor) => {
      const { data, dims } = rebuild(tensor.dims, await tensor.getData());
      if (tensor.location === "gpu-buffer") tensor.dispose();
      return new ort.Tensor("float32", data, dims);
    }),
  );
}

/** Free the GPU buffers among `tensors` (a CPU tensor is left to the garbage collector). */
function releaseGpu(tensors) {
  for (const tensor of tensors || []) if (tensor.location === "gpu-buffer") tensor.dispose();
}

/**
 * Beam search (beam.js decides, this runs the model): one prefill over the prompt, then one
 * step per new token that runs every beam as one batch, with the cache reordered by beam.
 * Each step is streamed as a "token" message: its candidates, the beams that run on and the
 * finished hypotheses so far.
 */
async function beam({ id, ids, options = {} }) {
  const { config, session, presentNames, variant } = requireModel();
  if (model.inspect) throw tagged(`The ${variant} model was loaded with its inspect graph; beam search needs a model loaded without it.`, "outputs");
  checkPrompt(ids, config);
  let checked;
  try {
    checked = checkBeamOptions(options, { promptTokens: ids.length, contextLimit: config.n_positions, vocabSize: config.vocab_size, eos: config.eos_token_id });
  } catch (err) {
    throw tagged(err.message, err.field === "context" ? "context" : "input");
  }
  const search = new BeamSearch(checked);
  const started = performance.now();
  let out = await exclusive(() => session.run(batchFeeds([ids], 0, null), ["logits", ...presentNames]));
  let present = presentNames.map((name) => out[name]);
  let rows = await lastRows(out.logits); // one row: every beam starts as the prompt
  const prefillMs = performance.now() - started;
  let reason = null;
  try {
    for (;;) {
      const step = search.advance(rows);
      self.postMessage({
        type: "token",
        target: id,
        token: { ...step, beams: search.beams(), finished: search.hypotheses(), elapsedMs: performance.now() - started },
      });
      if (step.done) {
        reason = search.ending;
        break;
      }
      await yieldToEvents();
      if (stopped.has(id)) {
        reason = BEAM_ENDINGS.stopped;
        break;
      }
      const past = await reorderCache(present, step.rows);
      const next = step.kept.map((c) => [step.tokens[c]]); // (nb, 1)
      out = await exclusive(() => session.run(batchFeeds(next, ids.length + step.index, past), ["logits", ...presentNames]));
      releaseGpu(past);
      present = presentNames.map((name) => out[name]);
      rows = await lastRows(out.logits);
    }
  } finally {
    releaseGpu(present);
    stopped.delete(id);
  }
  const totalMs = performance.now() - started;
  return {
    reason,
    promptTokens: ids.length,
    steps: search.step,
    hypotheses: search.hypotheses(),
    beams: search.beams(),
    options: checked,
    contextLimit: config.n_positions,
    prefillMs,
    totalMs,
    stepMs: search.step > 1 ? (totalMs - prefillMs) / (search.step - 1) : null,
  };
}

/**
 * The draft model of speculative decoding (the manifest's `draft`: the model's first blocks,
 * model_export/pipeline.py run_draft), opened once on the model's backend, in the model's
 * variant when the draft has it. Its download's progress goes to `report` (the run that asked;
 * a run asking meanwhile waits for the same opening). A failed opening is tried again next time.
 */
function draftModel(report) {
  const target = requireModel();
  target.draft ??= openDraft(target, report).catch((err) => {
    target.draft = null;
    throw err;
  });
  return target.draft;
}

async function openDraft(target, report) {
  const spec = target.draftSpec;
  if (!spec) {
    throw tagged(`The ${target.name} model was built without a draft model; rebuild it with model-export all (its --draft-blocks option).`, "outputs");
  }
  const presentNames = [];
  for (let i = 0; i < spec.config.n_layer; i++) presentNames.push(`present.${i}.key`, `present.${i}.value`);
  const same = spec.variants.find((v) => v.name === target.variant && v.backends.includes(target.backend));
  const { manifestUrl, gpuFeatures, tuning, download } = target.opening;
  const opened = await openBest(spec, target.backend, {
    forced: same?.name,
    gpuFeatures,
    needs: [],
    presentNames,
    tuning,
    notice: (message) => report("notice", message),
    report,
    manifestUrl,
    tokenizerFiles: [],
    download,
  });
  opened.fetched.files.clear();
  return {
    session: opened.session,
    config: spec.config,
    presentNames,
    newNames: heldCacheNames(opened.session, spec.config, target.backend, tuning),
    prefillChunk: tuning.prefillChunk,
    variant: opened.variant.name,
    blocks: spec.blocks,
    bytes: opened.bytes.fromCache + opened.bytes.fromNetwork,
  };
}

/**
 * The logits of the last `n` positions of the batch's one row, each a Float32Array(vocab_size):
 * views of the data read out when the pass had only those positions, else copies (a view would
 * keep a long prompt's logits of every position alive).
 */
async function lastPositions(logitsTensor, n) {
  const [, T, V] = logitsTensor.dims; // (1, T, V)
  const all = await logitsTensor.getData();
  const take = T === n ? "subarray" : "slice";
  const rows = Array.from({ length: n }, (_, i) => all[take]((T - n + i) * V, (T - n + i + 1) * V));
  logitsTensor.dispose?.();
  return rows;
}

/**
 * The key-value cache cut back to its first `length` positions: the positions of proposals
 * the target refused are forgotten. A cache of that length already is used as it is.
 * @param {object[]} present present.{i}.key/value, each (1, nh, P, hd)
 * @param {number} length positions to keep (≤ P)
 */
async function cropCache(present, length) {
  if (present[0].dims[2] === length) return present;
  return rebuildCache(present, ([B, nh, P, hd], data) => {
    const kept = new Float32Array(B * nh * length * hd); // (B, nh, length, hd)
    for (let h = 0; h < B * nh; h++) kept.set(data.subarray(h * P * hd, h * P * hd + length * hd), h * length * hd);
    return { data: kept, dims: [B, nh, length, hd] };
  });
}

/**
 * A model (the target or its draft) with its own cache: `feed(tokens, n)` runs the tokens not
 * yet cached and returns the logits of the last `n` positions; `crop(length)` forgets the
 * cached positions from `length` on. `ms` and `passes` count its feeds. The worker holds the
 * cache itself where the graph allows (`runner.newNames`, kv-cache.js), else it is the last
 * pass's present tensors. Tokens beyond `runner.prefillChunk` run in several passes (kv-cache.js
 * passesOf): a long prompt's intermediate tensors then stay small.
 */
function cachedRunner(runner) {
  const held = runner.newNames ? new HeldCache(runner.config) : null;
  let past = null; // the present tensors of the last pass, when the cache is not held
  let cached = 0; // positions cached
  /** One pass over `ids` after the cached positions; the logits of its last `n` (none for 0). */
  async function pass(ids, n) {
    const fetches = [...(n > 0 ? ["logits"] : []), ...(held ? runner.newNames : runner.presentNames)];
    let feeds;
    if (held) {
      const { past: buffers, mask } = held.inputs(ids.length);
      const pastTensors = buffers.map(({ data, dims }) => new ort.Tensor("float32", data, dims)); // (1, nh, capacity, hd)
      feeds = batchFeeds([ids], cached, pastTensors, runner, mask); // mask (1, capacity + T): 0 on free positions
    } else {
      feeds = batchFeeds([ids], cached, past, runner);
    }
    const ran = performance.now();
    const out = await exclusive(() => runner.session.run(feeds, fetches));
    state.runMs += performance.now() - ran;
    if (held) {
      held.append(await Promise.all(runner.newNames.map((name) => out[name].getData())), ids.length);
    } else {
      releaseGpu(past);
      past = runner.presentNames.map((name) => out[name]);
    }
    cached += ids.length;
    state.runs++;
    return n > 0 ? lastPositions(out.logits, n) : null;
  }
  const state = {
    ms: 0,
    runMs: 0, // inside onnxruntime's run (the rest of ms is this worker's own JavaScript)
    passes: 0, // feeds
    runs: 0, // session runs (a long feed takes several)
    held: held !== null,
    get cached() {
      return cached;
    },
    /** Run `tokens.slice(cached)` (the whole text so far, cached part included). */
    async feed(tokens, n) {
      const ids = tokens.slice(cached);
      const started = performance.now();
      const parts = passesOf(ids.length, n, runner.prefillChunk);
      let rows;
      for (const [from, to] of parts) rows = await pass(ids.slice(from, to), to === ids.length ? n : 0);
      state.ms += performance.now() - started;
      state.passes++;
      return rows;
    },
    async crop(length) {
      if (length >= cached) return;
      if (held) held.crop(length);
      else past = await cropCache(past, length);
      cached = length;
    },
    release() {
      releaseGpu(past);
    },
  };
  return state;
}

/**
 * Speculative decoding (speculative.js decides, this runs the two models): each round the
 * draft proposes up to `gamma` tokens one at a time, the target scores them all in one pass,
 * the rule keeps a prefix of them and adds a token of its own, and both caches are cut back to
 * the text written. The draft's download is streamed first (if it is not loaded yet), then one
 * "token" message per round: its proposals, the probability each model gave each, how many the
 * target kept, the token it added and whether that replaced a refused proposal.
 */
async function speculative({ id, ids, options = {} }) {
  const target = requireModel();
  if (target.inspect)
    throw tagged(`The ${target.variant} model was loaded with its inspect graph; speculative decoding needs a model loaded without it.`, "outputs");
  checkPrompt(ids, target.config);
  let checked;
  try {
    checked = checkSpeculativeOptions(options, { promptTokens: ids.length, contextLimit: target.config.n_positions });
  } catch (err) {
    throw tagged(err.message, err.field === "context" ? "context" : "input");
  }
  const seed = checkSeed(options.seed);
  const { maxNewTokens } = checked;
  const post = (token) => self.postMessage({ type: "token", target: id, token });
  let draft;
  try {
    draft = await draftModel((stage, message, extra = {}) => post({ kind: "progress", stage, message, loaded: extra.loaded, total: extra.total }));
  } catch (err) {
    stopped.delete(id);
    throw err;
  }
  const big = cachedRunner(target);
  const small = cachedRunner(draft);
  const models = {
    draft: async (tokens) => (await small.feed(tokens, 1))[0],
    target: (tokens, n) => big.feed(tokens, n),
    rng: new Rng(seed),
  };
  const rounds = { proposed: [], accepted: [] };
  let tokens = [];
  const started = performance.now();
  let reason = "max_tokens";
  try {
    for await (const round of speculativeRounds(ids, checked, models)) {
      tokens = round.tokens;
      const written = ids.length + tokens.length;
      await big.crop(written - 1); // the refused proposals' positions are forgotten; the last token is fed next round
      await small.crop(written - 1);
      rounds.proposed.push(round.proposals.length);
      rounds.accepted.push(round.kept);
      const { tokens: _, ...shown } = round;
      post({ kind: "round", ...shown, newTokens: tokens.length, elapsedMs: performance.now() - started });
      await yieldToEvents();
      if (stopped.has(id) && tokens.length < maxNewTokens) {
        reason = "stopped";
        break;
      }
    }
  } finally {
    big.release();
    small.release();
    stopped.delete(id);
  }
  const totalMs = performance.now() - started;
  const newTokens = tokens.length;
  return {
    reason,
    seed,
    tokens,
    promptTokens: ids.length,
    options: { ...checked, seed },
    proposed: rounds.proposed,
    accepted: rounds.accepted,
    targetPasses: big.passes,
    draftPasses: small.passes,
    targetMs: big.ms,
    draftMs: small.ms,
    totalMs,
    msPerToken: newTokens ? totalMs / newTokens : null,
    draft: { variant: draft.variant, blocks: draft.blocks, of: target.config.n_layer, bytes: draft.bytes },
  };
}

/**
 * One pass of the inspect graph over `ids` with the probes set (probe-feeds.js: name ->
 * Float32Array in the probe's shape without the batch axis; the others neutral). Returns the `want` outputs by name as
 * {data, dims} without the batch axis; with `lastOnly`, "logits" is the last position's row.
 */
async function inspect({ ids, probes = {}, want = [], lastOnly = false }) {
  const { session, config, variant } = requireModel();
  if (!model.inspect) {
    throw tagged(`The ${variant} model was loaded without its inspect graph; load it with needs ["inspect"].`, "outputs");
  }
  checkPrompt(ids, config);
  const names = want.length ? want : ["logits"];
  const unknown = names.find((name) => !model.outputs.includes(name));
  if (unknown) throw tagged(`The inspect graph has no output “${unknown}”.`, "input");
  let feeds;
  try {
    feeds = { ...batchFeeds([ids], 0, null), ...probeFeeds(model.probes, config, ids.length, probes, float32Tensor) };
  } catch (err) {
    throw tagged(err.message, "input");
  }
  const out = await exclusive(() => session.run(feeds, names));
  const result = { outputs: {} };
  for (const name of names) {
    if (name === "logits" && lastOnly) result.outputs.logits = { data: await lastRow(out.logits), dims: [1, config.vocab_size] };
    else {
      const { data, dims } = await takeTensor(out[name]);
      result.outputs[name] = { data, dims: dims.slice(1) };
    }
  }
  return result;
}

/** Open the draft now (the page's load progress hears its download). */
async function prepareDraft() {
  const opened = await draftModel(progress);
  return { variant: opened.variant, blocks: opened.blocks, bytes: opened.bytes };
}

const handlers = { load, forward, generate, beam, speculative, draft: prepareDraft, inspect };

function transferables(result) {
  const buffers = [];
  const add = (array) => array && array.buffer && buffers.push(array.buffer);
  add(result.logits);
  for (const key of ["attentions", "hiddenStates"]) for (const t of result[key] || []) add(t.data);
  for (const t of Object.values(result.outputs || {})) add(t.data);
  return [...new Set(buffers)];
}

self.onmessage = async ({ data }) => {
  if (data.type === "stop") {
    stopped.add(data.target);
    return;
  }
  requestCount++;
  const { id, type } = data;
  try {
    const handler = handlers[type];
    if (!handler) throw new Error(`unknown request ${type}`);
    const result = await handler(data);
    self.postMessage({ id, result }, transferables(result));
  } catch (err) {
    self.postMessage({
      id,
      // Untagged errors (e.g. onnxruntime-web's bundle not downloading) are retryable when errors.js says so.
      error: {
        name: (err && err.name) || "Error",
        message: String((err && err.message) || err),
        kind: err && err.kind,
        retryable: isRetryable(err),
        fit: err && err.fit,
      },
    });
  }
};
