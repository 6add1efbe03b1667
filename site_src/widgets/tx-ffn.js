/**
 * <tx-ffn>: exact GELU versus its tanh approximation, and the shapes of the MLP block, GPT-2's
 * or LLaMA's gated one (SwiGLU).
 *
 * Attributes (all optional):
 *   x-min, x-max   the plotted range, default -4 and 4
 *   kind           the feed-forward block whose shapes are listed: gelu (GPT-2's MLP, the
 *                  default) or swiglu (LLaMA's gated FFN)
 *   d-model        the width d of the residual stream, default 768
 *
 * Computed by `demos.ffn.gelu_curves` (201 points) and `demos.ffn.mlp_shapes`. The
 * element carries `data-max-diff` and `data-at-x` (largest |tanh − exact| on the grid and
 * where it is); each plotted point of the difference curve carries `data-x` and
 * `data-diff`; each shape row carries `data-shape`, the parameter cell `data-params`.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { InputError, parseInteger, parseSelect, readNumber } from "./inputs.js";
import { FIGURE_CSS, TxLab } from "./lab.js";
import { define } from "./widget.js";

const POINTS = 201;
const STYLE = `
  .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(16em, 1fr)); gap: 1em; }
${FIGURE_CSS}
  svg text { font-size: 10px; fill: var(--tx-muted); }
  svg .exact { stroke: var(--tx-accent); fill: none; stroke-width: 2.5; }
  svg .tanh { stroke: #e65100; fill: none; stroke-width: 1.5; stroke-dasharray: 5 3; }
  svg .diff { stroke: var(--tx-fg); fill: none; stroke-width: 1.5; }
  svg .axis { stroke: var(--tx-border); }
  svg .peak { fill: #c62828; }
  svg circle.pt { fill: transparent; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 0.4em; }
  th, td { padding: 0.1em 0.7em; border-bottom: 1px solid var(--tx-border); text-align: left; }
  td.num { text-align: right; }
`;

/** A line chart of several series over the same x values, with labelled axes. */
function chart(x, series, { yLabel, label, extra = "" }) {
  const [W, H, L, R, T, B] = [360, 200, 48, 8, 8, 30];
  const all = series.flatMap((s) => s.y);
  let [lo, hi] = [Math.min(...all), Math.max(...all)];
  if (hi - lo < 1e-300) [lo, hi] = [lo - 1, hi + 1];
  const px = (v) => L + ((v - x[0]) / (x[x.length - 1] - x[0])) * (W - L - R);
  const py = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
  const fmt = (v) => (Math.abs(v) >= 1e-3 || v === 0 ? String(Number(v.toPrecision(3))) : v.toExponential(1));
  const zero = lo < 0 && hi > 0 ? `<line class="axis" x1="${L}" x2="${W - R}" y1="${py(0)}" y2="${py(0)}"></line>` : "";
  const lines = series.map((s) => `<polyline class="${s.cls}" points="${x.map((v, i) => `${px(v)},${py(s.y[i])}`).join(" ")}"></polyline>`).join("");
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(label)}">
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"></line>${zero}${lines}
    ${extra ? extra({ px, py }) : ""}
    <text x="${L - 4}" y="${T + 8}" text-anchor="end">${fmt(hi)}</text>
    <text x="${L - 4}" y="${H - B}" text-anchor="end">${fmt(lo)}</text>
    <text x="${L}" y="${H - B + 12}" text-anchor="middle">${fmt(x[0])}</text>
    <text x="${W - R}" y="${H - B + 12}" text-anchor="end">${fmt(x[x.length - 1])}</text>
    <text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">x</text>
    <text transform="translate(10 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text></svg>`;
}

