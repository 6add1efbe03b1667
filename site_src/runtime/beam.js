/**
 * Beam search's bookkeeping, apart from the model: which (beam, token) extensions survive a
 * step, which hypotheses finish, and when the search ends. `model-worker.js` runs the model on
 * every beam in one batch, hands the last position's logits to `BeamSearch.advance`, and
 * reorders the key-value cache by the `rows` it returns.
 *
 *   const search = new BeamSearch(checkBeamOptions(options, { promptTokens, contextLimit, eos }));
 *   let step = search.advance([prefillLogits]);          // one row: the prompt
 *   while (!step.done) step = search.advance(rowLogits); // one row per beam, in `rows` order
 *   search.result();                                     // the finished hypotheses, best first
 *
 * The rules are Hugging Face transformers 5's `generate(num_beams=..., do_sample=False)`, as
 * `model_export/beam.py` (the reference in CPython) states them; the arithmetic follows that
 * module's float32 steps (`Math.fround`), so the two choose the same tokens:
 *
 * - a step takes the best 2 × beams extensions over all beams (the candidates), so that enough
 *   remain to continue when some of them end;
 * - a candidate ends when its token is the end token or it reaches the length limit; an ending
 *   candidate among the best `beams` joins the finished hypotheses with the score
 *   `log-probability / new_length ** lengthPenalty`; the `beams` best finished ones are kept;
 * - the running beams are the best `beams` candidates that did not end;
 * - the search stops when every candidate ended, or (earlyStopping true) when `beams`
 *   hypotheses have finished, or when the best running beam, divided by the length penalty of
 *   its length (of the longest possible length with earlyStopping "never" and a positive
 *   penalty), cannot beat the worst finished one.
 * @module beam
 */

/** The limits of a beam search in the browser (every beam keeps its own key-value cache). */
export const BEAM_LIMITS = Object.freeze({
  maxBeams: 8,
  maxNewTokens: 64,
  /** beams × (prompt + new tokens): about 600 MB of cache for GPT-2 small at the limit */
  maxCachePositions: 4096,
  minLengthPenalty: -5,
  maxLengthPenalty: 5,
});

/** The values of `earlyStopping`, as transformers takes them. */
export const EARLY_STOPPING = Object.freeze([false, true, "never"]);

/** The score of a candidate that may not be kept (model_export/beam.py DROPPED). */
const DROPPED = Math.fround(-1.0e9);

/** Why a search ended: `reason` of its result. */
export const BEAM_ENDINGS = Object.freeze({
  length: "length", // the length limit
  allEnded: "all-ended", // every candidate of the last step ended
  early: "early", // earlyStopping true and `beams` hypotheses finished
  settled: "settled", // no running beam could beat the worst finished hypothesis
  stopped: "stopped", // the reader stopped it
});

/** An input error naming the option and its range. */
function rangeError(message, field) {
  const err = new RangeError(message);
  err.field = field;
  return err;
}

/**
 * Check a beam search's options and fill in defaults.
 * @param {{numBeams?: number, maxNewTokens?: number, lengthPenalty?: number,
 *   earlyStopping?: boolean|"never", eos?: number|null}} options defaults: 4 beams, 16 new
 *   tokens, length penalty 1, earlyStopping false, the model's end-of-text token
 * @param {{promptTokens: number, contextLimit: number, vocabSize: number, eos: number}} model
 * @returns {{numBeams: number, newTokens: number, lengthPenalty: number, earlyStopping: boolean|"never", eos: number|null}}
 * @throws {RangeError} with `field` (the option) and a message that gives the range, or
 *   `field` "context" when the prompt and new tokens do not fit the model
 */
