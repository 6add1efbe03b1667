/**
 * Choosing the next token from a vector of logits over the whole vocabulary:
 * greedy, temperature, top-k and top-p, with the textbook's rules
 * (see `demos/sampling.py` and the "From logits to the next token" page):
 *
 *   logits --(- max, / temperature)--> top-k --> top-p --> draw
 *
 * - Temperature 0 is greedy: the largest logit, the lowest id among ties.
 * - Top-k keeps every token whose scaled logit is at least the k-th largest (ties kept).
 * - Top-p keeps the smallest set of most likely tokens (among top-k's survivors) whose
 *   probability reaches p, plus any token tied with the last one kept.
 * - The draw walks the kept tokens in id order and returns the first whose running
 *   weight exceeds `u * total`, with `u = rng.random()`.
 *
 * Every sum runs in a fixed order (id order, or most-likely-first for top-p), so the
 * Python reference in `tests/browser/test_generate.py` follows the same steps and a
 * seed gives the same tokens there and here.
 *
 * All arithmetic is float64; the logits usually arrive as a Float32Array.
 * @module sampler
 */

/** Default settings: the model's own distribution, no filters. */
export const DEFAULT_SAMPLING = Object.freeze({ temperature: 1, topK: 0, topP: 1 });

/**
 * Check sampling settings and fill in defaults. Messages are meant for the reader.
 * @param {{temperature?: number, topK?: number, topP?: number}} options
 * @param {number} vocabSize
 * @returns {{temperature: number, topK: number, topP: number}}
 */
export function checkSampling(options = {}, vocabSize = Infinity) {
  const { temperature, topK, topP } = { ...DEFAULT_SAMPLING, ...options };
  if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0) {
    throw new RangeError(`Temperature must be a number ≥ 0 (0 means greedy), got ${temperature}.`);
  }
  if (!Number.isInteger(topK) || topK < 0) {
    throw new RangeError(`Top-k must be a whole number ≥ 0 (0 switches it off), got ${topK}.`);
  }
  if (topK > vocabSize) throw new RangeError(`Top-k can be at most the vocabulary size, ${vocabSize}; got ${topK}.`);
  if (typeof topP !== "number" || !(topP > 0 && topP <= 1)) {
    throw new RangeError(`Top-p must be a probability above 0 and at most 1 (1 switches it off), got ${topP}.`);
  }
  return { temperature, topK, topP };
}

/**
 * Index of the largest value; the lowest index among ties. With `offset` and `n`, of the
 * largest among values[offset .. offset + n), counted from `offset` (one row of a matrix).
 * @param {ArrayLike<number>} values
 * @param {number} [offset]
 * @param {number} [n]
 */
export function argmax(values, offset = 0, n = values.length - offset) {
  let best = 0;
  for (let i = 1; i < n; i++) if (values[offset + i] > values[offset + best]) best = i;
  return best;
}

/**
 * The indices of the k largest values, largest first; the lowest index first among ties.
 * One pass, keeping the best k in a small sorted array (k is small beside the vocabulary).
 * @param {ArrayLike<number>} values
 * @param {number} k
 * @returns {number[]}
 */
export function topIndices(values, k) {
  const best = [];
  const better = (a, b) => values[a] > values[b] || (values[a] === values[b] && a < b);
  for (let i = 0; i < values.length; i++) {
    if (best.length === k && !better(i, best[k - 1])) continue;
    let j = best.length < k ? best.length : k - 1;
    while (j > 0 && better(i, best[j - 1])) {
      best[j] = best[j - 1];
      j--;
    }
    best[j] = i;
  }
  return best;
}

/**
 * The k-th largest value (k = 1 is the maximum), by quickselect on a copy.
 * @param {Float64Array} values
 * @param {number} k 1 ≤ k ≤ values.length
 */
export function kthLargest(values, k) {
  const a = Float64Array.from(values);
  const target = a.length - k; // position of the answer in ascending order
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    // Median of three as the pivot guards against sorted input.
    const x = a[lo];
    const y = a[mid];
    const z = a[hi];
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return a[target];
  }
  return a[target];
}

