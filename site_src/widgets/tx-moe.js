/**
 * <tx-moe>: routing collapse and the load-balancing loss in a toy router.
 *
 * Attributes (all optional):
 *   experts   number of experts, default 8
 *   top-k     experts per token, default 1
 *   balance   present: start with the balancing loss on
 *
 * Computed by `demos.moe.routing_collapse`. The bar chart shows the load of every expert
 * at the chosen step: each bar carries `data-expert` and `data-load` (its fraction of the
 * routing slots); the element carries `data-step`, `data-max-load` and `data-aux-loss` for
 * that step. The line chart shows the largest load at every step.
 */
import { callDemo } from "../runtime/python.js";
import { InputError, parseInteger, parseSelect } from "./inputs.js";
import { FIGURE_CSS, TxLab } from "./lab.js";
import { define } from "./widget.js";

const STYLE = `
  .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(16em, 1fr)); gap: 1em; }
${FIGURE_CSS}
  svg text { font-size: 10px; fill: var(--tx-muted); }
  svg rect.load { fill: var(--tx-accent); }
  svg .fair { stroke: #c62828; stroke-dasharray: 4 3; }
  svg .axis { stroke: var(--tx-border); }
  svg .max { stroke: var(--tx-accent); fill: none; stroke-width: 2; }
  svg .now { stroke: var(--tx-fg); }
`;

/** Bars of the load per expert at one step, with the fair share 1/N as a dashed line. */
function loadBars(load, fair) {
  const [W, H, L, R, T, B] = [360, 200, 36, 8, 10, 30];
  const top = Math.max(1.5 * fair, ...load) * 1.05;
  const band = (W - L - R) / load.length;
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const bars = load
    .map(
      (v, e) => `
    <rect class="load" x="${L + e * band + band * 0.15}" y="${y(v)}" width="${band * 0.7}" height="${H - B - y(v)}"
      data-expert="${e}" data-load="${v}"><title>expert ${e + 1}: ${(100 * v).toFixed(1)}% of the routing slots</title></rect>
    <text x="${L + (e + 0.5) * band}" y="${H - B + 12}" text-anchor="middle">${e + 1}</text>
    <text x="${L + (e + 0.5) * band}" y="${y(v) - 2}" text-anchor="middle">${Math.round(100 * v)}</text>`,
    )
    .join("");
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="Load per expert in percent: ${load.map((v, e) => `expert ${e + 1} ${(100 * v).toFixed(1)}`).join(", ")}">
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"></line>${bars}
    <line class="fair" x1="${L}" x2="${W - R}" y1="${y(fair)}" y2="${y(fair)}"></line>
    <text x="${W - R}" y="${y(fair) - 3}" text-anchor="end">fair share ${(100 * fair).toFixed(1)}%</text>
    <text x="${L - 4}" y="${y(top) + 8}" text-anchor="end">${Math.round(100 * top)}%</text>
    <text x="${L - 4}" y="${H - B}" text-anchor="end">0</text>
    <text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">expert</text></svg>`;
}

/** The largest load at every step, with a marker at the step shown in the bars. */
function maxLine(maxLoad, fair, step) {
  const [W, H, L, R, T, B] = [360, 200, 36, 8, 10, 30];
  const n = maxLoad.length;
  const x = (i) => L + (n === 1 ? 0 : (i / (n - 1)) * (W - L - R));
  const y = (v) => T + (1 - v) * (H - T - B);
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="Largest expert load per step, from ${(100 * maxLoad[0]).toFixed(1)}% to ${(100 * maxLoad[n - 1]).toFixed(1)}%">
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"></line>
    <line class="fair" x1="${L}" x2="${W - R}" y1="${y(fair)}" y2="${y(fair)}"></line>
    <polyline class="max" points="${maxLoad.map((v, i) => `${x(i)},${y(v)}`).join(" ")}"></polyline>
    <line class="now" x1="${x(step)}" x2="${x(step)}" y1="${T}" y2="${H - B}"></line>
    <text x="${L - 4}" y="${T + 8}" text-anchor="end">100%</text><text x="${L - 4}" y="${H - B}" text-anchor="end">0</text>
    <text x="${L}" y="${H - B + 12}">0</text><text x="${W - R}" y="${H - B + 12}" text-anchor="end">${n - 1}</text>
    <text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">training step</text></svg>`;
}

