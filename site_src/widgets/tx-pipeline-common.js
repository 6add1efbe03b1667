/**
 * What the "in the order it runs" widgets (<tx-pipeline>, <tx-stage-*>, <tx-parity>) share:
 * the reader's prompt (kept in localStorage, so it is typed once and follows the reader from
 * stage to stage), one forward pass per prompt with attentions and hidden states, the weights
 * (read from the model's own `q4x` files, where `tables/index.json` of
 * `site_src/sitebuild/pipeline_hook.py` says each one is), a few float32 kernels (LayerNorm, linear
 * layers, GELU, softmax) that recompute a block's intermediate tensors from them, and an SVG
 * heatmap. This module defines no element.
 * @module widgets/tx-pipeline-common
 */
import { loadModel } from "../runtime/model.js";
import { modelsURL } from "../runtime/paths.js";
import { sha256Hex } from "../runtime/download.js";
import { openPacked } from "../runtime/packed-weights.js";
import { TxElement, escapeHtml } from "./base.js";

export const PROMPT_KEY = "tx-pipeline-prompt";
export const DEFAULT_PROMPT = "Data visualization empowers users to";
/** Figures draw at most this many tokens (the prompt's first ones). */
export const MAX_T = 16;
/** Heatmaps draw at most this many columns (the first ones). */
export const MAX_COLS = 64;
export const GPT2_SMALL = Object.freeze({ n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, vocab_size: 50257 });
const PROMPT_EVENT = "tx-pipeline-prompt";
let memoryPrompt = null;

/** The reader's prompt (the default one until they type their own). */
export function getPrompt() {
  try {
    const stored = localStorage.getItem(PROMPT_KEY);
    if (stored !== null) return stored;
  } catch {
    // storage blocked: keep it in memory for this page
  }
  return memoryPrompt ?? DEFAULT_PROMPT;
}

/** Store the prompt and tell every pipeline widget on the page. */
export function setPrompt(text) {
  memoryPrompt = text;
  try {
    localStorage.setItem(PROMPT_KEY, text);
  } catch {
    // storage blocked: the in-memory copy serves this page
  }
  window.dispatchEvent(new CustomEvent(PROMPT_EVENT, { detail: text }));
}

/** Markup of the shared prompt box. */
export function promptBar() {
  return `<label class="pl-prompt">Your prompt (shared by every stage page)
      <input type="text" spellcheck="false" autocomplete="off" maxlength="2000"></label>`;
}

/**
 * Wire the prompt box of `widget`: typing stores the prompt and calls `onChange` (debounced);
 * a change made by another pipeline widget on the page updates the box and calls it too.
 * @returns {() => void} removes the listener
 */
export function bindPrompt(widget, onChange) {
  const input = widget.$(".pl-prompt input");
  input.value = getPrompt();
  let timer = null;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => setPrompt(input.value), 300);
  });
  const listener = (event) => {
    if (input.value !== event.detail) input.value = event.detail;
    onChange(event.detail);
  };
  window.addEventListener(PROMPT_EVENT, listener);
  return () => window.removeEventListener(PROMPT_EVENT, listener);
}

