/**
 * <tx-stage-sampling>: stage 7. The live logits of the reader's prompt through temperature,
 * top-k and top-p, then one draw with a seed, using the runtime's own sampler (the code that
 * picks every token in stage 8).
 *
 * Shows the kept tokens as `tr` rows with `data-id` and `data-prob` (the distribution drawn
 * from), `data-candidates` and `data-sampled` on the summary line.
 */
import { escapeHtml, formatProb, visible } from "./base.js";
import { parseInteger, parseNumber } from "./inputs.js";
import { MAX_SEED, Rng } from "../runtime/rng.js";
import { argmax, checkSampling, kthLargest, sampleToken } from "../runtime/sampler.js";
import { PipelineStage } from "./pipeline/stage.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

const SHOW = 12;

/**
 * The distribution a token is drawn from: softmax((logits − max) / T) over the tokens that
 * survive top-k (ties kept) and top-p (smallest most-likely set reaching p, ties kept).
 * @returns {{probs: Map<number, number>, candidates: number}}
 */
export function filteredDistribution(logits, { temperature, topK, topP }) {
  const V = logits.length;
  if (temperature === 0) return { probs: new Map([[argmax(logits), 1]]), candidates: 1 };
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
  const scaled = Float64Array.from(logits, (z) => (z - max) / temperature);
  let floor = -Infinity;
  if (topK > 0 && topK < V) floor = kthLargest(scaled, topK);
  if (topP < 1) {
    let total = 0;
    for (let i = 0; i < V; i++) if (scaled[i] >= floor) total += Math.exp(scaled[i]);
    const sorted = Array.from(scaled.filter((s) => s >= floor)).sort((a, b) => b - a);
    let cumulative = 0;
    for (const s of sorted) {
      if (cumulative >= topP * total) break;
      cumulative += Math.exp(s);
      floor = s;
    }
  }
  let total = 0;
  const kept = [];
  for (let i = 0; i < V; i++)
    if (scaled[i] >= floor) {
      kept.push(i);
      total += Math.exp(scaled[i]);
    }
  return { probs: new Map(kept.map((i) => [i, Math.exp(scaled[i]) / total])), candidates: kept.length };
}

class TxStageSampling extends PipelineStage {
  controls() {
    return `<label>Temperature <input type="number" name="temperature" min="0" max="5" step="0.1" value="1"></label>
      <label>Top-k <input type="number" name="topk" min="0" step="1" value="0"></label>
      <label>Top-p <input type="number" name="topp" min="0.01" max="1" step="0.05" value="1"></label>
      <label>Seed <input type="number" name="seed" min="0" step="1" value="1"></label>`;
  }

  async figure({ model, ids, run }) {
    const field = (name) => this.$(`input[name=${name}]`).value;
    const settings = checkSampling(
      {
        temperature: parseNumber(field("temperature"), { label: "Temperature", min: 0, max: 5 }),
        topK: parseInteger(field("topk"), { label: "Top-k", min: 0, max: model.info.config.vocab_size }),
        topP: parseNumber(field("topp"), { label: "Top-p", min: 0, max: 1 }),
      },
      model.info.config.vocab_size,
    );
    const seed = parseInteger(field("seed"), { label: "The seed", min: 0, max: MAX_SEED });
    const { probs, candidates } = filteredDistribution(run.logits, settings);
    const pick = sampleToken(run.logits, settings, new Rng(seed));
    const top = [...probs.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, SHOW);
    const best = top[0][1];
    const rows = top
      .map(
        ([id, p]) =>
          `<tr data-id="${id}" data-prob="${p}"${id === pick.id ? ' class="picked"' : ""}><td>${escapeHtml(visible(model.tokenizer.tokenToString(id)))}${id === pick.id ? " ◀ drawn" : ""}</td><td>${id}</td><td><span class="bar" style="display:inline-block;height:0.7em;background:currentColor;width:${(6 * p) / best}em"></span> ${formatProb(p)}</td></tr>`,
      )
      .join("");
    return `${shapeLine("probabilities", [GPT2_SMALL.vocab_size], [model.info.config.vocab_size], model.info.name)}
      <p class="pl-note pl-summary" data-candidates="${candidates}" data-sampled="${pick.id}">${candidates.toLocaleString("en")} candidate${candidates === 1 ? "" : "s"} survive the filters; seed ${seed} draws “${escapeHtml(visible(model.tokenizer.tokenToString(pick.id)))}” (id ${pick.id}, probability ${formatProb(pick.sampleProb)} in this distribution).</p>
      <figure class="pl-fig scroll"><figcaption>Figure 7. The most likely kept tokens and their probabilities after the dials (bar length and number).</figcaption>
      <table class="pl-table pl-probs"><thead><tr><th>token</th><th>id</th><th>probability</th></tr></thead><tbody>${rows}</tbody></table></figure>`;
  }
}

define("tx-stage-sampling", TxStageSampling);
