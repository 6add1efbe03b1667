/**
 * <tx-stage-embedding>: stage 2. Each token id picks one row of the token-embedding table
 * wte (V, C); the figure draws the prompt's rows and lists the tokens whose rows point in the
 * most similar direction (cosine) to the chosen token's row. The rows are the model's own wte,
 * expanded from its q4x files (see `readWeights` in pipeline/weights.js).
 *
 * Shows the rows in the figure's `data-values` and the neighbours as `data-id`/`data-cos` rows.
 */
import { escapeHtml, visible } from "./base.js";
import { PipelineStage } from "./pipeline/stage.js";
import { MAX_COLS, heatmap, options, tokenLabels } from "./pipeline/figures.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { readWeights, scanRows } from "./pipeline/weights.js";
import { define } from "./widget.js";

const NEIGHBOURS = 8;

/** Cosine of `row` (C,) with every row of wte (V,), read band by band. */
async function cosines(model, row) {
  const { n_embd: C, vocab_size: V } = model.info.config;
  let norm = 0;
  for (let c = 0; c < C; c++) norm += row[c] ** 2;
  norm = Math.sqrt(norm);
  const out = new Float64Array(V);
  await scanRows(model, "wte", (first, count, rows) => {
    for (let i = 0; i < count; i++) {
      let dot = 0,
        sq = 0;
      for (let c = 0; c < C; c++) {
        const v = rows[i * C + c];
        dot += row[c] * v;
        sq += v * v;
      }
      out[first + i] = sq && norm ? dot / (Math.sqrt(sq) * norm) : 0;
    }
  });
  return out;
}

class TxStageEmbedding extends PipelineStage {
  controls() {
    return `<label>Neighbours of <select name="pos"></select></label>`;
  }

  async figure({ model, ids }) {
    const { wte } = await readWeights(model, ["wte"], { wte: ids }); // (T, C)
    const { n_embd: C, vocab_size: V } = model.info.config;
    const select = this.$("select[name=pos]");
    const pos = Math.min(Math.max(Number(select.value) || 0, 0), ids.length - 1);
    select.innerHTML = options(ids.length, "token").replace(/token (\d+)/g, (m, i) => `${i} ${escapeHtml(visible(model.tokenizer.tokenToString(ids[i])))}`);
    select.value = String(pos);
    const cols = Math.min(C, MAX_COLS);
    const rows = ids.map((_, t) => Array.from(wte.subarray(t * C, t * C + cols)));
    const cos = await cosines(model, wte.subarray(pos * C, (pos + 1) * C));
    const order = Array.from(cos.keys())
      .sort((a, b) => cos[b] - cos[a] || a - b)
      .slice(0, NEIGHBOURS + 1);
    const table = order
      .map(
        (id) =>
          `<tr data-id="${id}" data-cos="${cos[id]}"><td>${escapeHtml(visible(model.tokenizer.tokenToString(id)))}</td><td>${id}</td><td>${cos[id].toFixed(4)}</td></tr>`,
      )
      .join("");
    return `${shapeLine("Embedding table wte", [GPT2_SMALL.vocab_size, GPT2_SMALL.n_embd], [V, C], model.info.name)}
      ${shapeLine("Looked-up rows", [ids.length, GPT2_SMALL.n_embd], [ids.length, C], model.info.name)}
      <div class="pl-figs">
      ${heatmap(rows, { name: "wte-rows", caption: `Figure 2. Rows wte[id] for your tokens (first ${cols} of ${C} numbers each; dark = large, hatched = negative).`, rowLabels: tokenLabels(model, ids), colLabel: `dimension 0 … ${cols - 1}` })}
      <figure class="pl-fig scroll"><figcaption>Rows closest in direction to “${escapeHtml(visible(model.tokenizer.tokenToString(ids[pos])))}” (cosine; the token itself first).</figcaption>
        <table class="pl-table pl-neighbours"><thead><tr><th>token</th><th>id</th><th>cosine</th></tr></thead><tbody>${table}</tbody></table></figure>
      </div>`;
  }
}

define("tx-stage-embedding", TxStageEmbedding);
