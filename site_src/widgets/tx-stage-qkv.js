/**
 * <tx-stage-qkv>: stage 5a. In the block the reader picks, LayerNorm of the block's input
 * times the fused weight c_attn (C → 3C) gives one (T, 3C) matrix, sliced into Q | K | V.
 * Recomputed here from the model's own block input (`hidden_states.{layer}`) and the block's
 * weights (the model's own, see `readWeights` in pipeline/weights.js).
 *
 * Shows `data-values` on the Q, K and V figures (first columns).
 */
import { BlockStage } from "./pipeline/block.js";
import { MAX_COLS, heatmap } from "./pipeline/figures.js";
import { slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageQkv extends BlockStage {
  drawBlock(b, { model, layer, labels }) {
    const { T, C } = b;
    const cols = Math.min(C, MAX_COLS);
    const g = GPT2_SMALL.n_embd;
    return `${shapeLine("c_attn weight", [g, 3 * g], [C, 3 * C], model.info.name)}
      ${shapeLine("LN(x) @ W + b", [T, 3 * g], [T, 3 * C], model.info.name)}
      ${shapeLine("each of Q, K, V", [T, g], [T, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(slice2d(b.q, T, C, 0, cols), { name: "q", caption: `Q = columns 0 … ${C - 1}`, rowLabels: labels, cell: 5 })}
      ${heatmap(slice2d(b.k, T, C, 0, cols), { name: "k", caption: `K = columns ${C} … ${2 * C - 1}`, cell: 5 })}
      ${heatmap(slice2d(b.v, T, C, 0, cols), { name: "v", caption: `V = columns ${2 * C} … ${3 * C - 1}`, cell: 5 })}
      </div>
      <p class="pl-note">Figure 5a. Block ${layer}: one matrix product gives all three; the figure shows the first ${cols} of each one's ${C} columns.</p>`;
  }
}

define("tx-stage-qkv", TxStageQkv);