/** Styles shared by the pipeline widgets (inserted in each template). */
export const PIPELINE_CSS = `<style>
  .pl-prompt { display: block; margin-bottom: 0.5em; }
  .pl-prompt input { display: block; width: 100%; box-sizing: border-box; font: inherit; padding: 0.3em; }
  .pl-shape { font-family: var(--md-code-font-family, monospace); font-size: 0.9em; margin: 0.3em 0; }
  .pl-row { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: center; margin: 0.4em 0; }
  .pl-figs { display: flex; flex-wrap: wrap; gap: 0.8em; align-items: flex-start; }
  figure.pl-fig { margin: 0; max-width: 100%; overflow-x: auto; }
  figure.pl-fig figcaption { font-size: 0.85em; margin-bottom: 0.2em; }
  .pl-tokens { display: flex; flex-wrap: wrap; gap: 0.3em; }
  .pl-token { border: 1px solid currentColor; border-radius: 3px; padding: 0.1em 0.35em; text-align: center; font-family: var(--md-code-font-family, monospace); }
  .pl-token small { display: block; opacity: 0.8; }
  .pl-note { font-size: 0.85em; margin: 0.3em 0; }
  svg.pl-heat text { font-size: 9px; fill: currentColor; }
  table.pl-table { border-collapse: collapse; font-size: 0.9em; }
  table.pl-table td, table.pl-table th { padding: 0.1em 0.5em; border-bottom: 1px solid rgba(128,128,128,0.4); text-align: right; }
  table.pl-table td:first-child, table.pl-table th:first-child { text-align: left; }
  select, button, input[type=number], input[type=range] { font: inherit; }
</style>`;

/** Make spaces and line breaks in a token visible. */
export function visible(text) {
  return text.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥");
}

/** "(6, 768)", or "(6,)" for one dimension (as Python writes shapes). */
export function shapeText(dims) {
  return dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(", ")})`;
}

/** The loaded model's shape next to GPT-2 small's, as one line of HTML. */
export function shapeLine(label, gpt2Dims, modelDims, modelName) {
  const same = gpt2Dims.join() === modelDims.join();
  return `<p class="pl-shape" data-shape="${modelDims.join(",")}">${escapeHtml(label)}: GPT-2 small ${shapeText(gpt2Dims)}`
    + (same ? "" : ` · this site's model (${escapeHtml(modelName)}) ${shapeText(modelDims)}`) + "</p>";
}

// ---------------------------------------------------------------- model and forward pass

/** The site's model, with a variant that has attention and hidden-state outputs. */
export function loadPipelineModel(onProgress) {
  return loadModel({ needs: ["attentions", "hiddenStates"], onProgress });
}

/** Token ids of `text`, at most MAX_T of them (`truncated` says whether some were cut). */
export function encodePrompt(model, text) {
  const all = model.tokenizer.encode(text);
  if (all.length === 0) throw new Error("The prompt is empty: type some text.");
  return { ids: all.slice(0, MAX_T), total: all.length, truncated: all.length > MAX_T };
}

/** A note for prompts longer than the figures draw. */
export function truncationNote({ total, truncated }) {
  return truncated ? `Your prompt has ${total} tokens; the figures follow its first ${MAX_T}.` : "";
}

const forwards = new Map();

/**
 * One forward pass over `ids` with every attention and hidden state (memoised per prompt).
 * @returns {Promise<{T: number, logits: Float32Array, hidden: Float32Array[], attn: Float32Array[]}>}
 *   hidden[j] (T, n_embd): j = 0 the embedding sum, j >= 1 the residual stream after block j;
 *   attn[i] (n_head, T, T): block i's attention probabilities; logits (V,) of the last position
 */
export function runForward(model, ids) {
  const key = `${model.key}|${ids.join(",")}`;
  if (!forwards.has(key)) {
    const promise = model.forward(ids, { attentions: true, hiddenStates: true }).then((out) => ({
      T: ids.length,
      logits: out.logits,
      hidden: out.hiddenStates.map((t) => t.data),
      attn: out.attentions.map((t) => t.data),
    }));
    promise.catch(() => forwards.delete(key));
    forwards.set(key, promise);
    if (forwards.size > 8) forwards.delete(forwards.keys().next().value);
  }
  return forwards.get(key);
}

// ---------------------------------------------------------------- weights

const tableIndexes = new Map();

function tablesURL(model) {
  return new URL(`${model.info.name}/tables/`, modelsURL);
}

