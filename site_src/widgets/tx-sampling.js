/**
 * <tx-sampling>: temperature, top-k and top-p over a fixed logits vector.
 *
 * Attributes (all optional):
 *   logits       comma-separated scores, e.g. "3.2,2.5,2.1"
 *   labels       comma-separated token labels of the same length
 *   temperature  initial temperature (0 = greedy), default 1
 *   top-k        initial k (0 = off), default 0
 *   top-p        initial p (1 = off), default 1
 *
 * The distribution is computed by `demos.sampling.next_token_distribution` in the
 * Pyodide worker: the same function the test suite checks against PyTorch.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml, formatProb } from "./base.js";
import { InputError } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const EXAMPLE = {
  context: "The cat sat on the",
  labels: ["mat", "floor", "sofa", "bed", "roof", "table", "chair", "rug", "window", "moon"],
  logits: [3.2, 2.5, 2.1, 1.9, 1.2, 1.0, 0.8, 0.6, 0.1, -1.5],
};

function parseList(text, convert) {
  return text.split(",").map((s) => convert(s.trim()));
}

class TxSampling extends TxLab {
  template() {
    return `
      <div class="title">Next-token probabilities <span class="context"></span></div>
      <div class="controls">
        <label>Temperature <input name="temperature" type="range" min="0" max="2" step="0.05"><output></output></label>
        <label>Top-k <input name="top_k" type="range" min="0" step="1"><output></output></label>
        <label>Top-p <input name="top_p" type="range" min="0.05" max="1" step="0.05"><output></output></label>
      </div>
      <div class="bars" role="list"></div>
      <div class="summary"></div>`;
  }

  setup() {
    this.labels = this.hasAttribute("labels") ? parseList(this.getAttribute("labels"), String) : EXAMPLE.labels;
    this.logits = this.hasAttribute("logits") ? parseList(this.getAttribute("logits"), Number) : EXAMPLE.logits;
    this.$(".context").textContent = this.hasAttribute("logits") ? "" : `after “${EXAMPLE.context} …”`;
    if (this.logits.some((x) => !Number.isFinite(x)) || this.labels.length !== this.logits.length) {
      throw new InputError("The logits attribute must be numbers, as many as the labels.");
    }
    this.field("top_k").max = String(this.logits.length);
    this.wire({
      temperature: this.getAttribute("temperature") ?? "1",
      top_k: this.getAttribute("top-k") ?? "0",
      top_p: this.getAttribute("top-p") ?? "1",
    });
  }

  /** Current slider values (with the logits, the keyword arguments of next_token_distribution). */
  request() {
    const value = (name) => Number(this.field(name).value);
    return { temperature: value("temperature"), top_k: value("top_k"), top_p: value("top_p") };
  }

  echo({ temperature, top_k, top_p }) {
    const out = (name) => this.$(`input[name="${name}"] + output`);
    out("temperature").textContent = temperature === 0 ? "0 (greedy)" : temperature.toFixed(2);
    out("top_k").textContent = top_k === 0 ? "off" : String(top_k);
    out("top_p").textContent = top_p === 1 ? "off" : top_p.toFixed(2);
  }

  compute(request) {
    return callDemo("sampling", "next_token_distribution", { logits: this.logits, ...request });
  }

  draw(dist) {
    const peak = Math.max(...dist.probs, ...dist.base_probs);
    const width = (p) => (peak > 0 ? (100 * p) / peak : 0);
    this.$(".bars").innerHTML = dist.probs
      .map(
        (p, i) => `
      <div class="bar-row${dist.kept[i] ? "" : " removed"}" role="listitem" data-index="${i}" data-prob="${p}"
           title="${dist.kept[i] ? "kept" : "filtered out"}: ${formatProb(dist.base_probs[i])} before filtering">
        <span class="label">${escapeHtml(this.labels[i])}</span>
        <span class="bar">${dist.kept[i] ? `<span style="width:${width(p)}%"></span>` : `<span class="base" style="width:${width(dist.base_probs[i])}%"></span>`}</span>
        <span class="value">${formatProb(p)}</span>
      </div>`,
      )
      .join("");
    this.$(".summary").textContent = dist.greedy
      ? "Temperature 0: greedy decoding always picks the highest-scoring token."
      : `${dist.num_kept} of ${dist.probs.length} tokens can be sampled; they held ${formatProb(dist.kept_mass)} of the tempered probability. ` +
        `Entropy ${dist.entropy_bits.toFixed(2)} bits.`;
  }
}

define("tx-sampling", TxSampling);
