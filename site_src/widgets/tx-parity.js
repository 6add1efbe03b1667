/**
 * <tx-parity>: the logits of one fixed prompt from PyTorch and onnxruntime in Python
 * (computed when the model was exported, by model_export/tables.py) and from this browser
 * (live), with the largest difference between each pair.
 *
 * Shows one `tr` per pair with `data-a`, `data-b` and `data-max-diff`; `data-browser-variant`.
 */
import { PIPELINE_NEEDS } from "./pipeline/forward.js";
import { maxAbsDiff } from "./pipeline/kernels.js";
import { PIPELINE_CSS } from "./pipeline/styles.js";
import { fetchChecked, tableIndex } from "./pipeline/weights.js";
import { escapeHtml } from "./base.js";
import { Widget, define } from "./widget.js";

const LABELS = { torch: "PyTorch (build time)", browser: "this browser (live)" };
const label = (s) => LABELS[s] || (s.startsWith("ort-") ? `onnxruntime-Python, ${s.slice(4)} (build time)` : s);

class TxParity extends Widget {
  template() {
    return `${PIPELINE_CSS}<div class="pl-out"></div>`;
  }

  /** The logits of the parity prompt from each source (build time) and from this browser. */
  async compute() {
    this.showProgress("Loading the model…");
    const model = await this.useModel({ needs: PIPELINE_NEEDS });
    if (!model) return null;
    const { parity } = await tableIndex(model);
    const sources = {};
    for (const entry of parity.logits.filter((e) => e.path)) sources[entry.source] = new Float32Array(await fetchChecked(model, entry));
    this.showProgress("Running the model…");
    sources.browser = (await model.forward(parity.ids)).logits;
    return { model, parity, sources };
  }

  draw({ model, parity, sources }) {
    const mine = `ort-${model.info.variant}`;
    const pairs = [
      ["torch", "ort-fp32"],
      ["browser", mine],
      ["browser", "ort-fp32"],
    ].filter(([a, b]) => sources[a] && sources[b]);
    const rows = pairs
      .map(([a, b]) => {
        const d = maxAbsDiff(sources[a], sources[b]);
        return `<tr data-a="${a}" data-b="${b}" data-max-diff="${d}"><td>${escapeHtml(label(a))}</td><td>${escapeHtml(label(b))}</td><td>${d.toExponential(2)}</td></tr>`;
      })
      .join("");
    const errors = parity.logits
      .filter((e) => e.error)
      .map((e) => `<li>${escapeHtml(label(e.source))}: ${escapeHtml(e.error)}</li>`)
      .join("");
    this.dataset.browserVariant = model.info.variant;
    this.$(".pl-out").innerHTML = `
      <p class="pl-note">Prompt “${escapeHtml(parity.text)}” (ids ${parity.ids.join(", ")}), logits of the next token: ${model.info.config.vocab_size.toLocaleString("en")} numbers from each source. This browser runs the <strong>${escapeHtml(model.info.variant)}</strong> weights on ${escapeHtml(model.info.backend)}.</p>
      ${parity.missing ? `<p class="pl-note pl-missing">${escapeHtml(parity.missing)}.</p>` : ""}
      <table class="pl-table pl-parity"><thead><tr><th>logits from</th><th>compared with</th><th>largest |difference|</th></tr></thead><tbody>${rows}</tbody></table>
      ${errors ? `<ul class="pl-note">${errors}</ul>` : ""}`;
  }
}

define("tx-parity", TxParity);
