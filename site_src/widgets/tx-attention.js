/**
 * <tx-attention>: the attention-matrix explorer.
 *
 * Attributes (all optional):
 *   sentence  the words to attend over, default "The cat sat on the mat because it was tired"
 *   heads     number of heads, default 2
 *   causal    boolean attribute: start with the causal mask on
 *   padding   number of [PAD] tokens appended, default 0
 *   seed      seed of the toy projection weights, default 0
 *
 * The matrices come from a *source*. The default, `toySource`, calls
 * `demos.attention.explore` in the Pyodide worker (toy embeddings, seeded weights).
 * Another source (e.g. a real model's layer × head attentions) can be plugged in with
 * `element.source = {label, note?, load(request)}` (`note`, if any, is shown under the title), where `load` resolves to
 * `{tokens, is_pad, allowed, heads: [{weights}]}` (weights: T×T, rows = queries).
 *
 * Every cell carries its weight in `data-weight` (full precision) and `data-masked`;
 * masked cells are hatched and read "masked" to screen readers.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { gridStep } from "./grid.js";
import { parseInteger, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const DEFAULT_SENTENCE = "The cat sat on the mat because it was tired";
const MAX_HEADS = 8;
// Up to this many keys fit a phone's width (the cells shrink); a longer sentence's map scrolls.
const KEYS_THAT_FIT = 10;

/** The explorer's own matrices: toy embeddings and seeded weights, computed by demos.attention. */
export const toySource = {
  label: "Toy weights, computed by demos.attention.explore",
  note: "Untrained: each word gets a fixed random vector and the projections are random, so the pattern shows how attention computes, not what a trained model would attend to in this sentence.",
  load({ sentence, heads, causal, padding, seed }) {
    return callDemo("attention", "explore", { sentence, heads, causal, padding, seed });
  },
};

const STYLE = `
  .controls input[type=text] { font: inherit; width: 100%; box-sizing: border-box; padding: 0.2em 0.3em; }
  .controls label.wide { grid-column: 1 / -1; grid-template-columns: 6.5em 1fr; }
  .controls label.check { grid-template-columns: 6.5em auto 1fr; }
  .matrix { overflow-x: auto; --cell: clamp(1.4em, 5.8vw, 2.4em); }
  @media (max-width: 600px) { .grid .row { font-size: 0.9em; } }
  .grid { display: grid; gap: 2px; width: max-content; font-variant-numeric: tabular-nums; }
  .grid .tok { font-family: var(--md-code-font-family, monospace); white-space: nowrap; padding: 0 0.3em; }
  .grid .col { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; align-self: end; padding: 0.3em 0; }
  .grid .row { text-align: right; align-self: center; }
  .grid .pad { font-style: italic; color: var(--tx-muted); }
  /* Cells shrink on a phone so ten keys fit; the border keeps a weight near 0 visible in both schemes. */
  .cell { width: var(--cell); height: var(--cell); border-radius: 2px; box-sizing: border-box;
          border: 1px solid color-mix(in srgb, var(--tx-fg) 28%, transparent);
          display: flex; align-items: center; justify-content: center; font-size: 0.75em; cursor: default;
          background: color-mix(in srgb, var(--tx-accent-text) calc(var(--w) * 100%), var(--md-default-bg-color, #fff)); }
  /* Shown on hover or focus only; not laid out otherwise, so the last column's number does not
     widen the map (on a phone, a map that scrolls sideways by a hidden number). */
  .cell .num { display: none; color: var(--tx-fg); background: var(--md-default-bg-color, #fff); border-radius: 2px; padding: 0 1px; }
  .cell:hover .num, .cell:focus .num { display: inline; }
  .cell:focus { outline: 2px solid var(--tx-fg); outline-offset: 1px; }
  .cell.masked { background: repeating-linear-gradient(45deg, var(--tx-border) 0 2px, transparent 2px 6px); border-style: dashed; }
  .cell.masked .num { display: none; }
  .axis { color: var(--tx-muted); font-size: 0.85em; }
  .readout { min-height: 1.4em; margin-top: 0.5em; }
  .legend { display: flex; gap: 1.2em; align-items: center; flex-wrap: wrap; margin-top: 0.4em; color: var(--tx-muted); }
  .legend .swatch { display: inline-block; width: 1.2em; height: 1.2em; vertical-align: middle; border: 1px solid var(--tx-border); margin-right: 0.3em; }
  .legend .ramp { width: 6em; background: linear-gradient(to right, var(--md-default-bg-color, #fff), var(--tx-accent-text)); }
  .legend .hatch { background: repeating-linear-gradient(45deg, var(--tx-border) 0 2px, transparent 2px 6px); border-style: dashed; }
`;

