/**
 * Turning logits into probabilities on the page (float64 arithmetic).
 * @module probs
 */

/**
 * The k most likely next tokens under softmax(logits).
 * @param {Float32Array|number[]} logits one score per vocabulary entry
 * @param {number} k how many to return
 * @returns {{id: number, prob: number, logit: number}[]} sorted by probability, highest first
 */
export function topK(logits, k) {
  let max = -Infinity;
  for (const x of logits) if (x > max) max = x;
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  const ids = Array.from({ length: logits.length }, (_, i) => i);
  ids.sort((a, b) => logits[b] - logits[a] || a - b);
  return ids.slice(0, k).map((id) => ({ id, logit: logits[id], prob: Math.exp(logits[id] - max) / sum }));
}
