/**
 * The probe inputs of an inspect graph (model_export/probes.py), one owner for their names,
 * shapes and neutral values. Shapes are without the batch axis (the runtime runs a batch of one):
 *
 *   head_scale   (L, nh, T)      z' = z * head_scale + head_add, per head and position
 *   head_add     (L, nh, T, hd)
 *   resid_scale  (L, T)          x' = x * resid_scale + resid_add, the stream entering block l
 *   resid_add    (L, T, C)
 *   lens_hidden  (N, C)          rows read through ln_f and the unembedding → lens_logits (N, V)
 *   unembed_rows (M, C)          rows read through (ln_f.weight ⊙ ·) and the unembedding → unembed_logits (M, V)
 *   head_rows    (L, K, C)       merged-head rows through each layer's c_proj → head_writes.{l} (K, C)
 *
 * Left out, a probe is neutral: scales of 1, adds of 0, and no rows at all (N, M, K = 0) for the
 * row probes, so that a run asks nothing of the unembedding beyond the logits (on WebGPU, a
 * one-row unembedding costs as much as the whole forward pass).
 * @module probe-feeds
 */

/** Shape of each probe for a model config and prompt length T; null marks the free row count. */
export function probeShapes(config, T) {
  const { n_layer: L, n_head: nh, n_embd: C } = config;
  return {
    head_scale: [L, nh, T],
    head_add: [L, nh, T, C / nh],
    resid_scale: [L, T],
    resid_add: [L, T, C],
    lens_hidden: [null, C],
    unembed_rows: [null, C],
    head_rows: [L, null, C],
  };
}

const NEUTRAL_ONE = new Set(["head_scale", "resid_scale"]);

/** The number of numbers in `shape` with the free axis set to `rows`. */
const size = (shape, rows) => shape.reduce((n, d) => n * (d ?? rows), 1);

/**
 * Every probe input of the inspect graph for a prompt of T tokens.
 * @param {object} config the manifest's config (n_layer, n_head, n_embd)
 * @param {number} T prompt length
 * @param {Object<string, Float32Array>} probes probe name -> values (row-major in its shape)
 * @param {(data: Float32Array, dims: number[]) => any} makeTensor builds a feed (e.g. an ort.Tensor)
 * @returns {Object<string, any>} feeds by input name
 * @throws {Error} for an unknown probe or values that do not fill its shape
 */
export function probeFeeds(config, T, probes, makeTensor) {
  const shapes = probeShapes(config, T);
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
      if (NEUTRAL_ONE.has(name)) data.fill(1);
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