class TxAttention extends TxLab {
  template() {
    const heads = Array.from({ length: MAX_HEADS }, (_, i) => `<option value="${i + 1}">${i + 1}</option>`).join("");
    return `<style>${STYLE}</style>
      <div class="title">Attention weights <span class="context source"></span></div>
      <div class="controls">
        <label class="wide">Sentence <input name="sentence" type="text" spellcheck="false" autocomplete="off"></label>
        <label>Heads <select name="heads">${heads}</select><output class="width"></output></label>
        <label>Show head <select name="head"></select><span></span></label>
        <label class="check">Causal mask <input name="causal" type="checkbox"><span class="axis">hide later words</span></label>
        <label>Padding <input name="padding" type="range" min="0" max="4" step="1"><output></output></label>
      </div>
      <div class="axis note"></div>
      <div class="axis">Rows: the query (the word that is looking). Columns: the key (the word looked at). Each row sums to 1.</div>
      <div class="matrix"><div class="grid" role="grid"></div></div>
      <div class="readout" aria-live="polite">Hover over or focus a cell (arrow keys move) to read its weight.</div>
      <div class="legend" aria-hidden="true">
        <span><span class="swatch ramp"></span>weight 0 → 1</span>
        <span><span class="swatch hatch"></span>masked: weight exactly 0</span>
      </div>`;
  }

  setup() {
    this._source ??= toySource;
    this.wire({ sentence: this.getAttribute("sentence") ?? DEFAULT_SENTENCE }, { run: () => this.updateSoon(250) });
    this.wire({ heads: this.getAttribute("heads") ?? "2", causal: this.hasAttribute("causal") }, { on: "change" });
    this.wire({ padding: this.getAttribute("padding") ?? "0" });
    this.seed = this.getAttribute("seed") ?? "0"; // checked by request()
    this.selectedHead = 0;
    const head = this.field("head");
    head.addEventListener("change", () => {
      if (head.selectedIndex < 0) {
        // a script chose no head: keep the one shown
        head.value = String(this.selectedHead);
        return;
      }
      this.selectedHead = Number(head.value);
      if (this.result) this.render();
    });
    const grid = this.$(".grid");
    grid.addEventListener("keydown", (event) => this.moveFocus(event));
    grid.addEventListener("focusin", (event) => this.describe(event.target));
    grid.addEventListener("mouseover", (event) => this.describe(event.target.closest(".cell")));
  }

  /** Where the matrices come from; setting it recomputes. */
  get source() {
    return this._source ?? toySource;
  }

  set source(source) {
    this._source = source;
    if (this.mounted) this.update();
  }

  /** Current controls as the request for the source; an InputError for a value it cannot take. */
  request() {
    const input = (name) => this.field(name);
    return {
      sentence: input("sentence").value,
      heads: Number(parseSelect(input("heads"), { label: "Heads" })),
      causal: input("causal").checked,
      padding: parseInteger(input("padding").value, { label: "Padding", min: 0, max: 4, unit: "tokens" }),
      seed: parseInteger(this.seed, { label: "The seed attribute", min: 0, max: 2 ** 32 - 1 }),
    };
  }

  echo(request) {
    this.$('[name="padding"] + output').textContent = String(request.padding);
    this.$(".source").textContent = `(${this.source.label})`;
    this.$(".note").textContent = this.source.note ?? "";
  }