export function checkBeamOptions(options, { promptTokens, contextLimit, vocabSize, eos: endOfText }) {
  const { maxBeams, maxNewTokens, maxCachePositions, minLengthPenalty, maxLengthPenalty } = BEAM_LIMITS;
  const numBeams = options.numBeams ?? 4;
  if (!Number.isInteger(numBeams) || numBeams < 1 || numBeams > maxBeams) {
    throw rangeError(`The number of beams must be a whole number from 1 to ${maxBeams}, got ${numBeams}.`, "numBeams");
  }
  const newTokens = options.maxNewTokens ?? 16;
  if (!Number.isInteger(newTokens) || newTokens < 1 || newTokens > maxNewTokens) {
    throw rangeError(`Max new tokens must be a whole number from 1 to ${maxNewTokens} for beam search, got ${newTokens}.`, "maxNewTokens");
  }
  const lengthPenalty = options.lengthPenalty ?? 1;
  if (typeof lengthPenalty !== "number" || !(lengthPenalty >= minLengthPenalty && lengthPenalty <= maxLengthPenalty)) {
    throw rangeError(`The length penalty must be a number from ${minLengthPenalty} to ${maxLengthPenalty}, got ${lengthPenalty}.`, "lengthPenalty");
  }
  const earlyStopping = options.earlyStopping ?? false;
  if (!EARLY_STOPPING.includes(earlyStopping)) {
    throw rangeError(`Early stopping must be true, false or "never", got ${JSON.stringify(earlyStopping)}.`, "earlyStopping");
  }
  const eos = options.eos === undefined ? endOfText : options.eos;
  if (eos !== null && !(Number.isInteger(eos) && eos >= 0 && eos < vocabSize)) {
    throw rangeError(`The end token must be a token id from 0 to ${vocabSize - 1}, or none, got ${eos}.`, "eos");
  }
  // The last new token is chosen from the logits after the one before it: it needs no position of its own.
  if (promptTokens + newTokens - 1 > contextLimit) {
    throw rangeError(
      `The prompt is ${promptTokens} tokens and ${newTokens} new ones do not fit this model's ${contextLimit} positions; shorten the prompt or ask for fewer tokens.`,
      "context",
    );
  }
  const cache = numBeams * (promptTokens + newTokens);
  if (cache > maxCachePositions) {
    throw rangeError(
      `${numBeams} beams × (${promptTokens} prompt + ${newTokens} new tokens) = ${cache} cached positions; beam search here keeps at most ${maxCachePositions}: use fewer beams, fewer tokens or a shorter prompt.`,
      "context",
    );
  }
  return { numBeams, newTokens, lengthPenalty, earlyStopping, eos };
}

/**
 * float32 log-softmax of one row, added to a float32 running score (model_export.validate's
 * log_softmax in float64, then the float32 sum of model_export/beam.py).
 * @param {Float32Array} logits (V,)
 * @param {number} running the beam's score so far
 * @param {Float64Array} out (V,) written
 */
function scoreRow(logits, running, out) {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const logSum = Math.log(sum);
  for (let i = 0; i < logits.length; i++) out[i] = Math.fround(Math.fround(logits[i] - max - logSum) + running);
}

/**
 * Indices of the `k` largest `values`, largest first; the earlier index first on a tie
 * (a stable descending sort's first k, without sorting everything).
 * @param {ArrayLike<number>} values
 * @param {number} k
 * @param {number} [offset] added to every index returned (values is a slice of a longer list)
 * @param {{index: number, value: number}[]} [into] a list kept so far (merged, in place)
 * @returns {{index: number, value: number}[]}
 */
export function best(values, k, offset = 0, into = []) {
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (into.length === k && !(value > into[k - 1].value)) continue;
    let at = into.length;
    while (at > 0 && value > into[at - 1].value) at--; // after every equal value: earlier index first
    into.splice(at, 0, { index: i + offset, value });
    if (into.length > k) into.pop();
  }
  return into;
}

/**
 * The search's state between model calls (one instance per search).
 */
export class BeamSearch {
  /** @param {{numBeams: number, newTokens: number, lengthPenalty: number, earlyStopping: boolean|"never", eos: number|null}} options */
  constructor({ numBeams, newTokens, lengthPenalty, earlyStopping, eos }) {
    Object.assign(this, { numBeams, newTokens, lengthPenalty, earlyStopping, eos });
    this.candidates = 2 * numBeams; // K
    this.running = Array.from({ length: numBeams }, () => []); // each beam's new tokens
    this.runningScores = new Float32Array(numBeams).fill(DROPPED);
    this.runningScores[0] = 0; // one live beam at the start, so the first step's candidates differ
    this.finished = Array.from({ length: numBeams }, () => ({ tokens: [], score: DROPPED, done: false })); // best first
    this.mayImprove = true;
    this.step = 0;
    this.ending = null;
  }

