/**
 * Turning logits into probabilities on the page (float64 arithmetic).
 * @module probs
 */
import { summarize } from "./sampler.js";

/**
 * The k most likely next tokens under softmax(logits).
 * @param {Float32Array|number[]} logits one score per vocabulary entry
 * @param {number} k how many to return
 * @returns {{id: number, prob: number, logit: number}[]} sorted by probability,
 *   highest first (the lowest id first among ties)
 */
export function topK(logits, k) {
  return summarize(logits, k).top.map(({ id, prob }) => ({ id, logit: logits[id], prob }));
}
