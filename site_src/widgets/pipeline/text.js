/**
 * How the pipeline figures write shapes and tokens: GPT-2 small's sizes, shapes as Python
 * writes them, the loaded model's shape next to GPT-2 small's, and tokens with their spaces
 * and line breaks made visible (`visible`, base.js).
 * @module widgets/pipeline/text
 */
import { escapeHtml } from "../base.js";

/** GPT-2 small's configuration, the shapes every stage quotes next to the loaded model's. */
export const GPT2_SMALL = Object.freeze({ n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, vocab_size: 50257 });

/** "(6, 768)", or "(6,)" for one dimension (as Python writes shapes). */
export function shapeText(dims) {
  return dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(", ")})`;
}

/** The loaded model's shape next to GPT-2 small's, as one line of HTML. */
export function shapeLine(label, gpt2Dims, modelDims, modelName) {
  const same = gpt2Dims.join() === modelDims.join();
  return (
    `<p class="pl-shape" data-shape="${modelDims.join(",")}">${escapeHtml(label)}: GPT-2 small ${shapeText(gpt2Dims)}` +
    (same ? "" : ` · this site's model (${escapeHtml(modelName)}) ${shapeText(modelDims)}`) +
    "</p>"
  );
}
