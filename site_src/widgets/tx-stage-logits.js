/**
 * <tx-stage-logits>: stage 6. The last token's vector after the final LayerNorm, times the
 * transposed token-embedding table (the same wte as stage 2), gives one logit per vocabulary
 * entry. The table lists the ten largest of the model's logits and, beside each, the dot
 * product recomputed here from ln_f and the wte rows (the model's own weights, see `readWeights`).
 *
 * Shows one `tr` per token with `data-id`, `data-logit` (the model's) and `data-recomputed`.
 */
import { escapeHtml, visible } from "./base.js";
import { topK } from "../runtime/probs.js";
import { PipelineStage } from "./pipeline/stage.js";
import { layerNorm } from "./pipeline/kernels.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { readWeights, weightsPhrase } from "./pipeline/weights.js";
import { define } from "./widget.js";

const TOP = 10;

class TxStageLogits extends PipelineStage {
  async figure({ model, ids, run }) {
    const { n_embd: C, n_layer: L, vocab_size: V, layer_norm_epsilon: eps } = model.info.config;
    const T = ids.length;
    const top = topK(run.logits, TOP);
    const w = await readWeights(model, ["wte", "ln_f.weight", "ln_f.bias"], { wte: top.map(({ id }) => id) }); // wte (TOP, C)
    const last = run.hidden[L].subarray((T - 1) * C, T * C);
    const h = layerNorm(last, 1, C, w["ln_f.weight"], w["ln_f.bias"], eps);
    const rows = top
      .map(({ id }, k) => {
        const row = w.wte.subarray(k * C, (k + 1) * C);
        let dot = 0;
        for (let c = 0; c < C; c++) dot += h[c] * row[c];
        return `<tr data-id="${id}" data-logit="${run.logits[id]}" data-recomputed="${dot}"><td>${escapeHtml(visible(model.tokenizer.tokenToString(id)))}</td><td>${id}</td><td>${run.logits[id].toFixed(4)}</td><td>${dot.toFixed(4)}</td></tr>`;
      })
      .join("");
    const g = GPT2_SMALL;
    return `${shapeLine("last token's vector", [g.n_embd], [C], model.info.name)}
      ${shapeLine("× wteᵀ", [g.n_embd, g.vocab_size], [C, V], model.info.name)}
      ${shapeLine("logits", [g.vocab_size], [V], model.info.name)}
      <figure class="pl-fig scroll"><figcaption>Figure 6. The ten largest logits after “${escapeHtml(visible(model.tokenizer.tokenToString(ids[T - 1])))}”: the model's, and LN_f(x) · wte[id] recomputed here with the table of stage 2: ${await weightsPhrase(model)}.</figcaption>
      <table class="pl-table pl-logits"><thead><tr><th>token</th><th>id</th><th>model's logit</th><th>LN_f(x)·wte[id]</th></tr></thead><tbody>${rows}</tbody></table></figure>`;
  }
}

define("tx-stage-logits", TxStageLogits);
