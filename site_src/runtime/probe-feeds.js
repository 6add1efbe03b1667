/**
 * The probe inputs of an inspect graph, fed by the contract the manifest carries (`probes`,
 * written by model_export/probes.py, their one owner): each probe's shape after the batch axis,
 * in the model's sizes and the prompt's length, and the value that changes nothing. Today:
 *
 *   head_scale   (L, nh, T)      z' = z * head_scale + head_add, per head and position
 *   head_add     (L, nh, T, hd)
 *   resid_scale  (L, T)          x' = x * resid_scale + resid_add, the stream entering block l
 *   resid_add    (L, T, C)
 *   lens_hidden  (N, C)          rows read through ln_f and the unembedding → lens_logits (N, V)
 *   unembed_rows (M, C)          rows read through (ln_f.weight ⊙ ·) and the unembedding → unembed_logits (M, V)
 *   head_rows    (L, K, C)       merged-head rows through each layer's c_proj → head_writes.{l} (K, C)
 *
 * Left out, a probe is neutral: its neutral value, and no rows at all (N, M, K = 0) for the row
 * probes, so that a run asks nothing of the unembedding beyond the logits (on WebGPU, a one-row
 * unembedding costs as much as the whole forward pass).
 * @module probe-feeds
 */

/**
 * Shape of each probe for a model config and prompt length T; null marks the free row count.
 * @param {Object<string, {shape: string[], neutral: number}>} contract the manifest's `probes`
 * @param {{n_layer: number, n_head: number, n_embd: number}} config
 * @param {number} T
 */
export function probeShapes(contract, config, T) {
  const { n_layer: L, n_head: nh, n_embd: C } = config;
  const sizes = { layers: L, heads: nh, head_dim: C / nh, width: C, sequence: T };
  return Object.fromEntries(Object.entries(contract).map(([name, { shape }]) => [name, shape.map((d) => sizes[d] ?? null)]));
}

/** The number of numbers in `shape` with the free axis set to `rows`. */
const size = (shape, rows) => shape.reduce((n, d) => n * (d ?? rows), 1);

/**
 * Every probe input of the inspect graph for a prompt of T tokens.
 * @param {Object<string, {shape: string[], neutral: number}>} contract the manifest's `probes`
 * @param {object} config the manifest's config (n_layer, n_head, n_embd)
 * @param {number} T prompt length
 * @param {Object<string, Float32Array>} probes probe name -> values (row-major in its shape)
 * @param {(data: Float32Array, dims: number[]) => any} makeTensor builds a feed (e.g. an ort.Tensor)
 * @returns {Object<string, any>} feeds by input name
 * @throws {Error} for an unknown probe or values that do not fill its shape
 */
export function probeFeeds(contract, config, T, probes, makeTensor) {
  const shapes = probeShapes(contract, config, T);
  const unknown = Object.keys(probes).find((name) => !Object.hasOwn(shapes, name));
  if (unknown) throw new Error(`There is no probe “${unknown}”; the probes are ${Object.keys(shapes).join(", ")}.`);
  const feeds = {};
  for (const [name, shape] of Object.entries(shapes)) {
    let data = probes[name];
    const rowSize = size(shape, 1);
    const free = shape.includes(null);
    let rows = free ? 0 : 1;
    if (data === undefined) {
      data = new Float32Array(rows * rowSize);
      data.fill(contract[name].neutral);
    } else {
      if (!(data instanceof Float32Array)) throw new Error(`The probe ${name} must be a Float32Array.`);
      rows = free ? data.length / rowSize : 1;
      if ((!free && data.length !== rowSize) || !Number.isInteger(rows) || rows < 1) {
        const dims = shape.map((d) => d ?? "rows").join(" × ");
        throw new Error(`The probe ${name} must hold ${dims} numbers for this ${T}-token prompt, not ${data.length}.`);
      }
    }
    feeds[name] = makeTensor(
      data,
      shape.map((d) => d ?? rows),
    );
  }
  return feeds;
}
