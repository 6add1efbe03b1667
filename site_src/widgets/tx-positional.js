/**
 * <tx-positional>: the sinusoidal position table and the similarity of its rows.
 *
 * Attributes (all optional):
 *   d-model   even width, default 32
 *   length    number of positions drawn, default 32
 *   p, q, k   the readout's positions and shift, default 3, 8, 5
 *
 * Computed by `demos.positional.sinusoidal_view`. Every heat-map cell carries its value
 * in `data-value`; the readout shows PE[p]·PE[q] next to PE[p+k]·PE[q+k] (`data-dot`,
 * `data-shifted-dot`, `data-closed-form`). Clicking a similarity cell picks p and q.
 */
import { callDemo } from "../runtime/python.js";
import { divergingColour } from "./format.js";
import { gridStep } from "./grid.js";
import { parseInteger } from "./inputs.js";
import { FIGURE_CSS, TxLab } from "./lab.js";
import { define } from "./widget.js";

const STYLE = `
  .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; }
  .maps { display: grid; grid-template-columns: repeat(auto-fit, minmax(16em, 1fr)); gap: 1em; }
${FIGURE_CSS}
  svg text { font-size: 9px; fill: var(--tx-muted); }
  svg rect.cell { shape-rendering: crispEdges; }
  svg rect.cell:focus { outline: 2px solid var(--tx-fg); stroke: var(--tx-fg); stroke-width: 1.5; }
  svg .mark { fill: none; stroke: var(--tx-fg); stroke-width: 1.5; }
  svg .mark.shifted { stroke-dasharray: 3 2; }
  .readout { display: grid; grid-template-columns: auto 1fr; gap: 0.1em 1em; margin-top: 0.6em; font-variant-numeric: tabular-nums; }
  .readout dt { color: var(--tx-muted); }
  .readout dd { margin: 0; }
  .hover { min-height: 1.3em; color: var(--tx-muted); }
`;

/**
 * An SVG heat map of a matrix (rows × cols), with axis titles; `scale` maps values to [-1, 1].
 * The cell `focus` [row, col] is the map's one tab stop; arrow keys move from there.
 */
function heatmap(matrix, { scale, rowTitle, colTitle, kind, label, focus = [0, 0] }) {
  const rows = matrix.length;
  const cols = matrix[0].length;
  const cell = Math.max(2, Math.min(10, Math.floor(320 / Math.max(rows, cols))));
  const left = 22;
  const top = 4;
  const width = left + cols * cell + 4;
  const height = top + rows * cell + 22;
  const [fi, fj] = [Math.min(focus[0], rows - 1), Math.min(focus[1], cols - 1)];
  const rects = matrix
    .map((row, i) =>
      row
        .map(
          (v, j) => `<rect class="cell" x="${left + j * cell}" y="${top + i * cell}"
    width="${cell}" height="${cell}" fill="${divergingColour(v / scale)}" data-row="${i}" data-col="${j}" data-value="${v}"${i === fi && j === fj ? ' tabindex="0"' : ""}></rect>`,
        )
        .join(""),
    )
    .join("");
  return `<svg viewBox="0 0 ${width} ${height}" role="group" aria-label="${label}; arrow keys move between cells" data-kind="${kind}"
    data-rows="${rows}" data-cols="${cols}" data-cell="${cell}" data-left="${left}" data-top="${top}">
    ${rects}<g class="marks"></g>
    <text x="${left}" y="${height - 6}">${colTitle} →</text>
    <text transform="translate(10 ${top}) rotate(90)">${rowTitle} →</text></svg>`;
}

