/**
 * <tx-stage-sum>: stage 4. The token rows plus the position rows give the tensor that enters
 * the first block. The figure draws the model's own `hidden_states.0` (a graph output) beside
 * the two tables' rows, and says how far the tables' sum is from it (the tables are int8).
 *
 * Shows `data-values` on each figure and `data-max-diff` on the check line.
 */
import {
  PipelineStage, GPT2_SMALL, MAX_COLS, heatmap, loadTable, maxAbsDiff, shapeLine, slice2d, tableRow, tokenLabels,
} from "./tx-pipeline-common.js";

class TxStageSum extends PipelineStage {
  async draw({ model, ids, run }) {
    const { wte, wpe } = await loadTable(model, "embeddings.bin");
    const C = model.info.config.n_embd;
    const T = ids.length;
    const cols = Math.min(C, MAX_COLS);
    const tok = ids.map((id) => tableRow(wte, id));
    const pos = ids.map((_, p) => tableRow(wpe, p));
    const sum = new Float32Array(T * C);
    for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) sum[t * C + c] = tok[t][c] + pos[t][c];
    const diff = maxAbsDiff(sum, run.hidden[0]);
    const labels = tokenLabels(model, ids);
    const cap = `first ${cols} of ${C}`;
    return `${shapeLine("x = token rows + position rows", [T, GPT2_SMALL.n_embd], [T, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(tok.map((r) => Array.from(r.subarray(0, cols))), { name: "token-rows", caption: `wte[id] (${cap})`, rowLabels: labels, cell: 5 })}
      ${heatmap(pos.map((r) => Array.from(r.subarray(0, cols))), { name: "position-rows", caption: `+ wpe[pos] (${cap})`, cell: 5 })}
      ${heatmap(slice2d(run.hidden[0], T, C, 0, cols), { name: "hidden_states.0", caption: `= x, the model's hidden_states.0 (${cap})`, cell: 5 })}
      </div>
      <p class="pl-note pl-check" data-max-diff="${diff}">Figure 4. The sum computed here from the int8 tables differs from the model's own x by at most ${diff.toExponential(2)} (rounding of the tables).</p>`;
  }
}

customElements.define("tx-stage-sum", TxStageSum);
