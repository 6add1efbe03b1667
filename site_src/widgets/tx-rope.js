/**
 * <tx-rope>: rotary position embeddings, one pair of dimensions at a time.
 *
 * Attributes (all optional):
 *   d        even head width, default 32
 *   pair     which pair of dimensions to draw, default 0
 *   m, n     query and key positions, default 6 and 2
 *   vectors  "ones" (q = k = all ones) or "random", default "ones"
 *
 * Computed by `demos.rope.rope_view`. The rotated pair is drawn in SVG; the line chart
 * shows the cosine between rotated query and key against their distance, and RoFormer's
 * bound. Values are in data-* attributes: `data-score`, `data-relative-score`,
 * `data-theta` on the readout, `data-distance`/`data-similarity`/`data-bound` on the
 * chart points.
 */
import { callDemo } from "../runtime/python.js";
import { parseSelect } from "./inputs.js";
import { FIGURE_CSS, TxLab } from "./lab.js";
import { define } from "./widget.js";

const MAX_DISTANCE = 128;
const STYLE = `
  .views { display: grid; grid-template-columns: minmax(12em, 1fr) minmax(18em, 2fr); gap: 1em; align-items: start; }
  @media (max-width: 40em) { .views { grid-template-columns: 1fr; } }
${FIGURE_CSS}
  svg { overflow: visible; }
  svg text { font-size: 10px; fill: var(--tx-fg); }
  svg .axis { stroke: var(--tx-muted); stroke-width: 0.6; }
  svg .grid { stroke: var(--tx-border); stroke-width: 0.5; }
  svg .q { stroke: var(--tx-accent); stroke-width: 2.2; fill: none; }
  svg .k { stroke: #e6781e; stroke-width: 2.2; fill: none; stroke-dasharray: 5 3; }
  svg .start { stroke: var(--tx-muted); stroke-width: 1; stroke-dasharray: 2 2; fill: none; }
  svg .arc { stroke: var(--tx-fg); stroke-width: 1; fill: none; }
  svg .sim { stroke: var(--tx-accent); stroke-width: 1.6; fill: none; }
  svg .bound { stroke: #e6781e; stroke-width: 1.4; fill: none; stroke-dasharray: 5 3; }
  svg circle.pt { fill: var(--tx-accent); }
  svg .now { stroke: var(--tx-fg); stroke-width: 1; stroke-dasharray: 2 2; }
  .readout { display: grid; grid-template-columns: auto 1fr; gap: 0.1em 1em; margin-top: 0.5em; font-variant-numeric: tabular-nums; }
  .readout dt { color: var(--tx-muted); }
  .readout dd { margin: 0; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
  th, td { padding: 0.1em 0.6em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  details { margin-top: 0.6em; }
  summary { cursor: pointer; }
`;

/** A line from the origin of the circle drawing to (x, y) in data units (y up). */
function arrow(x, y, r, cls) {
  const [px, py] = [x * r, -y * r];
  const angle = Math.atan2(py, px);
  const head = (da) => `${px - 8 * Math.cos(angle + da)},${py - 8 * Math.sin(angle + da)}`;
  return `<path class="${cls}" d="M0,0 L${px},${py} M${head(0.4)} L${px},${py} L${head(-0.4)}"></path>`;
}