  compute(request) {
    return this.source.load(request);
  }

  draw(result) {
    this.result = result;
    this.fillHeadSelect(result.heads.length);
    this.render();
  }

  fillHeadSelect(count) {
    const select = this.$('[name="head"]');
    this.selectedHead = Math.min(this.selectedHead, count - 1);
    select.innerHTML = Array.from({ length: count }, (_, i) => `<option value="${i}">head ${i + 1} of ${count}</option>`).join("");
    select.value = String(this.selectedHead);
    const { d_model: d, d_head: dh } = this.result;
    this.$(".width").textContent = d && dh ? `${d} = ${count} × ${dh}` : "";
  }

  render() {
    const { tokens, is_pad: isPad = [], allowed, heads } = this.result;
    const weights = heads[this.selectedHead].weights;
    const n = tokens.length;
    this.dataset.head = String(this.selectedHead);
    const grid = this.$(".grid");
    grid.style.gridTemplateColumns = `auto repeat(${n}, var(--cell))`;
    this.$(".matrix").classList.toggle("scroll", n > KEYS_THAT_FIT);
    grid.setAttribute("aria-label", `Attention weights of head ${this.selectedHead + 1}: ${n} queries by ${n} keys`);
    const label = (i) => `${escapeHtml(tokens[i])}${tokens.indexOf(tokens[i]) !== i ? `<sub>${i + 1}</sub>` : ""}`;
    const pad = (i) => (isPad[i] ? " pad" : "");
    const header = `<div role="row" style="display:contents"><span role="columnheader"></span>${tokens
      .map((_, j) => `<span role="columnheader" class="tok col${pad(j)}" data-token="${escapeHtml(tokens[j])}">${label(j)}</span>`)
      .join("")}</div>`;
    const rows = tokens
      .map((_, i) => {
        const cells = tokens
          .map((_, j) => {
            const w = weights[i][j];
            const masked = !allowed[i][j];
            const text = masked ? "masked" : w.toFixed(3);
            return `<div role="gridcell" class="cell${masked ? " masked" : ""}" tabindex="${i === 0 && j === 0 ? 0 : -1}"
          data-row="${i}" data-col="${j}" data-weight="${w}" data-masked="${masked}" style="--w:${masked ? 0 : w}"
          aria-label="${escapeHtml(`${tokens[i]} → ${tokens[j]}: ${text}`)}"><span class="num">${masked ? "" : w.toFixed(2)}</span></div>`;
          })
          .join("");
        return `<div role="row" style="display:contents"><span role="rowheader" class="tok row${pad(i)}">${label(i)}</span>${cells}</div>`;
      })
      .join("");
    grid.innerHTML = header + rows;
  }

  /** Write the focused or hovered cell's numbers into the readout line. */
  describe(cell) {
    if (!cell || !cell.classList.contains("cell")) return;
    const { tokens } = this.result;
    const i = Number(cell.dataset.row);
    const j = Number(cell.dataset.col);
    const w = Number(cell.dataset.weight);
    this.$(".readout").textContent =
      cell.dataset.masked === "true"
        ? `“${tokens[i]}” (query ${i + 1}) may not look at “${tokens[j]}” (key ${j + 1}): masked, weight 0.`
        : `“${tokens[i]}” (query ${i + 1}) gives “${tokens[j]}” (key ${j + 1}) weight ${w.toFixed(4)} (${(100 * w).toFixed(1)}% of its attention).`;
  }

  /** Arrow keys, Home and End move the focus between cells (one tab stop for the grid). */
  moveFocus(event) {
    const cell = event.target.closest(".cell");
    if (!cell) return;
    const n = this.result.tokens.length;
    const step = gridStep(event.key, Number(cell.dataset.row), Number(cell.dataset.col), n, n);
    if (!step) return;
    const [i, j] = step;
    event.preventDefault();
    const next = this.$(`.cell[data-row="${i}"][data-col="${j}"]`);
    cell.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  }
}

define("tx-attention", TxAttention);