  /**
   * One step: score every extension of every running beam, keep the best.
   * @param {Float32Array[]} rows the last position's logits of each running beam, in row
   *   order (at the first step one row, the prompt's: the other beams are copies of it)
   * @returns {{index: number, parents: number[], tokens: number[], logProbs: number[], ended: boolean[],
   *   kept: number[], rows: number[], done: boolean}} the candidates best first (their parent
   *   row, token, summed log-probability, whether they ended), which of them run on (`kept`, in
   *   their new row order), and `rows`: the old row whose cache each new row continues
   */
  advance(rows) {
    const { numBeams, candidates, eos } = this;
    const vocab = rows[0].length;
    const scored = new Float64Array(vocab);
    let top = [];
    rows.forEach((logits, row) => {
      scoreRow(logits, this.runningScores[row], scored);
      top = best(scored, candidates, row * vocab, top);
    });
    const parents = top.map((c) => Math.floor(c.index / vocab));
    const tokens = top.map((c) => c.index % vocab);
    const logProbs = top.map((c) => c.value);
    const last = this.step + 1 === this.newTokens;
    const ended = tokens.map((t) => t === eos || last);
    // The running beams: the best candidates that did not end.
    const kept = best(
      logProbs.map((s, i) => (ended[i] ? Math.fround(s + DROPPED) : s)),
      numBeams,
    ).map((c) => c.index);
    this.mergeFinished(parents, tokens, logProbs, ended);
    // Reorder: row i now continues candidate kept[i], with its parent's cache.
    const parentRows = kept.map((c) => parents[c]);
    this.running = kept.map((c) => [...this.running[parents[c]], tokens[c]]);
    this.runningScores = Float32Array.from(kept, (c) => (ended[c] ? Math.fround(logProbs[c] + DROPPED) : logProbs[c]));
    this.step++;
    this.ending = this.stopRule(ended);
    return { index: this.step - 1, parents, tokens, logProbs, ended, kept, rows: parentRows, done: this.ending !== null };
  }

  /** The finished hypotheses after this step: those so far and the ending candidates among the best `numBeams`. */
  mergeFinished(parents, tokens, logProbs, ended) {
    const { numBeams, earlyStopping, lengthPenalty } = this;
    const closed = (this.allFinished() && earlyStopping === true) || !this.mayImprove;
    const divisor = Math.fround((this.step + 1) ** lengthPenalty);
    const joining = logProbs.map((s, i) => {
      let score = Math.fround(s / divisor);
      if (closed) score = Math.fround(score + DROPPED);
      return ended[i] && i < numBeams ? score : Math.fround(score + DROPPED);
    });
    const pool = [
      ...this.finished,
      ...joining.map((score, i) => ({ tokens: [...this.running[parents[i]], tokens[i]], score, done: ended[i] && i < numBeams })),
    ];
    this.finished = best(
      pool.map((h) => h.score),
      numBeams,
    ).map((c) => pool[c.index]);
  }

  allFinished() {
    return this.finished.every((h) => h.done);
  }

  /** Why the search ends after this step (BEAM_ENDINGS), or null when it goes on. */
  stopRule(ended) {
    const { newTokens, lengthPenalty, earlyStopping } = this;
    const longest = earlyStopping === "never" && lengthPenalty > 0 ? newTokens : this.step;
    const worst = this.allFinished() ? Math.min(...this.finished.map((h) => h.score)) : DROPPED;
    this.mayImprove = this.mayImprove && Math.fround(this.runningScores[0] / Math.fround(longest ** lengthPenalty)) > worst;
    if (!this.mayImprove) return BEAM_ENDINGS.settled;
    if (this.allFinished() && earlyStopping === true) return BEAM_ENDINGS.early;
    if (ended.every(Boolean)) return this.step === newTokens ? BEAM_ENDINGS.length : BEAM_ENDINGS.allEnded;
    return null;
  }

  /** The running beams now: new tokens and summed log-probability, in row order. */
  beams() {
    return this.running.map((tokens, row) => ({ tokens, logProb: this.runningScores[row] }));
  }

  /**
   * The finished hypotheses, best first: tokens, length-penalised score, and the summed
   * log-probability it came from (those not finished yet are left out).
   */
  hypotheses() {
    return this.finished.filter((h) => h.done).map((h) => ({ tokens: h.tokens, score: h.score, logProb: h.score * h.tokens.length ** this.lengthPenalty }));
  }
}
