/**
 * <tx-stage-residual>: stage 5f. The envelope around both sublayers of the chosen block:
 * x → x + attn(LN₁(x)) → + mlp(LN₂(·)). The table follows each token's vector length through
 * the two residual additions, with the mean and spread LayerNorm removes; the figure draws the
 * model's `hidden_states.{layer+1}`. A switch shows what dropout (p = 0.1) would do to the MLP
 * update during training.
 *
 * Shows `data-values` on the figure, `data-max-diff` on the check line and one `tr` per token.
 */
import { escapeHtml, visible } from "./base.js";
import { BlockStage } from "./pipeline/block.js";
import { MAX_COLS, heatmap } from "./pipeline/figures.js";
import { maxAbsDiff, rowStats, slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { weightsPhrase } from "./pipeline/weights.js";
import { Rng } from "../runtime/rng.js";
import { define } from "./widget.js";

const P_DROP = 0.1;

function rowNorms(x, T, C) {
  return Array.from({ length: T }, (_, t) => Math.sqrt(x.subarray(t * C, (t + 1) * C).reduce((s, v) => s + v * v, 0)));
}

class TxStageResidual extends BlockStage {
  controls() {
    return `${super.controls()}
      <label><input type="checkbox" name="train"> training mode: dropout p = ${P_DROP} on the MLP update</label>`;
  }

  async drawBlock(b, { model, ids, layer, labels }) {
    const { T, C } = b;
    const train = this.$("input[name=train]").checked;
    let update = b.mlpOut;
    let dropped = 0;
    if (train) {
      const rng = new Rng(layer + 1);
      update = b.mlpOut.map((v) => (rng.random() < P_DROP ? (dropped++, 0) : v / (1 - P_DROP)));
    }
    const next = Float32Array.from(b.mid, (v, i) => v + update[i]);
    const stats = rowStats(b.x, T, C);
    const lnStats = rowStats(b.ln1, T, C);
    const n = { x: rowNorms(b.x, T, C), attn: rowNorms(b.attnOut, T, C), mid: rowNorms(b.mid, T, C), mlp: rowNorms(update, T, C), next: rowNorms(next, T, C) };
    const rows = ids
      .map(
        (id, t) =>
          `<tr><td>${t} ${escapeHtml(visible(model.tokenizer.tokenToString(id)))}</td><td>${n.x[t].toFixed(3)}</td><td>${stats[t].mean.toFixed(3)} / ${stats[t].std.toFixed(3)}</td><td>${lnStats[t].mean.toFixed(3)} / ${lnStats[t].std.toFixed(3)}</td><td>${n.attn[t].toFixed(3)}</td><td>${n.mlp[t].toFixed(3)}</td><td>${n.next[t].toFixed(3)}</td></tr>`,
      )
      .join("");
    const diff = maxAbsDiff(b.next, b.nextModel);
    const cols = Math.min(C, MAX_COLS);
    return `${shapeLine("x before and after the block", [T, GPT2_SMALL.n_embd], [T, C], model.info.name)}
      <figure class="pl-fig scroll"><figcaption>Per token: vector lengths ‖·‖, and the mean / standard deviation of x and of LN₁(x) (γ and β included).</figcaption>
      <table class="pl-table pl-residual"><thead><tr><th>token</th><th>‖x‖</th><th>x: mean / std</th><th>LN₁(x): mean / std</th><th>‖attn update‖</th><th>‖MLP update‖${train ? " (dropout)" : ""}</th><th>‖x after block‖</th></tr></thead><tbody>${rows}</tbody></table></figure>
      ${train ? `<p class="pl-note">Training mode: ${dropped} of ${T * C} numbers of the MLP update were set to 0, the others divided by ${1 - P_DROP}. At inference (switch off) nothing is dropped.</p>` : ""}
      ${heatmap(slice2d(b.nextModel, T, C, 0, cols), { name: `hidden_states.${layer + 1}`, caption: `The model's hidden_states.${layer + 1}: the residual stream after block ${layer} (first ${cols} of ${C})`, rowLabels: labels, cell: 6 })}
      <p class="pl-note pl-check" data-max-diff="${diff}">Figure 5f. Recomputing block ${layer} on this page with ${await weightsPhrase(model)} lands within ${diff.toExponential(2)} of the model's own output.</p>`;
  }
}

define("tx-stage-residual", TxStageResidual);
