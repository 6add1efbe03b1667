/**
 * Looking inside the live model: the quantities of the "Looking inside the model" pages,
 * computed with the probes of the inspect graph (probe-feeds.js, model_export/probes.py) on a
 * model loaded with `loadModel({needs: ["inspect"]})`. The same recipes, in PyTorch with hooks,
 * are model_export/interpret.py; the tests compare the two.
 *
 *   const model = await loadModel({ needs: ["inspect"] });
 *   const lens = await logitLens(model, ids);            // every layer's reading of every position
 *   const map = await headImportance(model, ids, "zero", { onProgress, signal });
 *
 * Long runs (one pass per head or per (layer, position)) take `onProgress(done, total)` and an
 * AbortSignal; they check it between passes and then throw an error named "AbortError".
 * Pure helpers (softmax, KL, ...) take and return typed arrays, so they run anywhere.
 * @module interpret
 */
import { Rng } from "./rng.js";
import { argmax, topIndices } from "./sampler.js";

/** Softmax of `logits[offset .. offset + n)` as a Float64Array (n defaults to the rest). */
export function softmax(logits, offset = 0, n = logits.length - offset) {
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, logits[offset + i]);
  const out = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += out[i] = Math.exp(logits[offset + i] - max);
  for (let i = 0; i < n; i++) out[i] /= sum;
  return out;
}

/** KL(p || q) in nats. */
export function klDivergence(p, q) {
  let kl = 0;
  for (let i = 0; i < p.length; i++) if (p[i] > 0) kl += p[i] * (Math.log(p[i]) - Math.log(Math.max(q[i], 1e-300)));
  return Math.max(0, kl);
}

/** The k largest of `probs` as [{id, prob}], largest first (the lowest id first among ties). */
export function topProbs(probs, k) {
  return topIndices(probs, k).map((id) => ({ id, prob: probs[id] }));
}

/** 1-based rank of `id` in `probs` (1 = most likely). */
export function rankOf(probs, id) {
  let rank = 1;
  for (let i = 0; i < probs.length; i++) if (probs[i] > probs[id]) rank++;
  return rank;
}

/** How much of the clean logit difference a patch restores: 0 = none, 1 = all of it. */
export function restored(patched, clean, corrupted) {
  return clean !== corrupted ? (patched - corrupted) / (clean - corrupted) : 0;
}

/** An error for a run the reader cancelled. */
function aborted() {
  const err = new Error("Cancelled.");
  err.name = "AbortError";
  return err;
}

