/**
 * The weights the pipeline figures compute with, read from the model's own `q4x` files where
 * `tables/index.json` (written by `model-export tables`, model_export/tables.py) says each one is: the index
 * itself, files it lists (checked against their sha256), weights by role (expanded to
 * float32, whole or some rows), a row-band scan of large matrices, one block's weights, and
 * a phrase saying how these weights relate to the ones the browser's model runs.
 * @module widgets/pipeline/weights
 */
import { modelsURL } from "../../runtime/paths.js";
import { sha256Hex } from "../../runtime/download.js";
import { openPacked } from "../../runtime/packed-weights.js";
import { escapeHtml } from "../base.js";

const tableIndexes = new Map();

function tablesURL(model) {
  return new URL(`${model.info.name}/tables/`, modelsURL);
}

/** `tables/index.json` of the loaded model: where each weight is (`weights`), and the parity logits. */
export function tableIndex(model) {
  const url = new URL("index.json", tablesURL(model)).href;
  if (!tableIndexes.has(url)) {
    const promise = fetch(url, { cache: "no-cache" }).then((r) => {
      if (!r.ok)
        throw new Error(
          `The pipeline index is missing (HTTP ${r.status} for ${url}); this build of the model has no tables/ folder, which “model-export tables” writes.`,
        );
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
 * @returns {Promise<{variant: string, tensors: object, packed: import("../../runtime/packed-weights.js").PackedVariant}>}
 */
async function weightSource(model) {
  const { weights } = await tableIndex(model);
  if (!weights?.variant)
    throw new Error(`The figures cannot read the weights: ${weights?.missing ?? "tables/index.json names no packed variant; reload the page"}.`);
  const packed = await openPacked(new URL(`${model.info.name}/manifest.json`, modelsURL).href, weights.variant);
  return { variant: weights.variant, tensors: weights.tensors, packed };
}

/** Rows of a tensor entry of the layout (all of it without `rows`), as float32. */
function pick(view, entry, rows) {
  const cols = entry.shape[entry.shape.length - 1];
  const part = (first, count) => (entry.values ? Float32Array.from(entry.values.slice(first, first + count)) : view.range(entry.name, first, count));
  if (!rows)
    return part(
      0,
      entry.shape.reduce((a, b) => a * b, 1),
    );
  const out = new Float32Array(rows.length * cols);
  rows.forEach((r, i) => out.set(part(r * cols, cols), i * cols));
  return out;
}

/**
 * Weights by role ("wpe", "blocks.0.attn.c_attn.weight", "ln_f.bias": the names of
 * `model_export.tables.weight_names`), expanded to the float32 values the session computes with.
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
      fn(
        r,
        n,
        pick(
          view,
          entry,
          Array.from({ length: n }, (_, i) => r + i),
        ),
      );
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

/**
 * Block `layer`'s weights, keyed without the "blocks.{layer}." prefix ("ln_1.weight", ...); only
 * the block drawn last is kept.
 * @returns {Promise<Object<string, Float32Array>>}
 */
export function blockWeights(model, layer) {
  const key = `${model.info.name}|${layer}`;
  if (shownBlock?.key !== key) {
    const prefix = `blocks.${layer}.`;
    const promise = weightSource(model)
      .then(({ tensors }) =>
        readWeights(
          model,
          Object.keys(tensors).filter((role) => role.startsWith(prefix)),
        ),
      )
      .then((w) => Object.fromEntries(Object.entries(w).map(([role, v]) => [role.slice(prefix.length), v])));
    promise.catch(() => {
      if (shownBlock?.promise === promise) shownBlock = null;
    });
    shownBlock = { key, promise };
  }
  return shownBlock.promise;
}