class TxMoe extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Routing collapse and the load-balancing loss</div>
      <div class="controls">
        <label>Experts N <select name="num_experts"><option>4</option><option>8</option><option>16</option><option>32</option></select><span></span></label>
        <label>Top-k <select name="top_k"><option>1</option><option>2</option><option>3</option></select><span></span></label>
        <label>Balancing loss <input name="balance" type="checkbox"><span></span></label>
        <label>α <input name="alpha" type="range" min="0.1" max="2" step="0.1"><output></output></label>
        <label>Steps <input name="steps" type="range" min="10" max="200" step="10"><output></output></label>
        <label>Seed <input name="seed" type="number" min="0" step="1"><span></span></label>
        <label>Show step <input name="show" type="range" min="0" step="1"><output></output></label>
      </div>
      <div class="charts">
        <figure><figcaption>Share of the routing slots per expert at the shown step</figcaption><div class="bars"></div></figure>
        <figure><figcaption>Largest share at each step (dashed: the fair share 1/N)</figcaption><div class="line"></div></figure>
      </div>
      <div class="summary" aria-live="polite"></div>`;
  }

  setup() {
    this.wire(
      {
        num_experts: this.getAttribute("experts") ?? "8",
        top_k: this.getAttribute("top-k") ?? "1",
        balance: this.hasAttribute("balance"),
        alpha: "0.5",
        steps: "60",
        seed: "0",
      },
      { run: () => this.update(true) },
    );
    this.field("show").addEventListener("input", () => this.show());
  }

  /** The first update shows the last step. */
  start() {
    this.update(true);
  }

  request() {
    const value = (name) => this.field(name).value;
    const request = {
      num_experts: Number(parseSelect(this.field("num_experts"), { label: "Experts N" })),
      top_k: Number(parseSelect(this.field("top_k"), { label: "Top-k" })),
      balance: this.field("balance").checked,
      alpha: Number(value("alpha")),
      steps: Number(value("steps")),
      seed: parseInteger(value("seed"), { label: "The seed", min: 0, max: 2 ** 32 - 1 }),
    };
    if (request.top_k >= request.num_experts) throw new InputError("Top-k must be smaller than the number of experts.", "top_k");
    return request;
  }

  echo(request) {
    this.$('[name="alpha"] + output').textContent = request.balance ? request.alpha.toFixed(1) : "off";
    this.$('[name="steps"] + output').textContent = String(request.steps);
  }

  compute(request) {
    return callDemo("moe", "routing_collapse", request);
  }

  /** `toEnd`: move the "Show step" slider to the last step (the routing's inputs changed). */
  draw(result, request, toEnd) {
    this.result = result;
    const show = this.field("show");
    show.max = String(request.steps - 1);
    if (toEnd) show.value = show.max;
    this.show();
  }

  /** Draw the step chosen with the "Show step" slider. */
  show() {
    const r = this.result;
    if (!r) return;
    const step = Math.min(Number(this.$('[name="show"]').value), r.load.length - 1);
    this.$('[name="show"] + output').textContent = String(step);
    Object.assign(this.dataset, { step: String(step), maxLoad: String(r.max_load[step]), auxLoss: String(r.aux_loss[step]) });
    this.$(".bars").innerHTML = loadBars(r.load[step], r.uniform_load);
    this.$(".line").innerHTML = maxLine(r.max_load, r.uniform_load, step);
    const idle = r.load[step].filter((v) => v === 0).length;
    this.$(".summary").textContent =
      `Step ${step}: the busiest expert gets ${(100 * r.max_load[step]).toFixed(1)}% of the slots` +
      ` (${(r.max_load[step] / r.uniform_load).toFixed(2)}× its fair share), ${idle} expert${idle === 1 ? "" : "s"} get none;` +
      ` N·Σ fᵢPᵢ = ${r.aux_loss[step].toFixed(3)} (1 when routing is uniform).`;
  }
}

define("tx-moe", TxMoe);
