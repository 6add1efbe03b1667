/**
 * One block of the loaded model, recomputed for the prompt: its weights (weights.js) and the
 * model's own input to it and attention probabilities (forward.js) through the float32
 * kernels (kernels.js), next to the model's own output of the block.
 * @module widgets/pipeline/block
 */
import { tokenLabels } from "./figures.js";
import { traceBlock } from "./kernels.js";
import { PipelineStage } from "./stage.js";
import { blockWeights } from "./weights.js";

/**
 * Everything block `layer` computes for the prompt, recomputed from the block's weights and
 * the model's own input to that block (hidden_states[layer]): the tensors of `traceBlock`
 * (x, ln1, qkv, q/k/v, heads, merged, attnOut, mid, ln2, fc, act, mlpOut, next) and
 * nextModel (T,C), the model's hidden_states[layer + 1].
 * @param {{info: {config: {n_embd: number, n_head: number, layer_norm_epsilon: number}}}} model
 * @param {{T: number, hidden: Float32Array[], attn: Float32Array[]}} run from `runForward`
 * @param {number} layer
 */
export async function blockTrace(model, run, layer) {
  const { n_embd: C, n_head: H, layer_norm_epsilon: eps } = model.info.config;
  const w = await blockWeights(model, layer);
  const trace = traceBlock(run.hidden[layer], w, run.attn[layer], { T: run.T, C, H, eps });
  return { ...trace, nextModel: run.hidden[layer + 1] };
}

/**
 * Base of the stage widgets that draw one block (5a–5f): a Block picker (subclasses may add
 * "head"), and `figure` runs `blockTrace` for the chosen block and hands it to the subclass's
 * `drawBlock(trace, {model, ids, run, layer, labels})`, which returns the figure's HTML.
 */
export class BlockStage extends PipelineStage {
  pickers() {
    return ["layer"];
  }

  async figure({ model, ids, run }) {
    const layer = this.num("select[name=layer]");
    const trace = await blockTrace(model, run, layer);
    return this.drawBlock(trace, { model, ids, run, layer, labels: tokenLabels(model, ids) });
  }
}