class TxPositional extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Sinusoidal position vectors</div>
      <div class="controls">
        <label>Width d <input name="d_model" type="range" min="2" max="128" step="2"><output></output></label>
        <label>Positions <input name="n_positions" type="range" min="2" max="64" step="1"><output></output></label>
        <label>p <input name="p" type="number" min="0" step="1"><span></span></label>
        <label>q <input name="q" type="number" min="0" step="1"><span></span></label>
        <label>shift k <input name="k" type="number" step="1"><span></span></label>
      </div>
      <div class="maps">
        <figure><figcaption>The table PE: one row per position, one column per dimension (blue −1, white 0, orange +1)</figcaption><div class="table-map"></div></figure>
        <figure><figcaption>Dot products PE[m]·PE[n] (scaled by d/2). Click a cell, or press Enter on it, to pick p and q.</figcaption><div class="sim-map"></div></figure>
      </div>
      <div class="hover" aria-live="polite"></div>
      <dl class="readout" aria-live="polite"></dl>`;
  }

  setup() {
    const attr = (name, fallback) => this.getAttribute(name) ?? fallback;
    this.wire({ d_model: attr("d-model", "32"), n_positions: attr("length", "32"), p: attr("p", "3"), q: attr("q", "8"), k: attr("k", "5") });
    this.focused = {}; // kind -> [row, col] of the map's tab stop
    this.$(".maps").addEventListener("click", (event) => this.pick(event.target.closest("svg[data-kind=similarity] rect.cell")));
    this.$(".maps").addEventListener("mouseover", (event) => this.describe(event.target.closest("rect.cell")));
    this.$(".maps").addEventListener("focusin", (event) => this.describe(event.target.closest("rect.cell")));
    this.$(".maps").addEventListener("keydown", (event) => this.moveFocus(event));
  }

  request() {
    const value = (name) => this.field(name).value;
    const request = {
      d_model: parseInteger(value("d_model"), { label: "The width d", min: 2, max: 128 }),
      n_positions: parseInteger(value("n_positions"), { label: "Positions", min: 2, max: 64 }),
      p: parseInteger(value("p"), { label: "p", min: 0, max: 1_000_000 }),
      q: parseInteger(value("q"), { label: "q", min: 0, max: 1_000_000 }),
    };
    request.k = parseInteger(value("k"), { label: "The shift k", min: -Math.min(request.p, request.q), max: 1_000_000 });
    return request;
  }

  echo(request) {
    this.$('[name="d_model"] + output').textContent = String(request.d_model);
    this.$('[name="n_positions"] + output').textContent = String(request.n_positions);
  }

  compute(request) {
    return callDemo("positional", "sinusoidal_view", request);
  }

  draw(view) {
    this.view = view;
    const half = view.d_model / 2;
    this.$(".table-map").innerHTML = heatmap(view.table, {
      scale: 1,
      rowTitle: "position",
      colTitle: "dimension",
      kind: "table",
      label: `Sinusoidal table, ${view.n_positions} positions by ${view.d_model} dimensions`,
      focus: this.focused.table,
    });
    this.$(".sim-map").innerHTML = heatmap(view.similarity, {
      scale: half,
      rowTitle: "position m",
      colTitle: "position n",
      kind: "similarity",
      label: `Dot products between the ${view.n_positions} position vectors, largest, ${half}, on the diagonal; Enter picks p and q`,
      focus: this.focused.similarity ?? [view.readout.p, view.readout.q],
    });
    if (this.refocus) {
      // the cell the reader picked with Enter, drawn again
      this.$(`.sim-map rect.cell[tabindex="0"]`)?.focus();
      this.refocus = false;
    }
    this.markCells(view.readout);
    const r = view.readout;
    const num = (x) => x.toFixed(6);
    this.$(".readout").innerHTML = `
      <dt>PE[${r.p}] · PE[${r.q}]</dt><dd data-dot="${r.dot}">${num(r.dot)}</dd>
      <dt>PE[${r.p + r.k}] · PE[${r.q + r.k}]</dt><dd data-shifted-dot="${r.shifted_dot}">${num(r.shifted_dot)}</dd>
      <dt>Σ<sub>i</sub> cos((${r.offset}) ω<sub>i</sub>)</dt><dd data-closed-form="${r.closed_form}">${num(r.closed_form)}</dd>
      <dt>difference</dt><dd data-difference="${r.difference}">${r.difference.toExponential(1)}: the dot product depends only on p − q = ${r.offset}</dd>`;
  }

  /** Outline the cells (p, q) and (p + k, q + k) on the similarity map when they are drawn. */
  markCells({ p, q, k }) {
    const svg = this.$(".sim-map svg");
    const { cell, left, top } = svg.dataset;
    const n = this.view.n_positions;
    const box = (i, j, cls) =>
      i < n && j < n ? `<rect class="mark ${cls}" x="${Number(left) + j * cell}" y="${Number(top) + i * cell}" width="${cell}" height="${cell}"></rect>` : "";
    svg.querySelector(".marks").innerHTML = box(p, q, "") + box(p + k, q + k, "shifted");
  }

  /** Click, Enter or Space on a similarity cell: its row and column become p and q. */
  pick(rect) {
    if (!rect) return;
    this.$('[name="p"]').value = rect.dataset.row;
    this.$('[name="q"]').value = rect.dataset.col;
    this.focused.similarity = [Number(rect.dataset.row), Number(rect.dataset.col)];
    this.refocus = this.shadowRoot.activeElement === rect;
    this.update();
  }

  /** Arrow keys, Home and End move between the cells of a map (one tab stop per map). */
  moveFocus(event) {
    const rect = event.target.closest("rect.cell");
    if (!rect) return;
    const svg = rect.closest("svg");
    if ((event.key === "Enter" || event.key === " ") && svg.dataset.kind === "similarity") {
      event.preventDefault();
      this.pick(rect);
      return;
    }
    const step = gridStep(event.key, Number(rect.dataset.row), Number(rect.dataset.col), Number(svg.dataset.rows), Number(svg.dataset.cols));
    if (!step) return;
    const [i, j] = step;
    event.preventDefault();
    const next = svg.querySelector(`rect.cell[data-row="${i}"][data-col="${j}"]`);
    rect.removeAttribute("tabindex");
    next.setAttribute("tabindex", "0");
    next.focus();
    this.focused[svg.dataset.kind] = [i, j];
  }

  describe(rect) {
    if (!rect) return;
    const { kind } = rect.closest("svg").dataset;
    const v = Number(rect.dataset.value).toFixed(4);
    this.$(".hover").textContent =
      kind === "table" ? `PE[${rect.dataset.row}, ${rect.dataset.col}] = ${v}` : `PE[${rect.dataset.row}] · PE[${rect.dataset.col}] = ${v}`;
  }
}

define("tx-positional", TxPositional);
