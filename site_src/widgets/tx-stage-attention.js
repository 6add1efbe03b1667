/**
 * <tx-stage-attention>: stage 5c. For the block and head the reader picks, each step of
 * masked self-attention on their prompt: scores Q_h K_hᵀ, scaled by 1/√head_dim, masked
 * (−∞ above the diagonal), softmax (the model's own `attentions.{layer}` output), and the
 * weighted values softmax · V_h. The first three are recomputed from the block's weights; the check
 * line compares this page's softmax of them with the model's.
 *
 * Shows `data-values` on each figure and `data-max-diff` on the check line.
 */
import { BlockStage } from "./pipeline/block.js";
import { heatmap } from "./pipeline/figures.js";
import { maxAbsDiff } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageAttention extends BlockStage {
  pickers() {
    return ["layer", "head"];
  }

  drawBlock(b, { model, layer, labels }) {
    const h = this.num("select[name=head]");
    const { T, H, hd } = b;
    const head = b.heads[h];
    const numbers = T <= 8;
    const opts = (name, caption, extra = {}) => ({ name, caption, rowLabels: labels, numbers, cell: numbers ? 34 : 14, ...extra });
    const diff = maxAbsDiff(head.softmax.flat(), head.probs.flat());
    const g = GPT2_SMALL;
    return `${shapeLine("scores, one matrix per head", [g.n_head, T, T], [H, T, T], model.info.name)}
      ${shapeLine("weighted values", [g.n_head, T, g.n_embd / g.n_head], [H, T, hd], model.info.name)}
      <div class="pl-figs">
      ${heatmap(head.scores, opts("scores", "① scores S = Q<sub>h</sub>K<sub>h</sub>ᵀ (row: query, column: key)"))}
      ${heatmap(head.scaled, opts("scaled", `② scaled S / √${hd}`))}
      ${heatmap(head.masked, opts("masked", "③ masked: −∞ where the key comes later"))}
      ${heatmap(head.probs, opts("softmax", "④ softmax: each row sums to 1 (the model's attentions output)"))}
      ${heatmap(head.out, opts("weighted", `⑤ weighted values softmax · V<sub>h</sub> (${hd} columns)`, { numbers: false, cell: 7 }))}
      </div>
      <p class="pl-note pl-check" data-max-diff="${diff}">Figure 5c. Block ${layer}, head ${h}. The softmax of ③ computed on this page differs from the model's own probabilities by at most ${diff.toExponential(2)}.</p>`;
  }
}

define("tx-stage-attention", TxStageAttention);