class TxRope extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Rotary position embeddings</div>
      <div class="controls">
        <label>Head width d <select name="d"><option>8</option><option>16</option><option>32</option><option>64</option><option>128</option></select><span></span></label>
        <label>Pair i <input name="pair" type="range" min="0" step="1"><output></output></label>
        <label>Query pos. m <input name="m" type="range" min="0" max="${MAX_DISTANCE}" step="1"><output></output></label>
        <label>Key pos. n <input name="n" type="range" min="0" max="${MAX_DISTANCE}" step="1"><output></output></label>
        <label>q and k <select name="vectors"><option value="ones">all ones (q = k)</option><option value="random">random</option></select><span></span></label>
      </div>
      <div class="views">
        <figure><figcaption>Pair i of q (solid) and k (dashed), turned by m·θ<sub>i</sub> and n·θ<sub>i</sub></figcaption><div class="circle"></div></figure>
        <figure><figcaption>cos(angle between rotated q and k) against distance m − n (solid), RoFormer's bound (dashed)</figcaption><div class="chart"></div></figure>
      </div>
      <dl class="readout" aria-live="polite"></dl>
      <details><summary>The curve as a table</summary><table><thead><tr><th>m − n</th><th>cosine</th><th>bound</th></tr></thead><tbody></tbody></table></details>`;
  }

  setup() {
    const attr = (name, fallback) => this.getAttribute(name) ?? fallback;
    this.field("d").value = attr("d", "32");
    this.field("vectors").value = attr("vectors", "ones");
    this.setPairMax();
    for (const [name, value] of [
      ["pair", attr("pair", "0")],
      ["m", attr("m", "6")],
      ["n", attr("n", "2")],
    ]) {
      this.field(name).value = value;
    }
    for (const el of this.shadowRoot.querySelectorAll(".controls [name]")) {
      el.addEventListener(el.tagName === "SELECT" ? "change" : "input", () => {
        if (el.name === "d") this.setPairMax();
        this.update();
      });
    }
  }

  setPairMax() {
    const pair = this.$('[name="pair"]');
    pair.max = String(Number(this.$('[name="d"]').value) / 2 - 1);
    if (Number(pair.value) > Number(pair.max)) pair.value = pair.max;
  }

  request() {
    const value = (name) => this.$(`[name="${name}"]`).value;
    return {
      d: Number(parseSelect(this.$('[name="d"]'), { label: "The head width d" })),
      pair: Number(value("pair")),
      m: Number(value("m")),
      n: Number(value("n")),
      vectors: parseSelect(this.$('[name="vectors"]'), { label: "q and k" }),
      max_distance: MAX_DISTANCE,
    };
  }

  echo(request) {
    for (const name of ["pair", "m", "n"]) this.$(`[name="${name}"] + output`).textContent = String(request[name]);
  }

  compute(request) {
    return callDemo("rope", "rope_view", request);
  }

  draw(view, request) {
    this.renderCircle(view, request);
    this.renderChart(view, request);
    this.renderReadout(view, request);
  }

  renderCircle(v, { m, n, pair }) {
    const r = 70;
    const scale = Math.max(Math.hypot(...v.q_pair), Math.hypot(...v.k_pair)) || 1;
    const unit = (p) => p.map((c) => c / scale);
    const [qx, qy] = unit(v.q_rotated);
    const [kx, ky] = unit(v.k_rotated);
    const [sx, sy] = unit(v.q_pair);
    const angle = (x, y) => Math.atan2(y, x);
    const a0 = angle(kx, ky);
    const a1 = angle(qx, qy);
    let sweep = a1 - a0;
    sweep -= 2 * Math.PI * Math.round(sweep / (2 * Math.PI)); // the short way round
    const arcR = 22;
    const end = [arcR * Math.cos(a1), -arcR * Math.sin(a1)];
    this.$(".circle").innerHTML = `<svg viewBox="-95 -95 190 190" role="img"
        aria-label="Pair ${pair}: the query turned by ${v.angle_q.toFixed(3)} rad, the key by ${v.angle_k.toFixed(3)} rad; between them ${(v.angle_q - v.angle_k).toFixed(3)} rad">
      <circle class="grid" r="${r}" fill="none"></circle>
      <line class="axis" x1="-${r + 10}" x2="${r + 10}"></line><line class="axis" y1="-${r + 10}" y2="${r + 10}"></line>
      <text x="${r + 2}" y="-3">dim ${2 * pair}</text><text x="3" y="-${r + 2}">dim ${2 * pair + 1}</text>
      ${arrow(sx, sy, r, "start")}
      ${arrow(kx, ky, r, "k")}${arrow(qx, qy, r, "q")}
      <path class="arc" d="M${arcR * Math.cos(a0)},${-arcR * Math.sin(a0)} A${arcR},${arcR} 0 0 ${sweep > 0 ? 0 : 1} ${end[0]},${end[1]}"></path>
      <text x="${qx * r * 1.08}" y="${-qy * r * 1.08}">q@${m}</text><text x="${kx * r * 1.08}" y="${-ky * r * 1.08 + 10}">k@${n}</text>
    </svg>`;
  }

  renderChart(v, { m, n }) {
    const [w, h, left, bottom, top] = [360, 190, 34, 24, 8];
    const xs = (d) => left + (d / MAX_DISTANCE) * (w - left - 6);
    const lo = Math.min(0, ...v.similarity, ...v.bound);
    const ys = (y) => top + (1 - (y - lo) / (1 - lo)) * (h - top - bottom);
    const line = (values) => values.map((y, i) => `${i ? "L" : "M"}${xs(i).toFixed(2)},${ys(y).toFixed(2)}`).join("");
    const ticks = [lo, lo / 2, 0, 0.5, 1].filter((t, i, all) => all.indexOf(t) === i && t >= lo);
    const offset = m - n;
    const points = v.distances
      .map(
        (d, i) => `<circle class="pt" r="1.3" cx="${xs(d).toFixed(2)}" cy="${ys(v.similarity[i]).toFixed(2)}"
      data-distance="${d}" data-similarity="${v.similarity[i]}" data-bound="${v.bound[i]}"></circle>`,
      )
      .join("");
    this.$(".chart").innerHTML = `<svg viewBox="0 0 ${w} ${h}" role="img"
        aria-label="Cosine between rotated query and key falls from 1 at distance 0 but rises again at ${v.similarity_rises.length} of ${MAX_DISTANCE} distances: not monotonic">
      ${ticks.map((t) => `<line class="grid" x1="${left}" x2="${w - 6}" y1="${ys(t)}" y2="${ys(t)}"></line><text x="${left - 4}" y="${ys(t) + 3}" text-anchor="end">${t.toFixed(2)}</text>`).join("")}
      <line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${h - bottom}"></line>
      ${[0, 32, 64, 96, 128].map((d) => `<text x="${xs(d)}" y="${h - bottom + 12}" text-anchor="middle">${d}</text>`).join("")}
      <text x="${w - 6}" y="${h - 2}" text-anchor="end">distance m − n →</text>
      <path class="bound" d="${line(v.bound)}"></path><path class="sim" d="${line(v.similarity)}"></path>
      ${offset >= 0 && offset <= MAX_DISTANCE ? `<line class="now" x1="${xs(offset)}" x2="${xs(offset)}" y1="${top}" y2="${h - bottom}"></line>` : ""}
      <g class="points">${points}</g>
    </svg>`;
    this.$("details tbody").innerHTML = v.distances
      .map((d, i) => `<tr><td>${d}</td><td>${v.similarity[i].toFixed(4)}</td><td>${v.bound[i].toFixed(4)}</td></tr>`)
      .join("");
  }

  renderReadout(v, { m, n, pair }) {
    const lo = Math.min(m, n);
    this.$(".readout").innerHTML = `
      <dt>θ<sub>${pair}</sub> = 10000<sup>−2·${pair}/d</sup></dt><dd data-theta="${v.theta}">${v.theta.toPrecision(6)} rad per position</dd>
      <dt>angles m·θ, n·θ</dt><dd>${v.angle_q.toFixed(4)}, ${v.angle_k.toFixed(4)} rad (difference ${(v.angle_q - v.angle_k).toFixed(4)})</dd>
      <dt>this pair's q·k</dt><dd data-pair-score="${v.pair_score}">${v.pair_score.toFixed(6)}</dd>
      <dt>q<sub>${m}</sub> · k<sub>${n}</sub> (all pairs)</dt><dd data-score="${v.score}">${v.score.toFixed(6)}</dd>
      <dt>q<sub>${m - lo}</sub> · k<sub>${n - lo}</sub> (same offset)</dt><dd data-relative-score="${v.relative_score}">${v.relative_score.toFixed(6)}: only m − n = ${v.offset} matters</dd>`;
  }
}

define("tx-rope", TxRope);
