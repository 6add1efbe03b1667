/**
 * Reading the model manifest written by `model-export`: which variant (precision and
 * file layout) to load on a backend, and which of its files are the graph and which
 * are external-data pieces.
 *
 * A variant looks like
 *
 *   {"name": "q4", "dtype": "int4", "backends": ["webgpu", "wasm"], "gpu_features": [],
 *    "outputs": ["logits", "present.0.key", ..., "attentions.0", ...],
 *    "files": [{"path": "q4/model.onnx", "bytes", "sha256", "role": "graph"},
 *              {"path": "q4/model.onnx.data.0", "bytes", "sha256", "role": "data"}, ...]}
 *
 * with exactly one graph file and any number of data pieces. A compact variant (`q4x`) has
 * no data pieces; it lists `{"role": "index"}` (expand.json) and `{"role": "packed"}`
 * files instead, from which `expand.js` builds the pieces in the browser. The manifest
 * may also name `default_variants: {"webgpu": "...", "wasm": "..."}` and, per backend,
 * `variant_order`: the names in the order to try them. A variant that needs WebGPU features
 * (fp16: `shader-f16`) lists them as `gpu_features`. Every one of these facts comes from the
 * variant's spec in model_export/variants.py, with the measurements behind the order.
 * @module variants
 */

/** Output-name prefixes of the optional graph outputs. */
export const OPTIONAL_OUTPUTS = { attentions: "attentions.", hiddenStates: "hidden_states." };

/**
 * The `needs` entry that asks for a variant's inspect graph (model_export/probes.py: the same
 * weights with probes, listed as the variant's `inspect` file), which the runtime then loads
 * instead of its graph.
 */
export const INSPECT = "inspect";

/**
 * The `needs` entry that asks for a variant whose logits at a position do not depend on the
 * other positions of the pass (the manifest's `batch_invariant`, model_export/variants.py):
 * speculative decoding checks several tokens in one pass and must score each as a pass of one would.
 */
export const BATCH_INVARIANT = "batch-invariant";

/** Whether a variant meets one need: an inspect graph, batch invariance, or outputs with that prefix. */
function meets(manifest, variant, need) {
  if (need === INSPECT) return Boolean(variant.inspect);
  if (need === BATCH_INVARIANT) return variant.batch_invariant === true;
  return variantOutputs(manifest, variant).some((n) => n.startsWith(OPTIONAL_OUTPUTS[need]));
}

/** The needs in words: "the probes of the inspect graph", "attentions outputs". */
function needsInWords(needs) {
  const words = {
    [INSPECT]: "the probes the “Looking inside” widgets use (an inspect graph)",
    [BATCH_INVARIANT]: "the same logits for a token whether it is scored alone or with others (no dynamic activation quantization)",
  };
  return needs.map((n) => words[n] ?? `${n} outputs`).join(" and ");
}

/** Output names of a variant: its own list, else the manifest's graph signature. */
export function variantOutputs(manifest, variant) {
  if (Array.isArray(variant.outputs)) return variant.outputs.map((o) => (typeof o === "string" ? o : o.name));
  return (manifest.outputs || []).map((o) => (typeof o === "string" ? o : o.name));
}

/** Names with a prefix, ordered by the layer number after it (`attentions.2` < `attentions.10`). */
export function outputsWithPrefix(names, prefix) {
  return names.filter((n) => n.startsWith(prefix)).sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
}

/**
 * Every variant that can run on `backend`, best first: the manifest's default for the
 * backend, then its `variant_order`, then the rest in manifest order. The runtime loads the
 * first and falls back to the next when onnxruntime-web cannot create its session.
 * @param {object} manifest the parsed manifest.json
 * @param {"webgpu"|"wasm"} backend
 * @param {{variant?: string, gpuFeatures?: string[], needs?: ("attentions"|"hiddenStates"|"inspect")[]}} [options]
 *   `variant` forces a name (then the list has just that one); `gpuFeatures` are the WebGPU
 *   adapter's features (a variant that needs others is left out on WebGPU); `needs` keeps only
 *   variants that have those outputs (or, for "inspect", an inspect graph)
 * @returns {object[]} manifest variant entries
 */