const sizes = (model) => {
  const { n_layer: L, n_head: nh, n_embd: C, vocab_size: V, layer_norm_epsilon: eps } = model.info.config;
  return { L, nh, C, V, hd: C / nh, eps };
};
const names = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}.${i}`);

/** Throw a clear error unless `layer` and `head` name a head of this model. */
export function checkHead(model, layer, head) {
  const { L, nh } = sizes(model);
  if (!Number.isInteger(layer) || layer < 0 || layer >= L) throw new RangeError(`Layer ${layer} does not exist: this model has layers 0 to ${L - 1}.`);
  if (!Number.isInteger(head) || head < 0 || head >= nh) throw new RangeError(`Head ${head} does not exist: each layer has heads 0 to ${nh - 1}.`);
}

/**
 * The logit lens: every layer's residual stream (the embeddings, then each block's output) at
 * every position, read through the final LayerNorm and the unembedding.
 * @returns {Promise<{layers: number, T: number, V: number, logits: Float32Array, cell: Function}>}
 *   `logits` is (layers, T, V); `cell(l, t)` gives that reading's probabilities (Float64Array)
 */
export async function logitLens(model, ids) {
  const { L, V } = sizes(model);
  const hidden = await model.inspect(ids, { want: names("hidden_states", L + 1) });
  const T = ids.length;
  const C = hidden["hidden_states.0"].dims[1];
  const rows = new Float32Array((L + 1) * T * C); // ((L + 1) T, C)
  for (let l = 0; l <= L; l++) rows.set(hidden[`hidden_states.${l}`].data, l * T * C);
  // one more pass reads the rows; its prompt (one token) is only there to run the graph
  const { lens_logits: lens } = await model.inspect(ids.slice(0, 1), { probes: { lens_hidden: rows }, want: ["lens_logits"] });
  return { layers: L + 1, T, V, logits: lens.data, cell: (l, t) => softmax(lens.data, (l * T + t) * V, V) };
}

/** The clean run's per-head outputs z (head_outputs.{l}, each (nh, T, hd)). */
async function headOutputs(model, ids) {
  return model.inspect(ids, { want: ["logits", ...names("head_outputs", sizes(model).L)], lastOnly: true });
}

/**
 * Probes that switch `heads` off: zero ablation sets their output to 0, mean ablation to its
 * mean over the prompt's positions (`clean`: the outputs of headOutputs).
 */
function ablationProbes(model, T, heads, mode, clean) {
  const { L, nh, hd } = sizes(model);
  const scale = new Float32Array(L * nh * T).fill(1);
  const add = new Float32Array(L * nh * T * hd);
  for (const [l, h] of heads) {
    checkHead(model, l, h);
    scale.fill(0, (l * nh + h) * T, (l * nh + h + 1) * T);
    if (mode !== "mean") continue;
    const z = clean[`head_outputs.${l}`].data; // (nh, T, hd)
    const mean = new Float32Array(hd);
    for (let t = 0; t < T; t++) for (let d = 0; d < hd; d++) mean[d] += z[(h * T + t) * hd + d] / T;
    for (let t = 0; t < T; t++) add.set(mean, ((l * nh + h) * T + t) * hd);
  }
  return { head_scale: scale, head_add: add };
}

/** The next-token distribution (last position) of `ids` run with `probes`. */
async function lastProbs(model, ids, probes) {
  return softmax((await model.inspect(ids, { probes, want: ["logits"], lastOnly: true })).logits.data);
}

/**
 * `count` runs, one after another: `run(i)` for i = 0 .. count − 1, with `onProgress(done, count)`
 * before the first and after each, and the AbortSignal checked before each.
 */
async function eachRun(count, run, { onProgress = () => {}, signal } = {}) {
  onProgress(0, count);
  for (let i = 0; i < count; i++) {
    if (signal?.aborted) throw aborted();
    await run(i);
    onProgress(i + 1, count);
  }
}

/**
 * The next-token distribution with `heads` switched off.
 * @param {[number, number][]} heads (layer, head) pairs
 * @param {"zero"|"mean"} mode
 * @returns {Promise<{before: Float64Array, after: Float64Array, kl: number}>} kl = KL(before || after)
 */
export async function ablateHeads(model, ids, heads, mode = "zero") {
  const clean = await headOutputs(model, ids);
  const before = softmax(clean.logits.data);
  const after = await lastProbs(model, ids, ablationProbes(model, ids.length, heads, mode, clean));
  return { before, after, kl: klDivergence(before, after) };
}

/**
 * Which heads matter for this prediction: KL(before || after) with each head ablated alone.
 * @returns {Promise<{kl: Float64Array, before: Float64Array}>} kl is (L, nh)
 */
export async function headImportance(model, ids, mode = "zero", options = {}) {
  const { L, nh } = sizes(model);
  const clean = await headOutputs(model, ids);
  const before = softmax(clean.logits.data);
  const kl = new Float64Array(L * nh);
  await eachRun(
    L * nh,
    async (i) => {
      const probes = ablationProbes(model, ids.length, [[Math.floor(i / nh), i % nh]], mode, clean);
      kl[i] = klDivergence(before, await lastProbs(model, ids, probes));
    },
    options,
  );
  return { kl, before };
}

/** Throw a clear error unless the clean and corrupted prompts can be patched into each other. */
export function checkPair(clean, corrupted) {
  if (clean.length === 0 || corrupted.length === 0) throw new RangeError("Both prompts need some text.");
  if (clean.length !== corrupted.length) {
    throw new RangeError(
      `The clean prompt has ${clean.length} tokens and the corrupted one ${corrupted.length}: patching copies position by position, so they need the same number of tokens.`,
    );
  }
}

const logitDifference = (logits, good, bad) => logits[good] - logits[bad];

/** The logit differences of the clean and the corrupted prompt, and the clean run's `want`. */
async function pairBaseline(model, clean, corrupted, good, bad, want) {
  checkPair(clean, corrupted);
  const base = await model.inspect(clean, { want: ["logits", ...want], lastOnly: true });
  const corrupt = await model.inspect(corrupted, { want: ["logits"], lastOnly: true });
  return { base, ldClean: logitDifference(base.logits.data, good, bad), ldCorrupt: logitDifference(corrupt.logits.data, good, bad) };
}

/**
 * The corrupted prompt run once per site with `probesFor(site)`: each run's logit difference and
 * the share of the clean one it restores.
 */
async function patchEach(model, corrupted, good, bad, { ldClean, ldCorrupt }, count, probesFor, options) {
  const ld = new Float64Array(count);
  const out = new Float64Array(count);
  await eachRun(
    count,
    async (i) => {
      const run = await model.inspect(corrupted, { probes: probesFor(i), want: ["logits"], lastOnly: true });
      ld[i] = logitDifference(run.logits.data, good, bad);
      out[i] = restored(ld[i], ldClean, ldCorrupt);
    },
    options,
  );
  return { restored: out, ld, ldClean, ldCorrupt };
}

/**
 * Residual-stream patching: run the corrupted prompt with the stream entering block l at position
 * t copied from the clean run, for every (l, t).
 * @returns {Promise<{restored: Float64Array, ld: Float64Array, ldClean: number, ldCorrupt: number, T: number}>}
 *   restored and ld (the patched logit difference) are (L, T)
 */
export async function patchResidual(model, clean, corrupted, good, bad, options = {}) {
  const { L, C } = sizes(model);
  const T = clean.length;
  const baseline = await pairBaseline(model, clean, corrupted, good, bad, names("hidden_states", L));
  const probesFor = (i) => {
    const [l, t] = [Math.floor(i / T), i % T];
    const scale = new Float32Array(L * T).fill(1);
    const add = new Float32Array(L * T * C);
    scale[i] = 0;
    add.set(baseline.base[`hidden_states.${l}`].data.subarray(t * C, (t + 1) * C), i * C); // (T, C) row t
    return { resid_scale: scale, resid_add: add };
  };
  return { ...(await patchEach(model, corrupted, good, bad, baseline, L * T, probesFor, options)), T };
}

/**
 * Per-head patching: each head's output at every position copied from the clean run.
 * @returns {Promise<{restored: Float64Array, ld: Float64Array, ldClean: number, ldCorrupt: number}>} (L, nh)
 */
export async function patchHeads(model, clean, corrupted, good, bad, options = {}) {
  const { L, nh, hd } = sizes(model);
  const T = clean.length;
  const baseline = await pairBaseline(model, clean, corrupted, good, bad, names("head_outputs", L));
  const probesFor = (i) => {
    const [l, h] = [Math.floor(i / nh), i % nh];
    const scale = new Float32Array(L * nh * T).fill(1);
    const add = new Float32Array(L * nh * T * hd);
    scale.fill(0, i * T, (i + 1) * T);
    add.set(baseline.base[`head_outputs.${l}`].data.subarray(h * T * hd, (h + 1) * T * hd), i * T * hd); // (nh, T, hd) head h
    return { head_scale: scale, head_add: add };
  };
  return patchEach(model, corrupted, good, bad, baseline, L * nh, probesFor, options);
}

/** `half` random token ids written twice, after <|endoftext|>: the induction-head test sequence. */
export function repeatedTokens(half, vocabSize, seed, bos) {
  const rng = new Rng(seed);
  const first = Array.from({ length: half }, () => Math.floor(rng.random() * vocabSize));
  return [bos, ...first, ...first];
}

/**
 * Induction heads on `ids`, whose last 2 × half tokens are a half written twice.
 * @returns {Promise<{scores: Float64Array, loss: Float64Array, attentions: {data, dims}[]}>}
 *   scores (L, nh): mean attention from each second-copy position t to t − half + 1;
 *   loss (T − 1): the next-token loss in nats at each position
 */
export async function induction(model, ids, half) {
  const { L, nh, V } = sizes(model);
  const T = ids.length;
  if (!Number.isInteger(half) || half < 2 || 2 * half > T) throw new RangeError(`The repeated half must be 2 to ${Math.floor(T / 2)} tokens long.`);
  const out = await model.inspect(ids, { want: ["logits", ...names("attentions", L)] });
  const scores = new Float64Array(L * nh);
  for (let l = 0; l < L; l++) {
    const a = out[`attentions.${l}`].data; // (nh, T, T)
    for (let h = 0; h < nh; h++) {
      let sum = 0;
      for (let t = T - half; t < T; t++) sum += a[(h * T + t) * T + (t - half + 1)];
      scores[l * nh + h] = sum / half;
    }
  }
  const loss = new Float64Array(T - 1);
  for (let t = 0; t < T - 1; t++) loss[t] = -Math.log(softmax(out.logits.data, t * V, V)[ids[t + 1]]);
  return { scores, loss, attentions: names("attentions", L).map((n) => out[n]) };
}

/**
 * Direct logit attribution at the last position: each head's and MLP's output c read through the
 * unembedding with the final LayerNorm's scale frozen, ((c − mean c) / σ) · (g ⊙ W_U[token]).
 * @param {number} [token] the token to explain; default the model's top prediction
 * @returns {Promise<{token: number, logit: number, heads: Float64Array, mlps: Float64Array,
 *   embeddings: number, attnBias: number, rest: number}>} heads (L, nh), mlps (L); `rest` is the
 *   logit less the parts: the final LayerNorm bias's share
 */
export async function logitAttribution(model, ids, token) {
  const { L, nh, C, V, hd, eps } = sizes(model);
  const T = ids.length;
  const clean = await model.inspect(ids, {
    want: ["logits", `hidden_states.0`, `hidden_states.${L}`, ...names("head_outputs", L), ...names("mlp_outputs", L)],
    lastOnly: true,
  });
  const target = token ?? argmax(clean.logits.data);
  if (!Number.isInteger(target) || target < 0 || target >= V) throw new RangeError(`Token ${target} is not in the vocabulary (0 to ${V - 1}).`);
  // each head's output alone through its layer's c_proj: row 0 is no head at all (the bias)
  const K = nh + 1;
  const headRows = new Float32Array(L * K * C); // (L, K, C)
  for (let l = 0; l < L; l++) {
    const z = clean[`head_outputs.${l}`].data; // (nh, T, hd)
    for (let h = 0; h < nh; h++) headRows.set(z.subarray((h * T + T - 1) * hd, (h * T + T) * hd), (l * K + h + 1) * C + h * hd);
  }
  const writes = await model.inspect(ids.slice(0, 1), { probes: { head_rows: headRows }, want: names("head_writes", L) });
  const last = (tensor) => tensor.data.subarray((T - 1) * C, T * C);
  const components = []; // (C) vectors: heads, MLPs, embeddings, then the attention biases
  const bias = new Float64Array(C);
  for (let l = 0; l < L; l++) {
    const w = writes[`head_writes.${l}`].data; // (K, C)
    for (let h = 0; h < nh; h++) components.push(Float64Array.from({ length: C }, (_, i) => w[(h + 1) * C + i] - w[i]));
    for (let i = 0; i < C; i++) bias[i] += w[i];
  }
  for (let l = 0; l < L; l++) components.push(Float64Array.from(last(clean[`mlp_outputs.${l}`])));
  components.push(Float64Array.from(last(clean["hidden_states.0"])), bias);
  // centre each part and divide by the final stream's σ; each row at full scale for the int8 graphs
  const final = last(clean[`hidden_states.${L}`]);
  const mean = final.reduce((s, v) => s + v, 0) / C;
  const sigma = Math.sqrt(final.reduce((s, v) => s + (v - mean) ** 2, 0) / C + eps);
  const rows = new Float32Array(components.length * C);
  const scales = components.map((c, r) => {
    const m = c.reduce((s, v) => s + v, 0) / C;
    const centred = c.map((v) => (v - m) / sigma);
    const scale = Math.max(...centred.map(Math.abs)) || 1;
    rows.set(
      centred.map((v) => v / scale),
      r * C,
    );
    return scale;
  });
  const read = await model.inspect(ids.slice(0, 1), { probes: { unembed_rows: rows }, want: ["unembed_logits"] });
  const parts = scales.map((s, r) => read.unembed_logits.data[r * V + target] * s);
  const logit = clean.logits.data[target];
  const heads = Float64Array.from(parts.slice(0, L * nh));
  const mlps = Float64Array.from(parts.slice(L * nh, L * nh + L));
  const [embeddings, attnBias] = parts.slice(L * nh + L);
  const sum = parts.reduce((s, v) => s + v, 0);
  return { token: target, logit, heads, mlps, embeddings, attnBias, rest: logit - sum };
}
