/**
 * Speculative decoding's rule, apart from the models: how a round of the draft's proposals is
 * checked against the target's distributions (Leviathan, Kalman and Matias, 2023; Chen et al.,
 * 2023). `model-worker.js` runs the two models and their caches; this module decides.
 *
 *   for await (const round of speculativeRounds(prompt, checked, { draft, target, rng })) {
 *     // round.kept of round.proposals were kept, then round.last written by the target
 *   }
 *
 * A proposal `x` drawn from the draft's `q` is kept with probability min(1, p(x) / q(x)); at the
 * first refusal the round's last token is drawn from max(0, p − q), normalised, instead; when
 * every proposal is kept it is drawn from the target's next distribution. The tokens written
 * are then distributed exactly as the target's own samples. At temperature 0 both
 * distributions put all their mass on their argmax, and the rule keeps the proposals that equal
 * the target's greedy token and adds the target's greedy token: the target's greedy output.
 *
 * `model_export/speculative.py` is the reference in CPython; the browser test compares the two
 * round by round on the served graphs.
 * @module speculative
 */
import { argmax } from "./sampler.js";

/** The limits of speculative decoding in the browser. */
export const SPECULATIVE_LIMITS = Object.freeze({
  minGamma: 1,
  /** proposals per round: past about 8 the draft's later guesses are almost never kept */
  maxGamma: 8,
  maxNewTokens: 64,
  maxTemperature: 2,
});

/** An input error naming the option and its range (the widget marks the field). */
function rangeError(message, field) {
  const err = new RangeError(message);
  err.field = field;
  return err;
}

/**
 * The options of a speculative run, checked, with their defaults.
 * @param {{gamma?: number, maxNewTokens?: number, temperature?: number, seed?: number}} options
 *   defaults: 4 proposals a round, 32 new tokens, temperature 0 (greedy)
 * @param {{promptTokens: number, contextLimit: number}} context
 * @returns {{gamma: number, maxNewTokens: number, temperature: number}}
 * @throws {RangeError} with `field` naming the option ("context" when the prompt leaves no room)
 */
export function checkSpeculativeOptions(options = {}, { promptTokens, contextLimit }) {
  const { minGamma, maxGamma, maxNewTokens: maxNew, maxTemperature } = SPECULATIVE_LIMITS;
  const gamma = options.gamma ?? 4;
  const maxNewTokens = options.maxNewTokens ?? 32;
  const temperature = options.temperature ?? 0;
  if (!Number.isInteger(gamma) || gamma < minGamma || gamma > maxGamma) {
    throw rangeError(`The draft proposes ${minGamma} to ${maxGamma} tokens a round; got ${gamma}.`, "gamma");
  }
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 || maxNewTokens > maxNew) {
    throw rangeError(`Max new tokens must be a whole number from 1 to ${maxNew}; got ${maxNewTokens}.`, "maxNewTokens");
  }
  if (typeof temperature !== "number" || !(temperature >= 0 && temperature <= maxTemperature)) {
    throw rangeError(`The temperature must be from 0 (greedy) to ${maxTemperature}; got ${temperature}.`, "temperature");
  }
  // the target checks a round's proposals in one pass, so a round needs room for gamma + 1 positions
  if (promptTokens + maxNewTokens > contextLimit) {
    throw rangeError(`The prompt is ${promptTokens} tokens and ${maxNewTokens} new ones do not fit this model's ${contextLimit} positions.`, "context");
  }
  return { gamma, maxNewTokens, temperature };
}

/**
 * The distribution a token is drawn from: softmax(logits / temperature) in float64, or at
 * temperature 0 all the mass on the first argmax.
 * @param {Float32Array} logits (V,)
 * @param {number} temperature
 * @returns {Float64Array} (V,)
 */
export function distribution(logits, temperature) {
  const p = new Float64Array(logits.length);
  if (temperature === 0) {
    p[argmax(logits)] = 1;
    return p;
  }
  let max = -Infinity;
  for (const z of logits) if (z > max) max = z;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += p[i] = Math.exp((logits[i] - max) / temperature);
  for (let i = 0; i < p.length; i++) p[i] /= sum;
  return p;
}