/** `tables/index.json` of the loaded model: where each weight is (`weights`), and the parity logits. */
export function tableIndex(model) {
  const url = new URL("index.json", tablesURL(model)).href;
  if (!tableIndexes.has(url)) {
    const promise = fetch(url, { cache: "no-cache" }).then((r) => {
      if (!r.ok) throw new Error(`The pipeline index is missing (HTTP ${r.status} for ${url}); the site was built without site_src/sitebuild/pipeline_hook.py.`);
      return r.json();
    });
    promise.catch(() => tableIndexes.delete(url));
    tableIndexes.set(url, promise);
  }
  return tableIndexes.get(url);
}

/** Bytes of one file listed in `tables/index.json`, checked against its sha256. */
export async function fetchChecked(model, entry) {
  const url = new URL(entry.path, tablesURL(model)).href;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  const bytes = await response.arrayBuffer();
  if (bytes.byteLength !== entry.bytes || (await sha256Hex(bytes)) !== entry.sha256) {
    throw new Error(`${entry.path} does not match its sha256 in tables/index.json: reload the page.`);
  }
  return bytes;
}

/**
 * Where the weights come from: the roles of `tables/index.json` and the packed variant they
 * name (its files are the model's own when the model runs that variant).
 * @returns {Promise<{variant: string, tensors: object, packed: import("../runtime/packed-weights.js").PackedVariant}>}
 */
async function weightSource(model) {
  const { weights } = await tableIndex(model);
  if (!weights?.variant) throw new Error(`The figures cannot read the weights: ${weights?.missing ?? "tables/index.json is from an older build; reload the page"}.`);
  const packed = await openPacked(new URL(`${model.info.name}/manifest.json`, modelsURL).href, weights.variant);
  return { variant: weights.variant, tensors: weights.tensors, packed };
}

/** Rows of a tensor entry of the layout (all of it without `rows`), as float32. */
function pick(view, entry, rows) {
  const cols = entry.shape[entry.shape.length - 1];
  const part = (first, count) => (entry.values ? Float32Array.from(entry.values.slice(first, first + count)) : view.range(entry.name, first, count));
  if (!rows) return part(0, entry.shape.reduce((a, b) => a * b, 1));
  const out = new Float32Array(rows.length * cols);
  rows.forEach((r, i) => out.set(part(r * cols, cols), i * cols));
  return out;
}

/**
 * Weights by role ("wpe", "blocks.0.attn.c_attn.weight", "ln_f.bias": the names of
 * `pipeline_hook.weight_names`), expanded to the float32 values the session computes with.
 * A linear layer's weight comes as the graph's MatMul reads it, (in, out).
 * @param {string[]} roles
 * @param {Object<string, number[]>} [rows] for some roles, just these rows: (rows.length, cols)
 * @returns {Promise<Object<string, Float32Array>>}
 */
export async function readWeights(model, roles, rows = {}) {
  const { tensors, packed } = await weightSource(model);
  const entries = roles.map((role) => {
    if (!tensors[role]) throw new Error(`tables/index.json has no weight ${role}.`);
    return [role, tensors[role]];
  });
  const names = entries.filter(([, e]) => !e.values).map(([, e]) => e.name);
  return packed.read(names, (view) => Object.fromEntries(entries.map(([role, e]) => [role, pick(view, e, rows[role])])));
}

/**
 * Call `fn(first, count, rows)` for every band of `band` rows of a matrix, `rows` (count, cols)
 * float32, without expanding the whole matrix at once (wte of GPT-2 small is 154 MB as float32).
 */
export async function scanRows(model, role, fn, band = 1024) {
  const { tensors, packed } = await weightSource(model);
  const entry = tensors[role];
  const [R] = entry.shape;
  await packed.read(entry.values ? [] : [entry.name], (view) => {
    for (let r = 0; r < R; r += band) {
      const n = Math.min(band, R - r);
      fn(r, n, pick(view, entry, Array.from({ length: n }, (_, i) => r + i)));
    }
  });
}

/**
 * How the figures' weights relate to the model's, as a phrase: "the model's own q4x weights
 * (…)", the same 4-bit files when the model was built from them (q8x), or, when the browser
 * runs another variant, which one and what reading q4x costs.
 */
