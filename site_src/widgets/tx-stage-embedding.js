/**
 * <tx-stage-embedding>: stage 2. Each token id picks one row of the token-embedding table
 * wte (V, C); the figure draws the prompt's rows and lists the tokens whose rows point in the
 * most similar direction (cosine) to the chosen token's row. The table comes from
 * `tables/embeddings.bin` (int8 with one scale per row, written by pipeline_hook.py).
 *
 * Shows the rows in the figure's `data-values` and the neighbours as `data-id`/`data-cos` rows.
 */
import { escapeHtml } from "./base.js";
import {
  PipelineStage, GPT2_SMALL, MAX_COLS, heatmap, loadTable, options, shapeLine, tableRow, tokenLabels, visible,
} from "./tx-pipeline-common.js";

const NEIGHBOURS = 8;
const norms = new WeakMap();

/** Cosine of row r with every row (per-row scales cancel out). */
function cosines(wte, r) {
  const { q, rows, cols } = wte;
  if (!norms.has(wte)) {
    const n = new Float64Array(rows);
    for (let i = 0; i < rows; i++) {
      let s = 0;
      for (let c = 0; c < cols; c++) s += q[i * cols + c] ** 2;
      n[i] = Math.sqrt(s);
    }
    norms.set(wte, n);
  }
  const n = norms.get(wte);
  const out = new Float64Array(rows);
  const base = r * cols;
  for (let i = 0; i < rows; i++) {
    let s = 0;
    const row = i * cols;
    for (let c = 0; c < cols; c++) s += q[base + c] * q[row + c];
    out[i] = n[i] && n[r] ? s / (n[i] * n[r]) : 0;
  }
  return out;
}

class TxStageEmbedding extends PipelineStage {
  controls() {
    return `<label>Neighbours of <select name="pos"></select></label>`;
  }

  async draw({ model, ids }) {
    const { wte } = await loadTable(model, "embeddings.bin");
    const { n_embd: C, vocab_size: V } = model.info.config;
    const select = this.$("select[name=pos]");
    const pos = Math.min(Math.max(Number(select.value) || 0, 0), ids.length - 1);
    select.innerHTML = options(ids.length, "token").replace(/token (\d+)/g, (m, i) => `${i} ${escapeHtml(visible(model.tokenizer.tokenToString(ids[i])))}`);
    select.value = String(pos);
    const cols = Math.min(C, MAX_COLS);
    const rows = ids.map((id) => Array.from(tableRow(wte, id).subarray(0, cols)));
    const cos = cosines(wte, ids[pos]);
    const order = Array.from(cos.keys()).sort((a, b) => cos[b] - cos[a] || a - b).slice(0, NEIGHBOURS + 1);
    const table = order.map((id) => `<tr data-id="${id}" data-cos="${cos[id]}"><td>${escapeHtml(visible(model.tokenizer.tokenToString(id)))}</td><td>${id}</td><td>${cos[id].toFixed(4)}</td></tr>`).join("");
    return `${shapeLine("Embedding table wte", [GPT2_SMALL.vocab_size, GPT2_SMALL.n_embd], [V, C], model.info.name)}
      ${shapeLine("Looked-up rows", [ids.length, GPT2_SMALL.n_embd], [ids.length, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(rows, { name: "wte-rows", caption: `Figure 2. Rows wte[id] for your tokens (first ${cols} of ${C} numbers each; dark = large, hatched = negative).`, rowLabels: tokenLabels(model, ids), colLabel: `dimension 0 … ${cols - 1}` })}
      <figure class="pl-fig"><figcaption>Rows closest in direction to “${escapeHtml(visible(model.tokenizer.tokenToString(ids[pos])))}” (cosine; the token itself first).</figcaption>
        <table class="pl-table pl-neighbours"><thead><tr><th>token</th><th>id</th><th>cosine</th></tr></thead><tbody>${table}</tbody></table></figure>
      </div>`;
  }
}

customElements.define("tx-stage-embedding", TxStageEmbedding);
