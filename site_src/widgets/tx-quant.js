/**
 * <tx-quant>: one outlier dimension in the activations, and an int8 matrix product computed four
 * ways: one scale per tensor, one per row and column (vector-wise), LLM.int8()'s decomposition
 * and SmoothQuant.
 *
 * Attributes (all optional):
 *   outlier    how many times larger the outlier dimensions' activations are, 1 to 200 (default 60)
 *   channels   how many of the 256 input dimensions are outliers, 0 to 8 (default 1)
 *   threshold  LLM.int8()'s cut: dimensions with an activation above it stay in 16-bit (default 6)
 *   alpha      SmoothQuant's migration strength, 0 to 1 (default 0.5)
 *   seed       seed of the random activations and weights (default 0)
 *
 * Computed by `demos.quantization.outlier_product` (64 tokens, 256 → 256). Each table row
 * carries `data-method`, `data-error` (the product's relative error, drawn as a bar) and
 * `data-levels` (int8 codes the ordinary activations use, of 255).
 */
import { callDemo } from "../runtime/python.js";
import { parseInteger, parseNumber } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const METHODS = [
  ["per_tensor", "int8, one scale per tensor"],
  ["vector_wise", "int8, a scale per row and column"],
  ["llm_int8", "LLM.int8(): outliers in 16-bit"],
  ["smoothquant", "SmoothQuant, then per tensor"],
];

const STYLE = `
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.6em 0; width: 100%; }
  th, td { padding: 0.2em 0.5em; border-bottom: 1px solid var(--tx-border); text-align: left; vertical-align: middle; }
  td.codes { text-align: right; white-space: nowrap; }
  .meter { display: flex; align-items: center; gap: 0.3em; min-width: 5.5em; }
  p.caption { color: var(--tx-muted); margin: 0.6em 0 0; }
  .meter span.fill { display: block; height: 0.9em; background: var(--tx-accent); border-radius: 2px; }
  tr[data-method="per_tensor"] .meter span.fill { background: #c62828; }
  .meter span.value { white-space: nowrap; }
`;

class TxQuant extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">An outlier dimension and int8 matrix products</div>
      <div class="controls">
        <label>Outlier size <input name="outlier" type="range" min="1" max="200" step="1"><output></output></label>
        <label>Outlier dimensions <input name="channels" type="number" min="0" max="8" step="1"><span></span></label>
        <label>LLM.int8() threshold <input name="threshold" type="number" min="0" step="any"><span></span></label>
        <label>SmoothQuant α <input name="alpha" type="range" min="0" max="1" step="0.05"><output></output></label>
        <label>Seed <input name="seed" type="number" min="0" step="1"><span></span></label>
      </div>
      <p class="caption">Error of the product against float64, ‖Ŷ − Y‖ / ‖Y‖, and how many of the 255 int8 codes the ordinary activations use</p>
      <table class="scroll" aria-label="Each method's error and the int8 codes the ordinary activations use">
        <thead><tr><th>method</th><th>error</th><th>codes</th></tr></thead>
        <tbody class="rows"></tbody></table>
      <p class="summary"></p>`;
  }

  setup() {
    const start = (name, fallback) => this.getAttribute(name) ?? fallback;
    this.wire({
      outlier: start("outlier", "60"),
      channels: start("channels", "1"),
      threshold: start("threshold", "6"),
      alpha: start("alpha", "0.5"),
      seed: start("seed", "0"),
    });
  }

  request() {
    return {
      outlier: parseNumber(this.field("outlier").value, { label: "The outlier size", name: "outlier", min: 1, max: 200 }),
      channels: parseInteger(this.field("channels").value, { label: "The number of outlier dimensions", name: "channels", min: 0, max: 8 }),
      threshold: parseNumber(this.field("threshold").value, { label: "The threshold", name: "threshold", min: 0, max: 1000 }),
      alpha: parseNumber(this.field("alpha").value, { label: "α", name: "alpha", min: 0, max: 1 }),
      seed: parseInteger(this.field("seed").value, { label: "The seed", name: "seed", min: 0, max: 2 ** 31 - 1 }),
    };
  }

  echo(request) {
    this.$('[name="outlier"] + output').textContent = `${request.outlier}×`;
    this.$('[name="alpha"] + output').textContent = request.alpha.toFixed(2);
  }

  compute(request) {
    return callDemo("quantization", "outlier_product", request);
  }

  draw(result) {
    const top = Math.max(...METHODS.map(([m]) => result.errors[m])) || 1;
    this.$(".rows").innerHTML = METHODS.map(([method, label]) => {
      const error = result.errors[method];
      return (
        `<tr data-method="${method}" data-error="${error}" data-levels="${result.levels[method]}"><td>${label}</td>` +
        `<td><div class="meter"><span class="fill" style="width: ${Math.max(2, (60 * error) / top).toFixed(1)}%"></span>` +
        `<span class="value">${(100 * error).toFixed(2)}%</span></div></td><td class="codes">${result.levels[method]}</td></tr>`
      );
    }).join("");
    const { per_tensor: tensor, llm_int8: mixed } = result.errors;
    this.$(".summary").textContent =
      `The largest activation is ${result.activation_peak.toFixed(1)}, the largest ordinary one ${result.ordinary_peak.toFixed(1)}. ` +
      `With one scale for the whole tensor the ordinary activations use ${result.levels.per_tensor} of the 255 int8 codes, and the product is off by ${(100 * tensor).toFixed(2)}%; ` +
      `LLM.int8() keeps ${result.kept} ${result.kept === 1 ? "dimension" : "dimensions"} in 16-bit and is off by ${(100 * mixed).toFixed(2)}%.`;
  }
}

define("tx-quant", TxQuant);