export async function weightsPhrase(model) {
  const { variant, packed } = await weightSource(model);
  if (model.info.variant === variant) {
    return `the model's own ${variant} weights (expanded on this page from the 4-bit files it downloaded: the same float32 numbers its session computes with)`;
  }
  if (packed.sharedBy.includes(model.info.variant)) {
    return `the ${variant} weights, expanded on this page from the very 4-bit files this browser's ${escapeHtml(model.info.variant)} model was built from (that model computes with them rounded once more, to 8 bits, and with its inputs rounded to 8 bits at each matrix product, so the difference includes that rounding)`;
  }
  const mb = (packed.packed.reduce((sum, f) => sum + f.bytes, 0) / 1e6).toFixed(1);
  return `the ${variant} weights (this browser runs the ${escapeHtml(model.info.variant)} weights; the ${variant} files, ${mb} MB, are downloaded once for these figures, so the difference includes the two formats' rounding)`;
}

let shownBlock = null; // {key, promise}: the weights of the block drawn last, one block at a time

/** Block `layer`'s weights, keyed without the "blocks.{layer}." prefix ("ln_1.weight", ...). */
function blockWeights(model, layer) {
  const key = `${model.info.name}|${layer}`;
  if (shownBlock?.key !== key) {
    const prefix = `blocks.${layer}.`;
    const promise = weightSource(model)
      .then(({ tensors }) => readWeights(model, Object.keys(tensors).filter((role) => role.startsWith(prefix))))
      .then((w) => Object.fromEntries(Object.entries(w).map(([role, v]) => [role.slice(prefix.length), v])));
    promise.catch(() => {
      if (shownBlock?.promise === promise) shownBlock = null;
    });
    shownBlock = { key, promise };
  }
  return shownBlock.promise;
}

// ---------------------------------------------------------------- kernels (float32 data, float64 sums)

/** LayerNorm of each of the T rows of x (T, C). */
export function layerNorm(x, T, C, weight, bias, eps = 1e-5) {
  const out = new Float32Array(T * C);
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[t * C + c];
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[t * C + c] - mean) ** 2;
    variance /= C;
    const inv = 1 / Math.sqrt(variance + eps);
    for (let c = 0; c < C; c++) out[t * C + c] = (x[t * C + c] - mean) * inv * weight[c] + bias[c];
  }
  return out;
}

/** Per-row mean and standard deviation of x (T, C). */
export function rowStats(x, T, C) {
  const stats = [];
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[t * C + c];
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[t * C + c] - mean) ** 2;
    stats.push({ mean, std: Math.sqrt(variance / C) });
  }
  return stats;
}

/** x (T, in) @ W + b with W (in, out) as the graph's MatMul reads it, b (out,): (T, out). */
export function linear(x, T, W, b) {
  const out = b.length;
  const inDim = W.length / out;
  const y = new Float32Array(T * out);
  const sum = new Float64Array(out);
  for (let t = 0; t < T; t++) {
    sum.fill(0);
    for (let i = 0; i < inDim; i++) {
      const xi = x[t * inDim + i];
      const row = i * out;
      for (let o = 0; o < out; o++) sum[o] += xi * W[row + o];
    }
    for (let o = 0; o < out; o++) y[t * out + o] = sum[o] + b[o];
  }
  return y;
}

/** GELU, tanh approximation (as `new_gelu` in model_export/gpt2.py). */
export function gelu(x) {
  const out = new Float32Array(x.length);
  const k = Math.sqrt(2 / Math.PI);
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    out[i] = 0.5 * v * (1 + Math.tanh(k * (v + 0.044715 * v ** 3)));
  }
  return out;
}

