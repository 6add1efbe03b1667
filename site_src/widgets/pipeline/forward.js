/**
 * The model the pipeline widgets draw, and one forward pass per prompt: the variant with
 * attention and hidden-state outputs, the prompt's first MAX_T token ids, and the pass
 * itself, memoised so that every stage on a page shares it.
 * @module widgets/pipeline/forward
 */
/** Figures draw at most this many tokens (the prompt's first ones). */
export const MAX_T = 16;

/** What the pipeline figures need of the site's model: a variant with attention and hidden-state outputs. */
export const PIPELINE_NEEDS = ["attentions", "hiddenStates"];

/** Token ids of `text`, at most MAX_T of them (`truncated` says whether some were cut). */
export function encodePrompt(model, text) {
  const all = model.tokenizer.encode(text);
  if (all.length === 0) throw new Error("The prompt is empty: type some text.");
  return { ids: all.slice(0, MAX_T), total: all.length, truncated: all.length > MAX_T };
}

/** A note for prompts longer than the figures draw. */
export function truncationNote({ total, truncated }) {
  return truncated ? `Your prompt has ${total} tokens; the figures follow its first ${MAX_T}.` : "";
}

const forwards = new Map();

/**
 * One forward pass over `ids` with every attention and hidden state (memoised per prompt).
 * @returns {Promise<{T: number, logits: Float32Array, hidden: Float32Array[], attn: Float32Array[]}>}
 *   hidden[j] (T, n_embd): j = 0 the embedding sum, j >= 1 the residual stream after block j;
 *   attn[i] (n_head, T, T): block i's attention probabilities; logits (V,) of the last position
 */
export function runForward(model, ids) {
  const key = `${model.key}|${ids.join(",")}`;
  if (!forwards.has(key)) {
    const promise = model.forward(ids, { attentions: true, hiddenStates: true }).then((out) => ({
      T: ids.length,
      logits: out.logits,
      hidden: out.hiddenStates.map((t) => t.data),
      attn: out.attentions.map((t) => t.data),
    }));
    promise.catch(() => forwards.delete(key));
    forwards.set(key, promise);
    if (forwards.size > 8) forwards.delete(forwards.keys().next().value);
  }
  return forwards.get(key);
}
