/**
 * <tx-stage-merge>: stage 5d. The heads' outputs side by side again (T, C), then the output
 * projection c_proj (C → C) that lets them mix.
 *
 * Shows `data-values` on the concatenation and projection figures.
 */
import { BlockStage } from "./pipeline/block.js";
import { MAX_COLS, heatmap } from "./pipeline/figures.js";
import { slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageMerge extends BlockStage {
  drawBlock(b, { model, layer, labels }) {
    const { T, C, H, hd } = b;
    const cols = Math.min(C, MAX_COLS);
    const g = GPT2_SMALL.n_embd;
    return `${shapeLine("heads side by side", [T, g], [T, C], model.info.name)}
      ${shapeLine("c_proj weight", [g, g], [C, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(slice2d(b.merged, T, C, 0, cols), { name: "concat", caption: `${H} heads × ${hd} columns, concatenated (first ${cols})`, rowLabels: labels, cell: 6 })}
      ${heatmap(slice2d(b.attnOut, T, C, 0, cols), { name: "attn-out", caption: `after c_proj: attention's update (first ${cols})`, cell: 6 })}
      </div>
      <p class="pl-note">Figure 5d. Block ${layer}: the update that the residual connection adds to x.</p>`;
  }
}

define("tx-stage-merge", TxStageMerge);