class TxFfn extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">GELU: exact x·Φ(x) versus the tanh approximation</div>
      <div class="controls">
        <label>x from <input name="x_min" type="number" step="any"><span></span></label>
        <label>x to <input name="x_max" type="number" step="any"><span></span></label>
      </div>
      <div class="charts">
        <figure><figcaption>GELU(x): exact (solid) and tanh form (dashed)</figcaption><div class="curves"></div></figure>
        <figure><figcaption>Difference: tanh form − exact (the red dot is the largest gap)</figcaption><div class="difference"></div></figure>
      </div>
      <div class="summary gap" aria-live="polite"></div>
      <div class="title" style="margin-top:0.8em">The feed-forward block, shape by shape</div>
      <div class="controls">
        <label>Block <select name="kind"><option value="gelu">GELU MLP (GPT-2)</option><option value="swiglu">SwiGLU (LLaMA)</option></select><span></span></label>
        <label>Tokens T <input name="seq_len" type="number" min="1" step="1"><span></span></label>
        <label>Width d <input name="d_model" type="number" min="1" step="1"><span></span></label>
        <label>Expansion <input name="expansion" type="number" min="1" max="64" step="1"><span>× d</span></label>
      </div>
      <table aria-label="Shapes through the MLP block"><thead><tr><th>stage</th><th>shape</th></tr></thead><tbody class="shapes"></tbody></table>
      <div class="summary params"></div>`;
  }

  setup() {
    const kind = this.getAttribute("kind") === "swiglu" ? "swiglu" : "gelu";
    this.wire({
      x_min: this.getAttribute("x-min") ?? "-4",
      x_max: this.getAttribute("x-max") ?? "4",
      seq_len: "6",
      d_model: this.getAttribute("d-model") ?? "768",
      expansion: "4",
      kind,
    });
  }

  request() {
    const raw = (name) => this.field(name).value;
    const [xMin, xMax] = [readNumber(raw("x_min")), readNumber(raw("x_max"))];
    if (!Number.isFinite(xMin) || !Number.isFinite(xMax)) throw new InputError("Both ends of the range must be numbers.");
    if (!(xMin < xMax)) throw new InputError("“x from” must be smaller than “x to”.", "x_min");
    const sizes = {};
    for (const [name, label, max] of [
      ["seq_len", "Tokens T", 1_000_000],
      ["d_model", "Width d", 100_000],
      ["expansion", "Expansion", 64],
    ]) {
      sizes[name] = parseInteger(raw(name), { label, min: 1, max });
    }
    const kind = parseSelect(this.field("kind"), { label: "The block" });
    return { x_min: xMin, x_max: xMax, num: POINTS, ...sizes, kind };
  }

  compute(request) {
    const { x_min, x_max, num, ...sizes } = request;
    return Promise.all([callDemo("ffn", "gelu_curves", { x_min, x_max, num }), callDemo("ffn", "mlp_shapes", sizes)]);
  }

  draw([c, shapes]) {
    this.dataset.maxDiff = String(c.max_abs_difference);
    this.dataset.atX = String(c.at_x);
    this.$(".curves").innerHTML = chart(
      c.x,
      [
        { y: c.exact, cls: "exact" },
        { y: c.tanh, cls: "tanh" },
      ],
      { yLabel: "GELU(x)", label: `Exact and tanh GELU from ${c.x[0]} to ${c.x[c.x.length - 1]}; the curves overlap` },
    );
    const peak = c.x.indexOf(c.at_x);
    this.$(".difference").innerHTML = chart(c.x, [{ y: c.difference, cls: "diff" }], {
      yLabel: "tanh − exact",
      label: `Largest gap ${c.max_abs_difference.toExponential(3)} at x = ${c.at_x}`,
      extra: ({ px, py }) =>
        c.x
          .map(
            (v, i) => `<circle class="pt" cx="${px(v)}" cy="${py(c.difference[i])}" r="1.5"
          data-x="${v}" data-diff="${c.difference[i]}"><title>x = ${v.toFixed(3)}: ${c.difference[i].toExponential(3)}</title></circle>`,
          )
          .join("") + `<circle class="peak" cx="${px(c.at_x)}" cy="${py(c.difference[peak])}" r="3.5"></circle>`,
    });
    this.$(".gap").textContent = `Largest |tanh − exact| on this grid: ${c.max_abs_difference.toExponential(3)} at x = ${c.at_x.toFixed(3)}.`;
    this.$(".shapes").innerHTML = shapes.stages
      .map(
        (s) => `
      <tr data-shape="${s.shape.join(",")}"><td>${escapeHtml(s.name)}</td><td>(${s.shape.join(", ")})</td></tr>`,
      )
      .join("");
    const p = shapes.params;
    const n = (v) => v.toLocaleString("en");
    const parts = "fc" in p ? `${n(p.fc)} (expand) + ${n(p.proj)} (project)` : `${n(p.gate)} (gate) + ${n(p.up)} (up) + ${n(p.down)} (down)`;
    const what = "fc" in p ? "weights and biases" : "weights, no biases";
    this.$(".params").innerHTML = `Parameters: ${parts} =
      <strong data-params="${p.total}">${n(p.total)}</strong>, ${what}, hidden width ${n(shapes.d_ff)}.`;
  }
}

define("tx-ffn", TxFfn);
