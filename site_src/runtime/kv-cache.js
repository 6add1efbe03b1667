/**
 * The key-value cache held by the worker between passes, for a graph that returns the new
 * tokens' keys and values on their own (`new.{i}.key/value`, model_export/export.py).
 *
 * Fed back as `present` → `past`, the cache crosses the WebAssembly boundary twice a step:
 * every cached position is copied into onnxruntime's memory, and every one (old and new) is
 * copied back out into fresh arrays. Held here, each step copies out one position per layer,
 * written into buffers that grow `KV_GROWTH` positions at a time and are fed whole; the free
 * positions at the end are hidden by the attention mask, as padding is, so the graph computes
 * what it computes on the exact cache. Cutting the cache back (speculative decoding) only
 * moves its end.
 *
 *   const cache = new HeldCache(config);
 *   const { past, mask } = cache.inputs(ids.length);   // feeds: past_key_values.*, attention_mask
 *   ...run, fetching new.{i}.key/value...
 *   cache.append(newArrays, ids.length);
 * @module kv-cache
 */

/** Positions the buffers grow by when a pass does not fit. */
export const KV_GROWTH = 64;

export class HeldCache {
  /**
   * @param {{n_layer: number, n_head: number, n_embd: number, n_positions: number}} config
   * @param {number} [growth] positions added at a time
   */
  constructor({ n_layer, n_head, n_embd, n_positions }, growth = KV_GROWTH) {
    this.heads = n_head;
    this.headDim = n_embd / n_head;
    this.limit = n_positions;
    this.growth = growth;
    this.length = 0; // cached positions
    this.capacity = 0; // positions each buffer holds
    this.buffers = Array.from({ length: 2 * n_layer }, () => new Float32Array(0)); // key, value per layer: (1, nh, capacity, hd)
  }

  /**
   * What a pass of `count` new tokens is fed: each buffer whole, as (1, nh, capacity, hd), and the
   * attention mask over the capacity then the new tokens (1 for a cached or new token, 0 for a
   * free position). Do not append before the pass has read them.
   * @param {number} count new tokens in the pass
   * @returns {{past: {data: Float32Array, dims: number[]}[], mask: BigInt64Array}}
   */
  inputs(count) {
    const dims = [1, this.heads, this.capacity, this.headDim];
    const mask = new BigInt64Array(this.capacity + count).fill(1n); // (capacity + T)
    mask.fill(0n, this.length, this.capacity);
    return { past: this.buffers.map((data) => ({ data, dims })), mask };
  }

  /**
   * Write a pass's new keys and values after the cached positions.
   * @param {Float32Array[]} arrays new.{i}.key/value in graph order, each (1, nh, count, hd)
   * @param {number} count new tokens in that pass
   */
  append(arrays, count) {
    if (arrays.length !== this.buffers.length) throw new Error(`Expected ${this.buffers.length} new key/value arrays, got ${arrays.length}.`);
    const end = this.length + count;
    if (end > this.limit) throw new Error(`The cache holds at most ${this.limit} positions; ${end} asked.`);
    if (end > this.capacity) this.grow(Math.min(this.limit, Math.ceil(end / this.growth) * this.growth));
    const { heads, headDim: hd, capacity, length } = this;
    arrays.forEach((fresh, k) => {
      const buffer = this.buffers[k];
      for (let h = 0; h < heads; h++) buffer.set(fresh.subarray(h * count * hd, (h + 1) * count * hd), (h * capacity + length) * hd);
    });
    this.length = end;
  }

  /**
   * Forget the positions from `length` on (their slots become free).
   * @param {number} length positions to keep
   */
  crop(length) {
    if (!Number.isInteger(length) || length < 0) throw new Error(`Cannot cut the cache to ${length} positions.`);
    this.length = Math.min(this.length, length);
  }

  /** Move every buffer to a `capacity` of positions, keeping the cached ones. */
  grow(capacity) {
    const { heads, headDim: hd, length } = this;
    this.buffers = this.buffers.map((old) => {
      const buffer = new Float32Array(heads * capacity * hd); // (1, nh, capacity, hd)
      for (let h = 0; h < heads; h++) buffer.set(old.subarray(h * this.capacity * hd, (h * this.capacity + length) * hd), h * capacity * hd);
      return buffer;
    });
    this.capacity = capacity;
  }
}

/**
 * How `count` new tokens are split into passes of at most `chunk` tokens (0: one pass), as
 * `[from, to)` ranges in order. The last pass holds at least the `keep` positions whose logits
 * are wanted, so a short last chunk joins the one before it.
 * @param {number} count tokens to run (≥ 1)
 * @param {number} keep positions whose logits the caller reads (≤ count)
 * @param {number} chunk most tokens a pass, 0 for no limit
 * @returns {number[][]}
 */
export function passesOf(count, keep, chunk) {
  if (!chunk || count <= chunk) return [[0, count]];
  const parts = [];
  for (let from = 0; from < count; from += chunk) parts.push([from, Math.min(count, from + chunk)]);
  const last = parts[parts.length - 1];
  if (last[1] - last[0] < keep) parts.splice(-2, 2, [parts[parts.length - 2][0], count]);
  return parts;
}
