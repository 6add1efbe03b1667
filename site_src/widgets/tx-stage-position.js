/**
 * <tx-stage-position>: stage 3. GPT-2 adds a learned row wpe[position] to every token; the
 * figure draws the prompt's position rows and compares how the learned rows of the first
 * positions resemble each other (cosine) with the same picture for the fixed sinusoidal
 * formula of the original Transformer at the same width.
 *
 * Shows `data-values` on each figure (rows, learned similarity, sinusoidal similarity).
 */
import { PipelineStage } from "./pipeline/stage.js";
import { MAX_COLS, heatmap, tokenLabels } from "./pipeline/figures.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { readWeights } from "./pipeline/weights.js";
import { define } from "./widget.js";

const N = 24; // positions in the similarity plots

/** Sinusoidal encoding row p of width d: sin/cos pairs with frequencies 10000^(-2i/d). */
export function sinusoid(p, d) {
  const row = new Float64Array(d);
  for (let i = 0; i < d / 2; i++) {
    const angle = p / 10000 ** ((2 * i) / d);
    row[2 * i] = Math.sin(angle);
    row[2 * i + 1] = Math.cos(angle);
  }
  return row;
}

function cosineMatrix(rows) {
  const norm = rows.map((r) => Math.sqrt(r.reduce((s, v) => s + v * v, 0)));
  return rows.map((a, i) =>
    rows.map((b, j) => {
      let s = 0;
      for (let c = 0; c < a.length; c++) s += a[c] * b[c];
      return norm[i] && norm[j] ? s / (norm[i] * norm[j]) : 0;
    }),
  );
}

class TxStagePosition extends PipelineStage {
  needsForward() {
    return false;
  }

  async figure({ model, ids }) {
    const { n_embd: C, n_positions: P } = model.info.config;
    const n = Math.min(N, P);
    const positions = Array.from({ length: Math.max(n, ids.length) }, (_, p) => p);
    const { wpe } = await readWeights(model, ["wpe"], { wpe: positions }); // (max(n, T), C)
    const row = (p) => wpe.subarray(p * C, (p + 1) * C);
    const cols = Math.min(C, MAX_COLS);
    const rows = ids.map((_, p) => Array.from(row(p).subarray(0, cols)));
    const learned = cosineMatrix(Array.from({ length: n }, (_, p) => Array.from(row(p))));
    const fixed = cosineMatrix(Array.from({ length: n }, (_, p) => Array.from(sinusoid(p, C))));
    const labels = Array.from({ length: n }, (_, p) => `pos ${p}`);
    return `${shapeLine("Position table wpe", [GPT2_SMALL.n_positions, GPT2_SMALL.n_embd], [P, C], model.info.name)}
      ${shapeLine("Rows for your prompt", [ids.length, GPT2_SMALL.n_embd], [ids.length, C], model.info.name)}
      ${heatmap(rows, { name: "wpe-rows", caption: `Figure 3. Rows wpe[0 … ${ids.length - 1}], one per position of your prompt (first ${cols} of ${C} numbers).`, rowLabels: tokenLabels(model, ids), colLabel: `dimension 0 … ${cols - 1}` })}
      <div class="pl-figs">
      ${heatmap(learned, { name: "learned-similarity", caption: `Learned: cosine of wpe[i] and wpe[j], positions 0 … ${n - 1}`, rowLabels: labels, cell: 9 })}
      ${heatmap(fixed, { name: "sinusoidal-similarity", caption: `Sinusoidal (width ${C}): cosine of PE[i] and PE[j]`, rowLabels: labels, cell: 9 })}
      </div>`;
  }
}

define("tx-stage-position", TxStagePosition);
