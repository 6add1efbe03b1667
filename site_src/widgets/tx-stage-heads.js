/**
 * <tx-stage-heads>: stage 5b. Q, K and V of the chosen block are cut into n_head slices of
 * head_dim columns; the figure draws the chosen head's three slices.
 *
 * Shows `data-values` on the q_h, k_h and v_h figures.
 */
import { BlockStage } from "./pipeline/block.js";
import { heatmap } from "./pipeline/figures.js";
import { slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageHeads extends BlockStage {
  pickers() {
    return ["layer", "head"];
  }

  drawBlock(b, { model, layer, labels }) {
    const h = this.num("select[name=head]");
    const { T, C, H, hd } = b;
    const g = GPT2_SMALL;
    const part = (m) => slice2d(m, T, C, h * hd, (h + 1) * hd);
    return `${shapeLine("Q as heads", [g.n_head, T, g.n_embd / g.n_head], [H, T, hd], model.info.name)}
      <p class="pl-note">${C} = ${H} heads × ${hd} columns; head ${h} owns columns ${h * hd} … ${(h + 1) * hd - 1}.</p>
      <div class="pl-figs">
      ${heatmap(part(b.q), { name: "q_h", caption: `Q, head ${h}`, rowLabels: labels, cell: 7 })}
      ${heatmap(part(b.k), { name: "k_h", caption: `K, head ${h}`, cell: 7 })}
      ${heatmap(part(b.v), { name: "v_h", caption: `V, head ${h}`, cell: 7 })}
      </div>
      <p class="pl-note">Figure 5b. Block ${layer}, head ${h}: the slices this head attends with.</p>`;
  }
}

define("tx-stage-heads", TxStageHeads);