/**
 * A token from `weights` (not necessarily normalised): its argmax without a generator, else
 * the first index whose running sum passes a uniform draw times the total.
 * @param {Float64Array} weights
 * @param {{random(): number}|null} rng
 * @returns {number}
 */
export function draw(weights, rng) {
  if (!rng) return argmax(weights);
  let total = 0;
  for (const w of weights) total += w;
  const u = rng.random() * total;
  let sum = 0;
  let last = 0;
  for (let i = 0; i < weights.length; i++) {
    if (weights[i] <= 0) continue;
    sum += weights[i];
    last = i;
    if (u < sum) return i;
  }
  return last; // rounding left u at the very top
}

/**
 * Check a round's proposals against the target.
 * @param {number[]} proposals the draft's tokens, k of them
 * @param {Float64Array[]} q the draft's distribution each was drawn from (k)
 * @param {Float64Array[]} p the target's distribution at each proposal's position, and one more (k + 1)
 * @param {{random(): number}|null} rng null at temperature 0
 * @returns {{kept: number, last: number, fromResidual: boolean}} how many proposals were kept, the
 *   token the target adds, and whether it came from the residual max(0, p − q) (a refusal)
 */
export function verify(proposals, q, p, rng) {
  let kept = 0;
  for (const [i, token] of proposals.entries()) {
    const ratio = p[i][token] / q[i][token];
    if (!(ratio >= 1 || (rng !== null && rng.random() < ratio))) break;
    kept++;
  }
  if (kept === proposals.length) return { kept, last: draw(p[kept], rng), fromResidual: false };
  const residual = p[kept].map((pi, i) => Math.max(0, pi - q[kept][i]));
  return { kept, last: draw(residual, rng), fromResidual: true };
}

/**
 * Speculative decoding, round by round. The models are functions of the text so far (prompt
 * and written tokens): `draft(tokens)` gives the logits of the next token, `target(tokens, n)`
 * the logits of the last `n` positions. Each round the draft proposes k = min(gamma, tokens
 * left − 1) tokens one by one, the target scores them in one call, and `verify` keeps a prefix
 * and adds one token: between 1 and k + 1 tokens for one call of the target.
 * @param {number[]} prompt token ids
 * @param {{gamma: number, maxNewTokens: number, temperature: number}} options (checkSpeculativeOptions)
 * @param {{draft: (tokens: number[]) => Promise<Float32Array>,
 *   target: (tokens: number[], n: number) => Promise<Float32Array[]>, rng: {random(): number}|null}} models
 *   `rng` is needed at a temperature above 0 and ignored at 0
 * @yields {{index: number, proposals: number[], draftProbs: number[], targetProbs: number[], kept: number,
 *   last: number, lastProb: number, fromResidual: boolean, tokens: number[]}} each round; `tokens`:
 *   every token written so far (the caller cuts its caches back to them)
 */
export async function* speculativeRounds(prompt, { gamma, maxNewTokens, temperature }, { draft, target, rng }) {
  const random = temperature > 0 ? rng : null;
  const out = [...prompt];
  for (let index = 0; out.length - prompt.length < maxNewTokens; index++) {
    const k = Math.min(gamma, maxNewTokens - (out.length - prompt.length) - 1); // the round adds up to k + 1 tokens
    const proposals = [];
    const q = [];
    for (let i = 0; i < k; i++) {
      q.push(distribution(await draft([...out, ...proposals]), temperature)); // the draft, one token at a time
      proposals.push(draw(q[i], random));
    }
    const scores = await target([...out, ...proposals], k + 1); // one pass checks every proposal
    const p = scores.map((logits) => distribution(logits, temperature));
    const { kept, last, fromResidual } = verify(proposals, q, p, random);
    out.push(...proposals.slice(0, kept), last);
    yield {
      index,
      proposals,
      draftProbs: proposals.map((token, i) => q[i][token]),
      targetProbs: proposals.map((token, i) => p[i][token]),
      kept,
      last,
      lastProb: p[kept][last],
      fromResidual,
      tokens: out.slice(prompt.length),
    };
  }
}
