/**
 * <tx-stage-sum>: stage 4. The token rows plus the position rows give the tensor that enters
 * the first block. The figure draws the model's own `hidden_states.0` (a graph output) beside
 * the two tables' rows, and says how far the sum of those rows (the model's own weights, see
 * `readWeights`) computed on the page is from it.
 *
 * Shows `data-values` on each figure and `data-max-diff` on the check line.
 */
import { PipelineStage } from "./pipeline/stage.js";
import { MAX_COLS, heatmap, tokenLabels } from "./pipeline/figures.js";
import { maxAbsDiff, slice2d } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { readWeights, weightsPhrase } from "./pipeline/weights.js";
import { define } from "./widget.js";

class TxStageSum extends PipelineStage {
  async figure({ model, ids, run }) {
    const C = model.info.config.n_embd;
    const T = ids.length;
    const { wte, wpe } = await readWeights(model, ["wte", "wpe"], { wte: ids, wpe: ids.map((_, p) => p) }); // (T, C) each
    const cols = Math.min(C, MAX_COLS);
    const tok = ids.map((_, t) => wte.subarray(t * C, (t + 1) * C));
    const pos = ids.map((_, p) => wpe.subarray(p * C, (p + 1) * C));
    const sum = new Float32Array(T * C);
    for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) sum[t * C + c] = tok[t][c] + pos[t][c];
    const diff = maxAbsDiff(sum, run.hidden[0]);
    const labels = tokenLabels(model, ids);
    const cap = `first ${cols} of ${C}`;
    return `${shapeLine("x = token rows + position rows", [T, GPT2_SMALL.n_embd], [T, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(
        tok.map((r) => Array.from(r.subarray(0, cols))),
        { name: "token-rows", caption: `wte[id] (${cap})`, rowLabels: labels, cell: 5 },
      )}
      ${heatmap(
        pos.map((r) => Array.from(r.subarray(0, cols))),
        { name: "position-rows", caption: `+ wpe[pos] (${cap})`, cell: 5 },
      )}
      ${heatmap(slice2d(run.hidden[0], T, C, 0, cols), { name: "hidden_states.0", caption: `= x, the model's hidden_states.0 (${cap})`, cell: 5 })}
      </div>
      <p class="pl-note pl-check" data-max-diff="${diff}">Figure 4. The sum computed here from ${await weightsPhrase(model)} differs from the model's own x by at most ${diff.toExponential(2)}.</p>`;
  }
}

define("tx-stage-sum", TxStageSum);
