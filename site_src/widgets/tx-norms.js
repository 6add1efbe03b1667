/**
 * <tx-norms>: LayerNorm and RMSNorm of one vector, and the residual stream of a
 * pre-norm versus a post-norm stack.
 *
 * Attributes (all optional):
 *   vector   comma-separated starting vector, default "1, 2, 3, 10, -2, 0.5"
 *   depth    layers of the toy stack, default 24
 *
 * Computed by `demos.norms.compare_norms`, `demos.norms.random_vector` and
 * `demos.norms.residual_stream_growth`. The statistics table carries `data-mean`,
 * `data-std`, `data-rms` per row (`data-norm` = input | layer_norm | rms_norm); every
 * point of the depth plot carries `data-wiring`, `data-layer` and `data-rms`.
 */
import { callDemo } from "../runtime/python.js";
import { InputError, describeRange, parseInteger, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const STYLE = `
  .controls input[type=text], .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .vector-row { display: flex; gap: 0.5em; align-items: center; margin-bottom: 0.6em; }
  .vector-row label { flex: 1; display: flex; gap: 0.4em; align-items: center; }
  .vector-row input { flex: 1; font: inherit; min-width: 0; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-bottom: 0.8em; }
  th, td { padding: 0.1em 0.7em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  td.values { text-align: left; color: var(--tx-muted); font-size: 0.9em; }
  svg { width: 100%; max-width: 40em; height: auto; display: block; }
  svg text { font-size: 10px; fill: var(--tx-muted); }
  svg .pre { stroke: var(--tx-accent); fill: none; stroke-width: 2; }
  svg .post { stroke: #e65100; fill: none; stroke-width: 2; stroke-dasharray: 5 3; }
  svg circle.pre { fill: var(--tx-accent); stroke: none; }
  svg rect.post { fill: #e65100; stroke: none; }
  svg .grid { stroke: var(--tx-border); }
`;
const MAX_ENTRY = 1e6; // larger entries overflow the squares the norms sum
const ROWS = [
  ["input", "input x"],
  ["layer_norm", "LayerNorm(x)"],
  ["rms_norm", "RMSNorm(x)"],
];

/** Parse "1, 2.5, -3" into numbers; an InputError says what is wrong. */
function parseVector(text) {
  const refuse = (message) => new InputError(message, "vector");
  const parts = text.split(/[,\s]+/).filter(Boolean);
  if (parts.length === 0) throw refuse("Type at least one number.");
  if (parts.length > 64) throw refuse("Use at most 64 numbers.");
  const values = parts.map(Number);
  const shown = (p) => (p.length > 24 ? `${p.slice(0, 24)}…` : p);
  const bad = parts.find((p, i) => Number.isNaN(values[i]));
  if (bad !== undefined) throw refuse(`“${shown(bad)}” is not a number.`);
  const huge = parts.find((p, i) => !(Math.abs(values[i]) <= MAX_ENTRY)); // Infinity too
  if (huge !== undefined) throw refuse(`“${shown(huge)}” is too large: each number of x must be ${describeRange({ min: -MAX_ENTRY, max: MAX_ENTRY })}.`);
  return values;
}

/** Line chart of the stream's RMS by layer: pre-norm (solid, circles) and post-norm (dashed, squares). */
function depthChart(result) {
  const [W, H, L, R, T, B] = [420, 220, 42, 10, 10, 32];
  const layers = result.layer;
  const ymax = Math.max(...result.pre_norm.rms, ...result.post_norm.rms) * 1.1;
  const x = (i) => L + (i / layers[layers.length - 1]) * (W - L - R);
  const y = (v) => T + (1 - v / ymax) * (H - T - B);
  const ticks = [0, ymax / 2, ymax]
    .map(
      (v) => `<line class="grid" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"></line>
    <text x="${L - 4}" y="${y(v) + 3}" text-anchor="end">${v.toFixed(1)}</text>`,
    )
    .join("");
  const series = (wiring) => {
    const rms = result[wiring].rms;
    const points = rms.map((v, i) => `${x(i)},${y(v)}`).join(" ");
    const marks = rms
      .map(
        (v, i) =>
          (wiring === "pre_norm"
            ? `<circle class="pre" cx="${x(i)}" cy="${y(v)}" r="2.5"`
            : `<rect class="post" x="${x(i) - 2.5}" y="${y(v) - 2.5}" width="5" height="5"`) +
          ` data-wiring="${wiring}" data-layer="${i}" data-rms="${v}"><title>${wiring === "pre_norm" ? "pre" : "post"}-norm, layer ${i}: RMS ${v.toFixed(3)}</title>` +
          (wiring === "pre_norm" ? "</circle>" : "</rect>"),
      )
      .join("");
    return `<polyline class="${wiring === "pre_norm" ? "pre" : "post"}" points="${points}"></polyline>${marks}`;
  };
  const last = layers.length - 1;
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="RMS of the residual stream after each layer: pre-norm ends at
    ${result.pre_norm.rms[last].toFixed(2)}, post-norm at ${result.post_norm.rms[last].toFixed(2)}">
    ${ticks}${series("pre_norm")}${series("post_norm")}
    <text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">layer (0 = input)</text>
    <text x="${L}" y="${H - 18}">0</text><text x="${W - R}" y="${H - 18}" text-anchor="end">${layers[last]}</text>
    <text transform="translate(10 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">RMS of the stream</text>
    <text x="${W - R}" y="${T + 12}" text-anchor="end">● solid: pre-norm   ■ dashed: post-norm</text></svg>`;
}

class TxNorms extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">LayerNorm and RMSNorm on one token's vector</div>
      <div class="vector-row">
        <label>x = <input name="vector" type="text" spellcheck="false" aria-label="vector x, comma-separated"></label>
        <button type="button" name="random">Random vector</button>
      </div>
      <div class="controls">
        <label>ε <input name="eps" type="number" min="0" step="any"><span></span></label>
        <label>Seed <input name="seed" type="number" min="0" step="1"><span></span></label>
      </div>
      <table class="scroll" aria-label="Mean, standard deviation and RMS before and after each norm"><thead>
        <tr><th></th><th>mean</th><th>std</th><th>RMS</th><th>values</th></tr></thead><tbody class="stats"></tbody></table>
      <div class="title">Pre-norm versus post-norm: the residual stream with depth</div>
      <div class="controls">
        <label>Layers <input name="depth" type="range" min="1" max="64" step="1"><output></output></label>
        <label>Width d <select name="d_model"><option>16</option><option selected>32</option><option>64</option></select><span></span></label>
      </div>
      <div class="chart"></div>
      <div class="summary"></div>`;
  }

  setup() {
    this.field("vector").value = this.getAttribute("vector") ?? "1, 2, 3, 10, -2, 0.5";
    this.field("eps").value = "0.00001";
    this.field("seed").value = "0";
    this.field("depth").value = this.getAttribute("depth") ?? "24";
    for (const el of this.shadowRoot.querySelectorAll("input, select")) el.addEventListener("input", () => this.update());
    this.field("random").addEventListener("click", () => this.randomise());
  }

  /** Replace x by a random vector (8 entries, mean 3, std 2) drawn with the seed. */
  async randomise() {
    try {
      const seed = parseInteger(this.field("seed").value, { label: "The seed", min: 0, max: 2 ** 31 - 1 });
      const x = await callDemo("norms", "random_vector", { d: 8, seed, mean: 3, std: 2 });
      this.field("vector").value = x.map((v) => v.toFixed(3)).join(", ");
      this.update();
    } catch (err) {
      this.showError(err, { retry: () => this.randomise() });
    }
  }

  request() {
    const x = parseVector(this.field("vector").value);
    const eps = Number(this.field("eps").value);
    if (!(eps > 0 && eps <= 1)) throw new InputError("ε must be a small positive number (at most 1).", "eps");
    const seed = parseInteger(this.field("seed").value, { label: "The seed", min: 0, max: 2 ** 31 - 1 });
    const depth = parseInteger(this.field("depth").value, { label: "Layers", min: 1, max: 64 });
    const d_model = Number(parseSelect(this.field("d_model"), { label: "Width d" }));
    return { x, eps, seed, depth, d_model };
  }

  echo(request) {
    this.$('[name="depth"] + output').textContent = String(request.depth);
  }

  compute(request) {
    return Promise.all([
      callDemo("norms", "compare_norms", { x: request.x, eps: request.eps }),
      callDemo("norms", "residual_stream_growth", { depth: request.depth, d_model: request.d_model, seed: request.seed, eps: request.eps }),
    ]);
  }

  draw([norms, growth]) {
    const fmt = (v) => (Math.abs(v) < 5e-13 ? "0" : v.toFixed(4));
    this.$(".stats").innerHTML = ROWS.map(([key, label]) => {
      const s = norms[key];
      return `<tr data-norm="${key}" data-mean="${s.mean}" data-std="${s.std}" data-rms="${s.rms}">
        <td>${label}</td><td>${fmt(s.mean)}</td><td>${fmt(s.std)}</td><td>${fmt(s.rms)}</td>
        <td class="values">${s.values.map((v) => v.toFixed(2)).join(", ")}</td></tr>`;
    }).join("");
    this.$(".chart").innerHTML = depthChart(growth);
    const last = growth.layer.length - 1;
    this.$(".summary").textContent =
      `After ${last} layers the pre-norm stream has RMS ${growth.pre_norm.rms[last].toFixed(2)}` +
      ` (it started at ${growth.pre_norm.rms[0].toFixed(2)}); post-norm renormalises after every layer and stays at` +
      ` ${growth.post_norm.rms[last].toFixed(2)}. The last pre-norm update was ${(100 * growth.pre_norm.update_ratio[last - 1]).toFixed(0)}%` +
      " of the stream it was added to.";
  }
}

define("tx-norms", TxNorms);