/** Element-wise a + b. */
export function add(a, b) {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

/** Largest |a - b|. */
export function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Columns [c0, c1) of a (T, C) matrix, as nested arrays. */
export function slice2d(x, T, C, c0 = 0, c1 = C) {
  const rows = [];
  for (let t = 0; t < T; t++) rows.push(Array.from(x.subarray(t * C + c0, t * C + c1)));
  return rows;
}

/**
 * Everything block `layer` computes for the prompt, recomputed from the block's weights and
 * the model's own input to that block (hidden_states[layer]):
 *   x (T,C) in, ln1 (T,C), qkv (T,3C), q/k/v (T,C), per head: scores, scaled, masked,
 *   softmax (T,T) recomputed, probs (T,T) the model's own, out (T,hd) = probs @ v_h;
 *   merged (T,C), attnOut (T,C), mid (T,C), ln2 (T,C), fc (T,4C), act (T,4C), mlpOut (T,C),
 *   next (T,C) recomputed and nextModel (T,C) the model's hidden_states[layer + 1].
 */
export async function blockTrace(model, run, layer) {
  const { n_embd: C, n_head: H } = model.info.config;
  const hd = C / H;
  const T = run.T;
  const w = await blockWeights(model, layer);
  const x = run.hidden[layer];
  const ln1 = layerNorm(x, T, C, w["ln_1.weight"], w["ln_1.bias"]);
  const qkv = linear(ln1, T, w["attn.c_attn.weight"], w["attn.c_attn.bias"]); // (T, 3C)
  const part = (k) => {
    const out = new Float32Array(T * C);
    for (let t = 0; t < T; t++) out.set(qkv.subarray(t * 3 * C + k * C, t * 3 * C + (k + 1) * C), t * C);
    return out;
  };
  const q = part(0), k = part(1), v = part(2);
  const heads = [];
  const merged = new Float32Array(T * C);
  const probsAll = run.attn[layer];
  for (let h = 0; h < H; h++) {
    const scores = [], scaled = [], masked = [], softmax = [], probs = [], out = [];
    for (let i = 0; i < T; i++) {
      const s = [], sc = [], m = [], p = [];
      for (let j = 0; j < T; j++) {
        let dot = 0;
        for (let c = 0; c < hd; c++) dot += q[i * C + h * hd + c] * k[j * C + h * hd + c];
        s.push(dot);
        sc.push(dot / Math.sqrt(hd));
        m.push(j <= i ? dot / Math.sqrt(hd) : -Infinity);
        p.push(probsAll[(h * T + i) * T + j]);
      }
      const max = Math.max(...m);
      const e = m.map((z) => Math.exp(z - max));
      const sum = e.reduce((a, b) => a + b, 0);
      scores.push(s); scaled.push(sc); masked.push(m); softmax.push(e.map((z) => z / sum)); probs.push(p);
      const o = new Array(hd).fill(0);
      for (let j = 0; j < T; j++) for (let c = 0; c < hd; c++) o[c] += p[j] * v[j * C + h * hd + c];
      out.push(o);
      for (let c = 0; c < hd; c++) merged[i * C + h * hd + c] = o[c];
    }
    heads.push({ scores, scaled, masked, softmax, probs, out });
  }
  const attnOut = linear(merged, T, w["attn.c_proj.weight"], w["attn.c_proj.bias"]);
  const mid = add(x, attnOut);
  const ln2 = layerNorm(mid, T, C, w["ln_2.weight"], w["ln_2.bias"]);
  const fc = linear(ln2, T, w["mlp.c_fc.weight"], w["mlp.c_fc.bias"]); // (T, 4C)
  const act = gelu(fc);
  const mlpOut = linear(act, T, w["mlp.c_proj.weight"], w["mlp.c_proj.bias"]);
  const next = add(mid, mlpOut);
  return { T, C, H, hd, x, ln1, qkv, q, k, v, heads, merged, attnOut, mid, ln2, fc, act, mlpOut, next, nextModel: run.hidden[layer + 1] };
}

// ---------------------------------------------------------------- drawing

const LABEL_ROW = 12; // px: the height a row needs for its label (the figures' 10 px text)

/**
 * An SVG heatmap of `rows` (nested arrays), with the full-precision values in `data-values`.
 * Shade: darker = larger |value|; negative cells are hatched, so sign reads without colour.
 * @param {number[][]} rows
 * @param {{name: string, caption: string, rowLabels?: string[], colLabel?: string, cell?: number, numbers?: boolean}} options
 */
export function heatmap(rows, { name, caption, rowLabels = [], colLabel = "", cell = 0, numbers = false }) {
  const R = rows.length;
  const C = R ? rows[0].length : 0;
  const size = cell || (numbers ? 34 : Math.max(4, Math.min(14, Math.floor(560 / Math.max(C, 1)))));
  // Rows are never shorter than a row label's line, so labels cannot overlap (narrow cells stay narrow).
  const rowH = rowLabels.length ? Math.max(size, LABEL_ROW) : size;
  const left = rowLabels.length ? 86 : 4;
  const top = 14;
  let max = 0;
  for (const r of rows) for (const v of r) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  const id = `neg-${name.replace(/[^a-z0-9]/gi, "")}-${Math.random().toString(36).slice(2, 7)}`;
  let cells = "";
  rows.forEach((r, i) => {
    r.forEach((v, j) => {
      const x = left + j * size, y = top + i * rowH;
      const label = Number.isFinite(v) ? v.toPrecision(4) : (v < 0 ? "−∞" : String(v));
      if (!Number.isFinite(v)) {
        cells += `<rect x="${x}" y="${y}" width="${size}" height="${rowH}" fill="none" stroke="currentColor" stroke-opacity="0.25"><title>row ${i}, col ${j}: ${label}</title></rect>`;
        if (numbers) cells += `<text x="${x + size / 2}" y="${y + rowH / 2 + 3}" text-anchor="middle">−∞</text>`;
        return;
      }
      const a = max > 0 ? Math.abs(v) / max : 0;
      const fill = v < 0 ? `url(#${id})` : "currentColor";
      cells += `<rect x="${x}" y="${y}" width="${size}" height="${rowH}" fill="${fill}" fill-opacity="${(0.08 + 0.92 * a).toFixed(3)}"><title>row ${i}, col ${j}: ${label}</title></rect>`;
      if (numbers) {
        const text = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
        cells += `<text x="${x + size / 2}" y="${y + rowH / 2 + 3}" text-anchor="middle" paint-order="stroke" stroke="var(--tx-bg, #fff)" stroke-width="2.5">${text}</text>`;
      }
    });
  });
  const labels = rowLabels.map((l, i) => `<text x="${left - 4}" y="${top + i * rowH + rowH / 2 + 3}" text-anchor="end">${escapeHtml(l.slice(0, 14))}</text>`).join("");
  const width = left + C * size + 4, height = top + R * rowH + 4;
  const json = JSON.stringify(rows.map((r) => r.map((v) => (Number.isFinite(v) ? v : null))));
  return `<figure class="pl-fig" data-name="${escapeHtml(name)}" data-rows="${R}" data-cols="${C}" data-values='${json}'>
    <figcaption>${caption}</figcaption>
    <svg class="pl-heat" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img"
      aria-label="${escapeHtml(`${caption.replace(/<[^>]+>/g, "")}: ${R} rows by ${C} columns, largest magnitude ${max.toPrecision(3)}; hover a cell for its value`)}">
      <defs><pattern id="${id}" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
        <rect width="4" height="4" fill="currentColor" fill-opacity="0.25"/><line x1="0" y1="0" x2="0" y2="4" stroke="currentColor" stroke-width="2.5"/></pattern></defs>
      <text x="${left}" y="10">${escapeHtml(colLabel)}</text>${labels}${cells}
    </svg></figure>`;
}

/** Labels "0 Data", "1 ␣visual" ... for the rows of a figure. */
export function tokenLabels(model, ids) {
  return ids.map((id, i) => `${i} ${visible(model.tokenizer.tokenToString(id))}`);
}

/** <option>s 0..n-1 with a prefix. */
export function options(n, prefix, selected = 0) {
  return Array.from({ length: n }, (_, i) => `<option value="${i}"${i === selected ? " selected" : ""}>${prefix} ${i}</option>`).join("");
}

// ---------------------------------------------------------------- a stage widget

/** The selects a stage can ask for: label, the config entry that sizes it, option prefix. */
const PICKERS = {
  layer: { label: "Block", size: "n_layer", prefix: "block" },
  head: { label: "Head", size: "n_head", prefix: "head" },
};

/**
 * Base of the <tx-stage-*> widgets: the shared prompt box, optional controls, and an output
 * area redrawn by `draw(context)` whenever the prompt or a control changes. Subclasses set
 * `controls()` (markup) and `draw({model, ids, run, enc})` (returns HTML, may be async).
 * `data-state` is "ready" once the figure is drawn; `data-runs` counts the drawings.
 */
export class PipelineStage extends TxElement {
  /** Model-sized selects the widget shows, from PICKERS: e.g. ["layer", "head"]. */
  pickers() {
    return [];
  }

  /** Markup of the widget's own controls (selects, sliders): by default its pickers. */
  controls() {
    return this.pickers().map((name) => `<label>${PICKERS[name].label} <select name="${name}"></select></label>`).join("");
  }

  /** Fill each picker with one option per block or head of `model`, the first time only. */
  fillPickers(model) {
    for (const name of this.pickers()) {
      const select = this.$(`select[name=${name}]`);
      const { size, prefix } = PICKERS[name];
      if (!select.options.length) select.innerHTML = options(model.info.config[size], prefix);
    }
  }

  /** Whether the figure needs the forward pass (tokenization does not). */
  needsForward() {
    return true;
  }

  template() {
    return `${PIPELINE_CSS}${this.css ? `<style>${this.css}</style>` : ""}
      ${promptBar()}
      <div class="pl-row pl-controls">${this.controls()}</div>
      <p class="pl-note pl-trunc" hidden></p>
      <div class="pl-out" aria-live="polite"></div>`;
  }

  mount() {
    this.generation = 0;
    this.unbindPrompt = bindPrompt(this, () => this.refresh());
    this.shadowRoot.querySelectorAll(".pl-controls select, .pl-controls input").forEach((el) =>
      el.addEventListener(el.type === "range" || el.type === "number" ? "input" : "change", () => this.refresh()));
    this.bind?.();
    this.refresh();
  }

  /** Instant navigation removes the page's widgets: stop listening for prompt changes. */
  disconnectedCallback() {
    this.unbindPrompt?.();
    this.generation++;
  }

  /** Current value of a control, as a number. */
  num(selector) {
    return Number(this.$(selector).value);
  }

  async refresh() {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    try {
      this.showProgress("Loading the model…");
      const model = await loadPipelineModel((event) => {
        if (!stale() && this.dataset.state !== "ready") this.showProgress(event.message, event);
      });
      if (stale()) return;
      this.fillPickers(model);
      this.prepare?.(model);
      const enc = encodePrompt(model, this.$(".pl-prompt input").value);
      const note = this.$(".pl-trunc");
      note.textContent = truncationNote(enc);
      note.hidden = !enc.truncated;
      this.showProgress("Running the model…");
      const run = this.needsForward() ? await runForward(model, enc.ids) : null;
      if (stale()) return;
      const html = await this.draw({ model, ids: enc.ids, run, enc });
      if (stale()) return;
      this.$(".pl-out").innerHTML = html;
      this.afterDraw?.({ model, ids: enc.ids, run });
      this.dataset.runs = String(Number(this.dataset.runs || 0) + 1);
      this.dataset.variant = model.info.variant;
      this.showReady(`${model.info.name} · ${model.info.variant} · ${model.info.backend}`);
    } catch (err) {
      if (stale()) return;
      this.showError(err, { retry: () => this.refresh() });
    }
  }
}