/**
 * Smallest scaled logit that top-p keeps, among tokens with `scaled >= floor`: walk the
 * candidates from most to least likely, adding their weights, and stop before the
 * first token that would be added after the running mass has reached p·Z.
 *
 * Only the values are sorted (tied tokens have equal weights, so which of them comes
 * first does not change any sum), and only the head of the ranking: the values with
 * weight ≥ t·Z are exactly the first ones of the full ranking, so if they reach p·Z
 * the answer is the one a full sort gives; otherwise t shrinks and the head grows.
 */
function topPThreshold(scaled, weights, floor, topP) {
  let total = 0;
  for (let i = 0; i < scaled.length; i++) if (scaled[i] >= floor) total += weights[i];
  const bound = topP * total;
  for (const t of [1e-3, 1e-6, 0]) {
    const cut = t * total;
    const head = [];
    for (let i = 0; i < scaled.length; i++) if (scaled[i] >= floor && weights[i] >= cut) head.push(scaled[i]);
    const values = Float64Array.from(head).sort(); // ascending: most likely last
    let cumulative = 0;
    let last = floor;
    for (let j = values.length - 1; j >= 0; j--) {
      if (cumulative >= bound) return last;
      cumulative += Math.exp(values[j]);
      last = values[j];
    }
    if (cumulative >= bound || t === 0) return last;
  }
  return floor; // unreachable: t = 0 takes every candidate
}

/**
 * Draw the next token.
 * @param {Float32Array|Float64Array|number[]} logits one score per vocabulary entry
 * @param {{temperature: number, topK: number, topP: number}} options checked settings
 * @param {{random: () => number}} rng e.g. `new Rng(seed)`
 * @returns {{id: number, sampleProb: number, candidates: number}} the token, its
 *   probability under the filtered, tempered distribution it was drawn from, and how
 *   many tokens that distribution had
 */
export function sampleToken(logits, { temperature, topK, topP }, rng) {
  const V = logits.length;
  if (temperature === 0) return { id: argmax(logits), sampleProb: 1, candidates: 1 };
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
  const scaled = new Float64Array(V); // (V,) all <= 0, the top token at exactly 0
  const weights = new Float64Array(V); // (V,) exp(scaled): unnormalised probabilities
  for (let i = 0; i < V; i++) {
    scaled[i] = (logits[i] - max) / temperature;
    weights[i] = Math.exp(scaled[i]);
  }
  let floor = -Infinity; // tokens with scaled >= floor survive the filters
  if (topK > 0 && topK < V) floor = kthLargest(scaled, topK);
  if (topP < 1) floor = topPThreshold(scaled, weights, floor, topP);

  let total = 0;
  let candidates = 0;
  for (let i = 0; i < V; i++) {
    if (scaled[i] >= floor && weights[i] > 0) {
      total += weights[i];
      candidates++;
    }
  }
  const target = rng.random() * total;
  let running = 0;
  let last = -1;
  for (let i = 0; i < V; i++) {
    if (scaled[i] < floor || weights[i] === 0) continue;
    running += weights[i];
    last = i;
    if (running > target) return { id: i, sampleProb: weights[i] / total, candidates };
  }
  return { id: last, sampleProb: weights[last] / total, candidates }; // rounding left u·Z at the very end
}

/**
 * The model's own distribution (temperature 1, no filters) in summary: the probability
 * of any token and the n most likely tokens.
 * @param {Float32Array|number[]} logits
 * @param {number} n how many alternatives to list
 * @returns {{prob: (id: number) => number, top: {id: number, prob: number}[]}}
 *   `top` sorted by probability, highest first (lowest id first among ties)
 */
export function summarize(logits, n) {
  const V = logits.length;
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(logits[i] - max);
  const prob = (id) => Math.exp(logits[id] - max) / sum;
  return { prob, top: topIndices(logits, n).map((id) => ({ id, prob: prob(id) })) };
}
