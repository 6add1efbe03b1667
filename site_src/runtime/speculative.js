/**
 * Speculative decoding's rule, apart from the models: how a round of the draft's proposals is
 * checked against the target's distributions (Leviathan, Kalman and Matias, 2023; Chen et al.,
 * 2023). `model-worker.js` runs the two models and their caches; this module decides.
 *
 *   for await (const round of speculativeRounds(prompt, checked, { draft, target, rng })) {
 *     // round.kept of round.proposals were kept, then round.last written by the target
 *   }
 *
 * Each proposal costs a softmax over the vocabulary (the draft's, to draw from); the target's
 * distributions are worked out only as far as the check goes (the first refusal ends it), and
 * at temperature 0 a distribution is just its argmax.
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
 * A next-token distribution: softmax(logits / temperature), kept as the weights
 * exp((z − max) / temperature) and their total (one pass over the vocabulary, no second one to
 * divide), or at temperature 0 all the mass on the first argmax (no array at all).
 */
export class Distribution {
  /**
   * @param {Float64Array|null} weights unnormalised probabilities, or null for all mass on `top`
   * @param {number} total the weights' sum
   * @param {number} top the token that holds all the mass when `weights` is null
   */
  constructor(weights, total, top) {
    this.weights = weights;
    this.total = total;
    this.top = top;
  }

  /**
   * @param {Float32Array} logits (V,)
   * @param {number} temperature 0 (greedy) or more
   */
  static of(logits, temperature) {
    if (temperature === 0) return new Distribution(null, 1, argmax(logits));
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
    const weights = new Float64Array(logits.length);
    let total = 0;
    for (let i = 0; i < logits.length; i++) total += weights[i] = Math.exp((logits[i] - max) / temperature);
    return new Distribution(weights, total, -1);
  }

  /** The probability of token `i`. */
  prob(i) {
    return this.weights ? this.weights[i] / this.total : Number(i === this.top);
  }

  /**
   * A token: the first index whose running sum of weights passes a uniform draw times the
   * total; the argmax without a generator (temperature 0).
   * @param {{random(): number}|null} rng
   */
  draw(rng) {
    if (!this.weights) return this.top;
    if (!rng) return argmax(this.weights);
    const u = rng.random() * this.total;
    let sum = 0;
    let last = 0;
    for (let i = 0; i < this.weights.length; i++) {
      if (this.weights[i] <= 0) continue;
      sum += this.weights[i];
      last = i;
      if (u < sum) return i;
    }
    return last; // rounding left u at the very top
  }

  /**
   * max(0, this − other), the distribution a refused proposal is replaced from. At temperature
   * 0 a proposal is refused only when it is not this distribution's top, so the residual is
   * this distribution itself.
   * @param {Distribution} other the draft's distribution at the same position
   */
  minus(other) {
    if (!this.weights) return this;
    const weights = new Float64Array(this.weights.length);
    let total = 0;
    for (let i = 0; i < weights.length; i++) {
      const d = this.weights[i] / this.total - other.weights[i] / other.total;
      if (d > 0) total += weights[i] = d;
    }
    return new Distribution(weights, total, -1);
  }
}

/**
 * Check a round's proposals against the target.
 * @param {number[]} proposals the draft's tokens, k of them
 * @param {Distribution[]} q the draft's distribution each was drawn from (k)
 * @param {(i: number) => Distribution} p the target's distribution at proposal i's position (i = k:
 *   the one after them), asked for only as far as the check goes
 * @param {{random(): number}|null} rng null at temperature 0
 * @returns {{kept: number, last: number, fromResidual: boolean}} how many proposals were kept, the
 *   token the target adds, and whether it came from the residual max(0, p − q) (a refusal)
 */
export function verify(proposals, q, p, rng) {
  let kept = 0;
  for (const [i, token] of proposals.entries()) {
    const ratio = p(i).prob(token) / q[i].prob(token);
    if (!(ratio >= 1 || (rng !== null && rng.random() < ratio))) break;
    kept++;
  }
  if (kept === proposals.length) return { kept, last: p(kept).draw(rng), fromResidual: false };
  return { kept, last: p(kept).minus(q[kept]).draw(rng), fromResidual: true };
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
 * @yields {{index: number, proposals: number[], draftProbs: number[], targetProbs: (number|null)[], kept: number,
 *   last: number, lastProb: number, fromResidual: boolean, tokens: number[]}} each round; `targetProbs`
 *   is null for the proposals after a refusal, which the target never checked; `tokens`: every
 *   token written so far (the caller cuts its caches back to them)
 */
export async function* speculativeRounds(prompt, { gamma, maxNewTokens, temperature }, { draft, target, rng }) {
  const random = temperature > 0 ? rng : null;
  const out = [...prompt];
  for (let index = 0; out.length - prompt.length < maxNewTokens; index++) {
    const k = Math.min(gamma, maxNewTokens - (out.length - prompt.length) - 1); // the round adds up to k + 1 tokens
    const proposals = [];
    const q = [];
    for (let i = 0; i < k; i++) {
      q.push(Distribution.of(await draft([...out, ...proposals]), temperature)); // the draft, one token at a time
      proposals.push(q[i].draw(random));
    }
    const scores = await target([...out, ...proposals], k + 1); // one pass checks every proposal
    const checked = [];
    const p = (i) => (checked[i] ??= Distribution.of(scores[i], temperature)); // a softmax only where the check reaches
    const { kept, last, fromResidual } = verify(proposals, q, p, random);
    out.push(...proposals.slice(0, kept), last);
    yield {
      index,
      proposals,
      draftProbs: proposals.map((token, i) => q[i].prob(token)),
      targetProbs: proposals.map((token, i) => (i <= kept ? p(i).prob(token) : null)),
      kept,
      last,
      lastProb: p(kept).prob(last),
      fromResidual,
      tokens: out.slice(prompt.length),
    };
  }
}