export function rankVariants(manifest, backend, { variant, gpuFeatures = [], needs = [] } = {}) {
  const variants = manifest.variants || [];
  const has = (v) => needs.every((need) => meets(manifest, v, need));
  const where = backend === "webgpu" ? "WebGPU" : "WASM";
  if (variant) {
    const found = variants.find((v) => v.name === variant);
    if (!found) throw new Error(`The model has no variant "${variant}"; it has ${variants.map((v) => v.name).join(", ")}.`);
    if (!found.backends.includes(backend)) throw new Error(`The ${variant} variant does not run on ${where}.`);
    if (!has(found)) throw new Error(`The ${variant} variant lacks what this widget needs: ${needsInWords(needs)}. Choose another variant.`);
    return [found];
  }
  const featured = (v) => backend !== "webgpu" || (v.gpu_features || []).every((f) => gpuFeatures.includes(f));
  const usable = variants.filter((v) => v.backends.includes(backend) && has(v) && featured(v));
  if (usable.length === 0) {
    const what = needs.length ? ` with ${needsInWords(needs)}` : "";
    throw new Error(`The model has no variant${what} for ${where}.`);
  }
  const order = [manifest.default_variants?.[backend], ...(manifest.variant_order?.[backend] || [])];
  const rank = (v) => {
    const i = order.indexOf(v.name);
    return i < 0 ? order.length : i;
  };
  return usable
    .map((v, i) => [rank(v), i, v])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([, , v]) => v);
}

/**
 * Split a variant's files into its graph and its external-data pieces.
 * Each piece gets `location`: its path relative to the graph's folder, which is the
 * name the graph's external-data entries use and what onnxruntime-web's `externalData`
 * option expects as `path`. A compact variant also returns its `index` file and its
 * `packed` files in order (else `index` is null and `packed` empty).
 * With `inspect`, `graph` is the variant's inspect graph (same folder, same pieces).
 * @param {object} variant the manifest's variant entry
 * @param {{inspect?: boolean}} [options]
 * @returns {{graph: object, data: object[], index: object|null, packed: object[]}}
 */
export function variantFiles(variant, { inspect = false } = {}) {
  const graphs = variant.files.filter((f) => f.role === "graph");
  if (graphs.length !== 1) throw new Error(`The ${variant.name} variant lists ${graphs.length} graph files; it needs exactly one.`);
  if (inspect && !isFileEntry(variant.inspect)) throw new Error(`The ${variant.name} variant has no inspect graph.`);
  const graph = inspect ? variant.inspect : graphs[0];
  const folder = graph.path.includes("/") ? graph.path.slice(0, graph.path.lastIndexOf("/") + 1) : "";
  const data = variant.files
    .filter((f) => f.role === "data")
    .map((f) => ({ ...f, location: folder && f.path.startsWith(folder) ? f.path.slice(folder.length) : f.path }));
  const indexes = variant.files.filter((f) => f.role === "index");
  if (indexes.length > 1) throw new Error(`The ${variant.name} variant lists ${indexes.length} weight indexes; it needs at most one.`);
  const packed = variant.files.filter((f) => f.role === "packed");
  return { graph, data, index: indexes[0] || null, packed };
}

/** Whether a manifest entry describes a file: path, size and sha256. */
const isFileEntry = (f) => Boolean(f) && typeof f.path === "string" && Number.isInteger(f.bytes) && typeof f.sha256 === "string";

