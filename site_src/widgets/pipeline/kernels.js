/**
 * The float32 kernels the pipeline figures recompute a block with: LayerNorm, linear layers,
 * GELU, element-wise sums, and one whole block (`traceBlock`). Data are Float32Array in
 * row-major order, shapes (rows, cols) as in the comments; sums run in float64 (JavaScript
 * numbers) and each kernel's output is rounded to float32 once, when it is stored.
 *
 * Nothing here touches the DOM, the network or the model: the module runs under plain
 * `node` (tests/js/kernels.test.js checks it against NumPy, fixtures/pipeline_kernels.json).
 * @module widgets/pipeline/kernels
 */

/** Mean and (population) variance of row t of x (T, C), in float64. */
function moments(x, t, C) {
  let mean = 0;
  for (let c = 0; c < C; c++) mean += x[t * C + c];
  mean /= C;
  let variance = 0;
  for (let c = 0; c < C; c++) variance += (x[t * C + c] - mean) ** 2;
  return { mean, variance: variance / C };
}

/**
 * LayerNorm of each of the T rows of x (T, C): (x - mean) / sqrt(var + eps) * weight + bias,
 * with the population variance, as torch.nn.functional.layer_norm.
 * @param {Float32Array} x (T, C)
 * @param {number} T
 * @param {number} C
 * @param {Float32Array} weight (C,)
 * @param {Float32Array} bias (C,)
 * @param {number} eps the model's `layer_norm_epsilon` (its manifest's config)
 * @returns {Float32Array} (T, C)
 */
export function layerNorm(x, T, C, weight, bias, eps) {
  const out = new Float32Array(T * C);
  for (let t = 0; t < T; t++) {
    const { mean, variance } = moments(x, t, C);
    const inv = 1 / Math.sqrt(variance + eps);
    for (let c = 0; c < C; c++) out[t * C + c] = (x[t * C + c] - mean) * inv * weight[c] + bias[c];
  }
  return out;
}

/**
 * Per-row mean and (population) standard deviation of x (T, C), in float64.
 * @param {Float32Array} x (T, C)
 * @returns {{mean: number, std: number}[]} T entries
 */
export function rowStats(x, T, C) {
  const stats = [];
  for (let t = 0; t < T; t++) {
    const { mean, variance } = moments(x, t, C);
    stats.push({ mean, std: Math.sqrt(variance) });
  }
  return stats;
}

/**
 * x (T, in) @ W + b, with W (in, out) as the graph's MatMul reads it and b (out,).
 * @param {Float32Array} x (T, in)
 * @param {number} T
 * @param {Float32Array} W (in, out)
 * @param {Float32Array} b (out,): its length gives `out`
 * @returns {Float32Array} (T, out)
 */
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

/**
 * GELU, tanh approximation (as `new_gelu` in model_export/gpt2.py and GPT-2's own code):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), element-wise.
 * @param {Float32Array} x any shape
 * @returns {Float32Array} same shape
 */
export function gelu(x) {
  const out = new Float32Array(x.length);
  const k = Math.sqrt(2 / Math.PI);
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    out[i] = 0.5 * v * (1 + Math.tanh(k * (v + 0.044715 * v ** 3)));
  }
  return out;
}

/**
 * Element-wise a + b (the residual connections).
 * @param {Float32Array} a any shape
 * @param {Float32Array} b same shape
 * @returns {Float32Array} same shape
 */
export function add(a, b) {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

/**
 * Largest |a - b| over all elements (0 for empty arrays).
 * @param {ArrayLike<number>} a
 * @param {ArrayLike<number>} b same length
 * @returns {number}
 */
export function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/**
 * Columns [c0, c1) of a (T, C) matrix, as nested arrays (what the heatmaps draw).
 * @param {Float32Array} x (T, C)
 * @returns {number[][]} (T, c1 - c0)
 */
export function slice2d(x, T, C, c0 = 0, c1 = C) {
  const rows = [];
  for (let t = 0; t < T; t++) rows.push(Array.from(x.subarray(t * C + c0, t * C + c1)));
  return rows;
}

/**
 * Everything one GPT-2 block computes, from its input x and its weights; the attention
 * output uses the given probabilities (the model's own), and the recomputed softmax is
 * returned next to them for comparison.
 *
 *   x (T,C) in, ln1 (T,C), qkv (T,3C), q/k/v (T,C), per head: scores, scaled, masked,
 *   softmax (T,T) recomputed, probs (T,T) the given ones, out (T,hd) = probs @ v_h;
 *   merged (T,C), attnOut (T,C), mid (T,C), ln2 (T,C), fc (T,4C), act (T,4C), mlpOut (T,C),
 *   next (T,C) the block's output.
 *
 * The per-head tables are nested float64 arrays; every other tensor is a Float32Array.
 * @param {Float32Array} x (T, C): the block's input (hidden_states[layer])
 * @param {Object<string, Float32Array>} w the block's weights by role without the
 *   "blocks.{layer}." prefix: "ln_1.weight", "attn.c_attn.weight" (C, 3C), ...
 * @param {Float32Array} probsAll (H, T, T): the attention probabilities
 * @param {{T: number, C: number, H: number, eps: number}} dims (eps: the LayerNorms' epsilon)
 */
export function traceBlock(x, w, probsAll, { T, C, H, eps }) {
  const hd = C / H;
  const ln1 = layerNorm(x, T, C, w["ln_1.weight"], w["ln_1.bias"], eps);
  const qkv = linear(ln1, T, w["attn.c_attn.weight"], w["attn.c_attn.bias"]); // (T, 3C)
  const part = (k) => {
    const out = new Float32Array(T * C);
    for (let t = 0; t < T; t++) out.set(qkv.subarray(t * 3 * C + k * C, t * 3 * C + (k + 1) * C), t * C);
    return out;
  };
  const [q, k, v] = [part(0), part(1), part(2)];
  const heads = [];
  const merged = new Float32Array(T * C);
  for (let h = 0; h < H; h++) {
    const [scores, scaled, masked, softmax, probs, out] = [[], [], [], [], [], []];
    for (let i = 0; i < T; i++) {
      const [s, sc, m, p] = [[], [], [], []];
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
      scores.push(s);
      scaled.push(sc);
      masked.push(m);
      softmax.push(e.map((z) => z / sum));
      probs.push(p);
      const o = new Array(hd).fill(0);
      for (let j = 0; j < T; j++) for (let c = 0; c < hd; c++) o[c] += p[j] * v[j * C + h * hd + c];
      out.push(o);
      for (let c = 0; c < hd; c++) merged[i * C + h * hd + c] = o[c];
    }
    heads.push({ scores, scaled, masked, softmax, probs, out });
  }
  const attnOut = linear(merged, T, w["attn.c_proj.weight"], w["attn.c_proj.bias"]);
  const mid = add(x, attnOut);
  const ln2 = layerNorm(mid, T, C, w["ln_2.weight"], w["ln_2.bias"], eps);
  const fc = linear(ln2, T, w["mlp.c_fc.weight"], w["mlp.c_fc.bias"]); // (T, 4C)
  const act = gelu(fc);
  const mlpOut = linear(act, T, w["mlp.c_proj.weight"], w["mlp.c_proj.bias"]);
  const next = add(mid, mlpOut);
  return { T, C, H, hd, x, ln1, qkv, q, k, v, heads, merged, attnOut, mid, ln2, fc, act, mlpOut, next };
}
