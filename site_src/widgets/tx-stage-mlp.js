/**
 * <tx-stage-mlp>: stage 5e. Per token: LayerNorm, c_fc (C → 4C), GELU, c_proj (4C → C),
 * for the chosen block and token. The figure draws the 4C hidden units before and after
 * GELU and the block's MLP update for every token.
 *
 * Shows `data-values` on each figure and `data-active` (share of units GELU leaves above 0).
 */
import { escapeHtml, visible } from "./base.js";
import { BlockStage } from "./pipeline/block.js";
import { MAX_COLS, heatmap } from "./pipeline/figures.js";
import { slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageMlp extends BlockStage {
  drawBlock(b, { model, ids, layer, labels }) {
    const { T, C } = b;
    const wide = 4 * C;
    const cols = Math.min(wide, 2 * MAX_COLS);
    let positive = 0;
    for (const v of b.act) if (v > 0) positive++;
    const active = positive / b.act.length;
    const g = GPT2_SMALL.n_embd;
    return `${shapeLine("expand: c_fc", [T, 4 * g], [T, wide], model.info.name)}
      ${shapeLine("project back: c_proj", [T, g], [T, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(slice2d(b.fc, T, wide, 0, cols), { name: "fc", caption: `LN(x) @ W_fc + b: first ${cols} of ${wide} units`, rowLabels: labels, cell: 4 })}
      ${heatmap(slice2d(b.act, T, wide, 0, cols), { name: "gelu", caption: `GELU of the same units`, cell: 4 })}
      ${heatmap(slice2d(b.mlpOut, T, C, 0, Math.min(C, MAX_COLS)), { name: "mlp-out", caption: `the MLP's update (first ${Math.min(C, MAX_COLS)} of ${C})`, cell: 5 })}
      </div>
      <p class="pl-note" data-active="${active}">Figure 5e. Block ${layer}: after GELU, ${(100 * active).toFixed(1)}% of the ${wide} × ${T} hidden values are above zero; the rest are squashed towards 0 (never below −0.17). Token “${escapeHtml(visible(model.tokenizer.tokenToString(ids[0])))}” and the others are processed each on its own.</p>`;
  }
}

define("tx-stage-mlp", TxStageMlp);