/** The config numbers the runtime reads: whole numbers, and the LayerNorms' epsilon. */
const CONFIG_FIELDS = ["n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "eos_token_id"];

/**
 * The first field the runtime needs that a parsed manifest lacks, or null when it has them
 * all: config sizes, tokenizer files, and variants each with a name, backends and files.
 * @param {unknown} manifest the parsed manifest.json
 * @returns {string|null} e.g. "config.n_layer", "tokenizer.vocab", "files of the q4 variant"
 */
export function missingManifestField(manifest) {
  if (!manifest || typeof manifest !== "object" || Array.isArray(manifest)) return "fields at all (it is not a JSON object)";
  for (const key of CONFIG_FIELDS) if (!Number.isInteger(manifest.config?.[key])) return `config.${key}`;
  const eps = manifest.config.layer_norm_epsilon;
  if (!(typeof eps === "number" && eps > 0 && Number.isFinite(eps))) return "config.layer_norm_epsilon";
  for (const key of ["vocab", "merges"]) if (!isFileEntry(manifest.tokenizer?.[key])) return `tokenizer.${key}`;
  if (!Array.isArray(manifest.variants) || manifest.variants.length === 0) return "variants";
  const probes = manifest.probes;
  const contract = (p) => Array.isArray(p?.shape) && p.shape.every((d) => typeof d === "string") && typeof p.neutral === "number";
  if (manifest.variants.some((v) => v?.inspect) && !(probes && typeof probes === "object" && Object.values(probes).every(contract))) return "probes";
  for (const [i, v] of manifest.variants.entries()) {
    if (typeof v?.name !== "string") return `name for variants[${i}]`;
    if (!Array.isArray(v.backends)) return `backends for the ${v.name} variant`;
    if (!Array.isArray(v.files) || v.files.length === 0 || !v.files.every(isFileEntry)) return `complete file list for the ${v.name} variant`;
  }
  return null;
}

/**
 * What loading a variant costs in memory, in one place (`peakMemoryBytes` reads it).
 *
 * `peakBytesPerParameter` is the browser's peak private memory, per weight of the model, by
 * the precision the session holds its weights in, from `bench/results/browser*.json` (GPT-2
 * small's shape, 124.4 M weights, WASM, Chromium, 2 threads; whole browser, load plus
 * generation and prefill up to 512 tokens): q4x and fp32 peak at about 1.95 GB (q4x downloads
 * 4-bit weights but expands them to float32, and the expanded copy, onnxruntime's copy in the
 * WebAssembly heap and its prepacked matrices overlap while the session is created), q8x at
 * about 1.08 GB (its int8 weights are built in the worker while the 4-bit pieces are still
 * held), q8 at about 0.83 GB and q4 at about 0.73 GB. Less `runtimeBytes`, that is about 13.5,
 * 6.4, 4.5 and 3.6 bytes per weight. fp16 (WebGPU only, not measured) keeps the earlier figure
 * of 6. When a change to the load moves a peak, re-run the benchmark and change the figure here.
 *
 * `runtimeBytes` is what the tab holds whatever the model: onnxruntime-web's WebAssembly
 * module and heap, the worker, the tokenizer, so a model as small as the test site's `tiny`
 * still needs about 0.3 GB.
 *
 * The KV cache counts at its largest, every layer's keys and values for all `n_positions`
 * positions, and about eleven times over: each decoding step copies the whole cache into the
 * session's WebAssembly heap as an input and back out as an output, the heap keeps the room
 * it grew to, and the page's copies of earlier steps wait for the garbage collector.
 * Measured: decoding after 1,000 cached positions raised q8x's peak by about 0.9 GB over the
 * short generations, about eleven times the 74 MB cache (q4x's rose by 0.46 GB, because the
 * float32 copies it frees after creating the session leave room in the heap).
 */
export const MEMORY = Object.freeze({
  peakBytesPerParameter: Object.freeze({ float32: 13.5, float16: 6, int8FromInt4: 6.4, int8: 4.5, int4: 3.6 }),
  runtimeBytes: 280e6,
  kvBytesPerValue: 4 * 11, // float32, about eleven copies at the peak
});

/**
 * The weights of a GPT-2 with this config: token and position embeddings, per layer two
 * layer norms, the attention (qkv and output projection) and the MLP (4x wide), the final
 * layer norm; the output head shares the token embedding.
 * @param {{n_layer: number, n_embd: number, n_positions: number, vocab_size: number}} config
 * @returns {number}
 */
export function parameterCount({ n_layer, n_embd: d, n_positions, vocab_size }) {
  const perLayer = 12 * d * d + 13 * d;
  return vocab_size * d + n_positions * d + n_layer * perLayer + 2 * d;
}

/**
 * Which `MEMORY.peakBytesPerParameter` figure a variant's load follows: the precision its
 * session holds the weights in (q4x's are expanded to float32), and for q8x, whose int8
 * weights are built in the worker from 4-bit pieces, `int8FromInt4`.
 */
export function memoryKey(variant) {
  if (variant.files.some((f) => f.role === "index")) return variant.dtype === "int8" ? "int8FromInt4" : "float32";
  return variant.dtype in MEMORY.peakBytesPerParameter ? variant.dtype : "float32";
}

/**
 * Estimated peak memory of loading `variant` and generating up to the full context (see
 * `MEMORY`): weights × bytes per weight at the peak + the KV cache + the runtime.
 * @param {object} manifest the parsed manifest.json (its `config`)
 * @param {object} variant one of its variants
 * @returns {number} bytes
 */
export function peakMemoryBytes(manifest, variant) {
  const { config } = manifest;
  const weights = parameterCount(config) * MEMORY.peakBytesPerParameter[memoryKey(variant)];
  const kvCache = 2 * config.n_layer * config.n_positions * config.n_embd * MEMORY.kvBytesPerValue;
  return weights + kvCache + MEMORY.runtimeBytes;
}

/**
 * The variant `backend` would load (as `rankVariants` ranks them, `variant` forcing one), its
 * estimate, and the best-ranked other variant whose estimate is below both that estimate and
 * `budget` (null when none is).
 * @param {object} manifest
 * @param {"webgpu"|"wasm"} backend
 * @param {number} budget bytes a tab may use (Infinity: no limit)
 * @param {{variant?: string, needs?: string[]}} [options] as for `rankVariants`
 * @returns {{variant: object, need: number, fit: {variant: object, need: number}|null}}
 */
export function memoryFit(manifest, backend, budget, { variant, needs = [] } = {}) {
  const [wanted] = rankVariants(manifest, backend, { variant, needs });
  const need = peakMemoryBytes(manifest, wanted);
  const fit = rankVariants(manifest, backend, { needs })
    .map((v) => ({ variant: v, need: peakMemoryBytes(manifest, v) }))
    .find((c) => c.variant !== wanted && c.need < need && c.need <= budget);
  return { variant: wanted, need, fit: fit || null };
}
