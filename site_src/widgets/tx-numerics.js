/**
 * <tx-numerics>: floating-point addition is not associative, and what that does to
 * batched inference at temperature 0.
 *
 * Attributes (all optional):
 *   n       how many numbers to sum, default 1000
 *   dtype   "float16", "float32" (default) or "float64"
 *   seed    default 0
 *   orders  how many summation orders to try, default 200
 *
 * Three panels, computed by `demos.numerics.sum_orders`, `batch_sums` and `argmax_flip`
 * in the Pyodide worker: the distinct sums of the same numbers in different orders
 * (a bar chart in ulps plus a table), the same row reduced inside batches of different
 * sizes, and an argmax that flips with the batch size. Values carry full precision in
 * `data-value` / `data-count` / `data-logits` / `data-argmax`; `data-request` on the
 * element is the JSON of the arguments shown.
 */
import { callDemo } from "../runtime/python.js";
import { attributeValues, escapeHtml } from "./base.js";
import { InputError, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const DIGITS = { float16: 5, float32: 9, float64: 17 }; // enough to tell adjacent numbers apart
const ORDER_NAMES = {
  original: "as drawn",
  ascending: "smallest value first",
  descending: "largest value first",
  small_to_large: "smallest magnitude first",
  large_to_small: "largest magnitude first",
  pairwise: "NumPy's np.sum (pairwise tree)",
};
const LIMITS = { n: [2, 100000], seed: [0, 2 ** 31 - 1], orders: [1, 1000] };

const STYLE = `
  .controls input[type=number], .controls select { font: inherit; width: 100%; box-sizing: border-box; }
  h3 { font-size: 1em; margin: 0.9em 0 0.3em; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin: 0.3em 0; }
  th, td { text-align: left; padding: 0.12em 0.5em; border-bottom: 1px solid var(--tx-border); }
  td.num, th.num { text-align: right; }
  td.num { font-family: var(--md-code-font-family, monospace); }
  tr.flipped td { font-weight: 700; }
  .note { margin: 0.3em 0; }
  svg { width: 100%; max-width: 560px; height: auto; display: block; }
  svg text { font-size: 11px; fill: var(--tx-fg); }
  svg .axis { stroke: var(--tx-muted); stroke-width: 1; }
  svg .count { fill: var(--tx-accent); }
  svg .exact { stroke: var(--tx-fg); stroke-dasharray: 3 3; }
  details summary { cursor: pointer; }
`;

function fmt(value, dtype) {
  return Number(value).toPrecision(DIGITS[dtype] ?? 17);
}

function fmtUlps(u) {
  const s = u.toFixed(Math.abs(u) < 10 ? 2 : 1);
  return u > 0 ? `+${s}` : s;
}

function fmtSmall(x) {
  return x === 0 ? "0" : x.toExponential(2);
}

/** Bars of distinct sums: x = error in ulps, height = how many orders gave that sum. */
function histogram(distinct) {
  const [W, H, L, R, T, B] = [560, 170, 40, 12, 14, 40];
  const xs = distinct.map((d) => d.error_ulps);
  let lo = Math.min(0, ...xs),
    hi = Math.max(0, ...xs);
  if (hi - lo < 1) {
    lo -= 0.5;
    hi += 0.5;
  }
  const pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  const maxCount = Math.max(...distinct.map((d) => d.count));
  const x = (u) => L + ((u - lo) / (hi - lo)) * (W - L - R);
  const y = (c) => H - B - (c / maxCount) * (H - B - T);
  const barW = Math.max(2, Math.min(12, (W - L - R) / (distinct.length * 2)));
  const bars = distinct
    .map(
      (d) =>
        `<rect class="count" x="${(x(d.error_ulps) - barW / 2).toFixed(1)}" y="${y(d.count).toFixed(1)}" width="${barW.toFixed(1)}"
       height="${(H - B - y(d.count)).toFixed(1)}"><title>${d.count} order${d.count > 1 ? "s" : ""} gave ${d.value} (${fmtUlps(d.error_ulps)} ulps)</title></rect>`,
    )
    .join("");
  const ticks = [lo + pad, 0, hi - pad]
    .filter((v, i, a) => a.indexOf(v) === i)
    .map(
      (u) =>
        `<line class="axis" x1="${x(u)}" x2="${x(u)}" y1="${H - B}" y2="${H - B + 4}"/>
     <text x="${x(u)}" y="${H - B + 16}" text-anchor="middle">${u === 0 ? "0" : fmtUlps(u)}</text>`,
    )
    .join("");
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="Bar chart: ${distinct.length} distinct sums, from ${fmtUlps(xs[0])} to ${fmtUlps(xs[xs.length - 1])} ulps away from the exact sum; the table below lists them">
    <line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>
    <line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>
    <text x="${L - 6}" y="${T + 4}" text-anchor="end">${maxCount}</text>
    <text x="${L - 6}" y="${H - B}" text-anchor="end">0</text>
    <text x="12" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(T + H - B) / 2})">orders</text>
    <line class="exact" x1="${x(0)}" x2="${x(0)}" y1="${T - 6}" y2="${H - B}"/>
    <text x="${x(0) + 4}" y="${T}" >exact</text>
    ${bars}${ticks}
    <text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">error of the computed sum, in ulps (steps between adjacent numbers)</text>
  </svg>`;
}

class TxNumerics extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Same numbers, different sums</div>
      <div class="controls">
        <label>Numbers <input name="n" type="number" min="2" max="100000" step="1"><output></output></label>
        <label>Type <select name="dtype"><option>float16</option><option>float32</option><option>float64</option></select><output></output></label>
        <label>Seed <input name="seed" type="number" min="0" step="1"><output></output></label>
        <label>Orders <input name="orders" type="number" min="1" max="1000" step="1"><output></output></label>
      </div>
      <section class="orders"><h3>1. One set of numbers, many orders of addition</h3><p class="note orders-summary"></p>
        <div class="chart"></div>
        <table class="named scroll"><thead><tr><th>order</th><th class="num">sum</th><th class="num">error (ulps)</th></tr></thead><tbody></tbody></table>
        <details><summary>Every distinct sum</summary>
          <table class="distinct scroll"><thead><tr><th class="num">sum</th><th class="num">error (ulps)</th><th class="num">orders</th></tr></thead><tbody></tbody></table>
        </details></section>
      <section class="batch"><h3>2. One row, reduced inside batches of different sizes</h3><p class="note batch-summary"></p>
        <table class="batch-table scroll"><thead><tr><th class="num">batch size</th><th class="num">chunks per row</th><th class="num">sum of the same row</th><th class="num">error (ulps)</th></tr></thead><tbody></tbody></table></section>
      <section class="flip"><h3>3. Temperature 0, two answers</h3><p class="note flip-summary"></p>
        <table class="flip-table scroll"><thead><tr><th class="num">batch size</th><th class="num">logit “yes”</th><th class="num">logit “no”</th><th class="num">no − yes</th><th>greedy picks</th></tr></thead><tbody></tbody></table></section>`;
  }

  setup() {
    const initial = attributeValues(this, { n: "1000", dtype: "float32", seed: "0", orders: "200" });
    for (const el of this.shadowRoot.querySelectorAll(".controls input, .controls select")) {
      const select = el.tagName === "SELECT";
      this.wire({ [el.name]: initial[el.name] }, { on: select ? "change" : "input", run: () => this.updateSoon(select ? 0 : 300) });
    }
  }

  /** The controls as numbers; a readable Error for anything out of range. */
  request() {
    const get = (name) => this.field(name).value.trim();
    const out = { dtype: parseSelect(this.field("dtype"), { label: "The type" }) };
    for (const [name, [lo, hi]] of Object.entries(LIMITS)) {
      const text = get(name);
      const label = { n: "Numbers", seed: "Seed", orders: "Orders" }[name];
      if (!/^\d+$/.test(text) || Number(text) < lo || Number(text) > hi) {
        throw new InputError(`${label} must be a whole number from ${lo.toLocaleString("en")} to ${hi.toLocaleString("en")}.`, name);
      }
      out[name] = Number(text);
    }
    if (out.n * out.orders > 2_000_000) throw new InputError("Numbers × orders must be at most 2,000,000.", "orders");
    return out;
  }

  async compute(r) {
    const orders = await callDemo("numerics", "sum_orders", { n: r.n, dtype: r.dtype, seed: r.seed, num_orders: r.orders });
    const batch = await callDemo("numerics", "batch_sums", { dtype: r.dtype, seed: r.seed });
    const flip = await callDemo("numerics", "argmax_flip", { seed: r.seed });
    return { orders, batch, flip };
  }

  draw({ orders, batch, flip }) {
    this.renderOrders(orders);
    this.renderBatch(batch);
    this.renderFlip(flip);
  }

  renderOrders(o) {
    const dt = o.dtype;
    this.$(".orders-summary").textContent =
      `${o.n.toLocaleString("en")} numbers drawn from a standard normal distribution and rounded to ${dt}. ` +
      `Their exact sum is ${fmt(o.exact, "float64")}; one ulp of ${dt} there is ${fmtSmall(o.ulp)}. ` +
      `Added left to right in ${o.sums.length} different orders, they give ${o.num_distinct} different ${dt} results, ` +
      `spread over ${fmtSmall(o.spread)} (${o.spread_ulps.toFixed(0)} ulps).`;
    this.$(".orders").dataset.exact = String(o.exact);
    this.$(".orders").dataset.numDistinct = String(o.num_distinct);
    this.$(".chart").innerHTML = histogram(o.distinct);
    this.$(".named tbody").innerHTML = Object.entries(o.named)
      .map(
        ([name, e]) =>
          `<tr data-order="${name}" data-value="${e.value}"><td>${escapeHtml(ORDER_NAMES[name] || name)}</td>
        <td class="num">${fmt(e.value, dt)}</td><td class="num">${fmtUlps(e.error_ulps)}</td></tr>`,
      )
      .join("");
    this.$(".distinct tbody").innerHTML = o.distinct
      .map(
        (d) =>
          `<tr data-value="${d.value}" data-count="${d.count}"><td class="num">${fmt(d.value, dt)}</td>
        <td class="num">${fmtUlps(d.error_ulps)}</td><td class="num">${d.count}</td></tr>`,
      )
      .join("");
  }

  renderBatch(b) {
    this.$(".batch-summary").textContent =
      `A row of ${b.n.toLocaleString("en")} ${b.dtype} numbers. The kernel shares 64 workers among the rows ` +
      `of a batch, so a row alone is cut into 64 chunks and a row in a batch of 64 or more is summed in one piece. ` +
      `The row never changes, yet it gets ${b.num_distinct} different sums.`;
    this.$(".batch").dataset.numDistinct = String(b.num_distinct);
    this.$(".batch-table tbody").innerHTML = b.rows
      .map(
        (row) =>
          `<tr data-batch-size="${row.batch_size}" data-value="${row.value}"><td class="num">${row.batch_size}</td><td class="num">${row.splits}</td>
        <td class="num">${fmt(row.value, b.dtype)}</td><td class="num">${fmtUlps(row.error_ulps)}</td></tr>`,
      )
      .join("");
  }

  renderFlip(f) {
    const [yes, no] = f.exact_logits;
    const sign = f.exact_difference > 0 ? "+" : "";
    const winner = f.tokens[f.exact_argmax];
    this.$(".flip-summary").textContent =
      `Two candidate tokens whose exact logits (d = ${f.d}) differ by only ` +
      `${sign}${fmtSmall(f.exact_difference)}: exactly, “${winner.trim()}” wins. That gap is smaller than one float32 step at ` +
      `this size (${fmtSmall(f.ulp)}), so the rounding of the same kernel decides, and it depends on the batch. ` +
      `Exact logits: “yes” ${fmt(yes, "float64")}, “no” ${fmt(no, "float64")}.`;
    this.$(".flip").dataset.exactArgmax = String(f.exact_argmax);
    this.$(".flip-table tbody").innerHTML = f.rows
      .map(
        (row) =>
          `<tr class="${row.argmax !== f.exact_argmax ? "flipped" : ""}" data-batch-size="${row.batch_size}"
          data-logits="${escapeHtml(JSON.stringify(row.logits))}" data-argmax="${row.argmax}">
        <td class="num">${row.batch_size}</td><td class="num">${fmt(row.logits[0], "float32")}</td><td class="num">${fmt(row.logits[1], "float32")}</td>
        <td class="num">${fmtSmall(row.difference)}</td><td>“${escapeHtml(row.token.trim())}”${row.argmax !== f.exact_argmax ? " (not the exact winner)" : ""}</td></tr>`,
      )
      .join("");
  }
}

define("tx-numerics", TxNumerics);
