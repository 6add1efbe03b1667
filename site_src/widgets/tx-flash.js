/**
 * <tx-flash>: the online softmax of tiled (FlashAttention-style) attention, tile by tile,
 * and the memory traffic it saves.
 *
 * Attributes (all optional):
 *   tokens   T for the step-through, default 8
 *   block    keys per tile, default 3
 *
 * Q, K (width 4) and V (width 2) are drawn from a seeded generator and rounded to two
 * decimals; the element exposes them as `el.qkv = {q, k, v}`. Computed by
 * `demos.flash.online_softmax_trace` and `demos.flash.memory_traffic`. Each step row
 * carries `data-step`, `data-max`, `data-rescale`, `data-sum`; the output cells carry
 * `data-output` / `data-reference` (JSON lists); the traffic rows carry `data-method`,
 * `data-total` and `data-bytes`.
 */
import { callDemo } from "../runtime/python.js";
import { formatBinaryBytes } from "./format.js";
import { InputError, parseInteger, parseSelect, readNumber } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const D = 4;
const DV = 2;
const STYLE = `
  .controls input[type=number], .controls select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .keys { display: flex; flex-wrap: wrap; gap: 0 0; margin: 0.4em 0 0.6em; font-variant-numeric: tabular-nums; }
  .key { padding: 0.2em 0.35em; border: 1px solid var(--tx-border); text-align: center; min-width: 3.2em; }
  .key small { display: block; color: var(--tx-muted); }
  .key.tile-start { margin-left: 0.45em; }
  .key.done { background: color-mix(in srgb, var(--tx-accent) 18%, transparent); }
  .key.current { outline: 2px solid var(--tx-accent); outline-offset: -2px; font-weight: 700; }
  .key.masked { color: var(--tx-muted); border-style: dashed; text-decoration: line-through; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 0.3em; }
  th, td { padding: 0.1em 0.6em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  tr.current td { font-weight: 700; }
  .result { margin-top: 0.5em; }
  .traffic-row { display: grid; grid-template-columns: minmax(5em, 9em) minmax(3em, 1fr) auto; gap: 0.5em; align-items: center; margin: 2px 0; }
  .traffic-row .value { text-align: right; font-variant-numeric: tabular-nums; }
`;

/** Deterministic numbers in [-2, 2] with two decimals (mulberry32). */
function randomMatrix(rows, cols, seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => Math.round(400 * next() - 200) / 100));
}

const fmt = (v) => (v === -Infinity ? "−∞" : v.toFixed(4));
const vec = (xs) => `(${xs.map((v) => v.toFixed(4)).join(", ")})`;

class TxFlash extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">The online softmax, one tile of keys at a time</div>
      <div class="controls">
        <label>Tokens T <input name="tokens" type="range" min="2" max="16" step="1"><output></output></label>
        <label>Keys per tile <input name="block_k" type="range" min="1" max="16" step="1"><output></output></label>
        <label>Query row <input name="row" type="range" min="0" step="1"><output></output></label>
        <label>Causal mask <input name="causal" type="checkbox" checked><span></span></label>
        <label>Seed <input name="seed" type="number" min="0" step="1"><span></span></label>
        <label>Tiles done <input name="step" type="range" min="1" step="1"><output></output></label>
      </div>
      <div class="keys" role="list" aria-label="Scores of the query row against every key, grouped in tiles"></div>
      <table class="scroll" aria-label="Running statistics after each tile"><thead><tr><th>tile</th><th>keys</th><th>tile max</th>
        <th>running max m</th><th>rescale e^(m_old − m)</th><th>running sum ℓ</th><th>output so far</th></tr></thead>
        <tbody class="steps"></tbody></table>
      <div class="result" aria-live="polite"></div>
      <div class="title" style="margin-top:0.9em">Memory traffic: plain versus tiled attention (one head)</div>
      <div class="controls">
        <label>Sequence T <input name="seq_len" type="number" min="1" step="1"><span></span></label>
        <label>Head width d <input name="d_head" type="number" min="1" step="1"><span></span></label>
        <label>Tile size <select name="tile"><option>16</option><option>32</option><option selected>64</option><option>128</option><option>256</option></select><span></span></label>
        <label>Precision <select name="dtype"><option>float32</option><option selected>float16</option><option>bfloat16</option></select><span></span></label>
      </div>
      <div class="traffic" role="list" aria-label="Elements moved to and from main memory"></div>
      <div class="summary"></div>`;
  }

  setup() {
    this.wire(
      { tokens: this.getAttribute("tokens") ?? "8", block_k: this.getAttribute("block") ?? "3", row: "7", causal: this.field("causal").checked, seed: "1" },
      { run: () => this.update(true) },
    );
    this.wire({ seq_len: "4096", d_head: "64", tile: this.field("tile").value, dtype: this.field("dtype").value }, { run: () => this.update(false) });
    this.field("step").addEventListener("input", () => this.show());
  }

  /** The first update starts the step-through at tile 1. */
  start() {
    this.update(true);
  }

  request() {
    const num = (name) => readNumber(this.field(name).value);
    const T = num("tokens");
    const row = this.field("row");
    row.max = String(T - 1);
    this.field("block_k").max = String(T);
    const field = (name) => this.field(name).value;
    const request = {
      tokens: T,
      block_k: Math.min(num("block_k"), T),
      row: Math.min(num("row"), T - 1),
      causal: this.field("causal").checked,
      seed: parseInteger(field("seed"), { label: "The seed", min: 0, max: 2 ** 31 - 1 }),
      seq_len: parseInteger(field("seq_len"), { label: "The sequence length", min: 1, max: 1_000_000, unit: "tokens" }),
      d_head: parseInteger(field("d_head"), { label: "The head width", min: 1, max: 1024 }),
      tile: Number(parseSelect(this.field("tile"), { label: "The tile size" })),
      dtype: parseSelect(this.field("dtype"), { label: "The precision" }),
    };
    if (request.tile > request.seq_len) throw new InputError("The tile size cannot exceed the sequence length.", "tile");
    return request;
  }

  echo(request) {
    for (const name of ["tokens", "block_k", "row"]) this.$(`[name="${name}"] + output`).textContent = String(request[name]);
  }

  /** The trace of one query row over seeded Q, K, V, and the memory traffic. */
  compute(request) {
    const { tokens: T, seed } = request;
    this.qkv = { q: randomMatrix(T, D, 3 * seed), k: randomMatrix(T, D, 3 * seed + 1), v: randomMatrix(T, DV, 3 * seed + 2) };
    return Promise.all([
      callDemo("flash", "online_softmax_trace", { ...this.qkv, row: request.row, block_k: request.block_k, causal: request.causal }),
      callDemo("flash", "memory_traffic", {
        seq_len: request.seq_len,
        d_head: request.d_head,
        block_q: request.tile,
        block_k: request.tile,
        causal: request.causal,
        dtype: request.dtype,
      }),
    ]);
  }

  /** `restart`: the step-through starts again at tile 1 (the step-through's inputs changed). */
  draw([trace, traffic], request, restart) {
    this.trace = trace;
    this.blockK = request.block_k;
    const step = this.field("step");
    step.max = String(trace.steps.length);
    if (restart || Number(step.value) > trace.steps.length) step.value = "1";
    this.show();
    this.renderTraffic(traffic);
  }

  /** The keys, and the table, after the number of tiles chosen with "Tiles done". */
  show() {
    const t = this.trace;
    if (!t) return;
    const done = Math.min(Number(this.$('[name="step"]').value), t.steps.length);
    this.$('[name="step"] + output').textContent = `${done} of ${t.steps.length}`;
    this.dataset.step = String(done);
    const T = this.qkv.k.length;
    const visible = t.steps.flatMap((s) => s.scores);
    this.$(".keys").innerHTML = Array.from({ length: T }, (_, j) => {
      const tile = t.steps.findIndex((s) => j >= s.keys[0] && j <= s.keys[1]);
      const state = tile < 0 ? "masked" : tile < done - 1 ? "done" : tile === done - 1 ? "current" : "";
      const start = j > 0 && j % this.blockK === 0 ? " tile-start" : "";
      return `<span class="key ${state}${start}" role="listitem" data-key="${j}">${tile < 0 ? "masked" : visible[j].toFixed(2)}<small>key ${j}</small></span>`;
    }).join("");
    this.$(".steps").innerHTML = t.steps
      .slice(0, done)
      .map(
        (s, i) => `
      <tr class="${i === done - 1 ? "current" : ""}" data-step="${i}" data-max="${s.max_after}" data-rescale="${s.rescale}" data-sum="${s.sum_after}">
        <td>${i + 1}</td><td>${s.keys[0]}–${s.keys[1]}</td><td>${fmt(s.tile_max)}</td><td>${fmt(s.max_before)} → ${fmt(s.max_after)}</td>
        <td>${i === 0 ? "— (nothing yet)" : fmt(s.rescale)}</td><td>${fmt(s.sum_after)}</td><td>${vec(s.output_after)}</td></tr>`,
      )
      .join("");
    const last = t.steps[done - 1];
    const finished = done === t.steps.length;
    this.$(".result").innerHTML = finished
      ? `All tiles done: output <span data-output="${JSON.stringify(t.output)}">${vec(t.output)}</span>; plain attention gives
         <span data-reference="${JSON.stringify(t.reference)}">${vec(t.reference)}</span>.`
      : `After ${done} tile${done === 1 ? "" : "s"} the output ${vec(last.output_after)} is the softmax over the keys seen so far; later tiles will rescale it.`;
  }

  renderTraffic(r) {
    const rows = [
      ["naive", "plain (S and P in memory)", r.naive],
      ["tiled", "tiled (scores on chip)", r.tiled],
    ];
    const largest = Math.max(r.naive.total, r.tiled.total);
    this.$(".traffic").innerHTML = rows
      .map(
        ([key, label, m]) => `
      <div class="traffic-row" role="listitem" data-method="${key}" data-total="${m.total}" data-bytes="${m.bytes}" data-score-matrix="${m.score_matrix}">
        <span>${label}</span><span class="bar"><span style="width:${(100 * m.total) / largest}%"></span></span>
        <span class="value">${(m.total / 1e6).toFixed(2)} M elements · ${formatBinaryBytes(m.bytes)}</span></div>`,
      )
      .join("");
    this.$(".summary").textContent =
      `The plain version moves ${(r.naive.score_matrix / 1e6).toFixed(2)} M elements of the score matrix alone;` +
      ` the tiled version moves none and ${r.ratio.toFixed(1)}× less in total, computing ${r.tiles.toLocaleString("en")} tiles.`;
  }
}

define("tx-flash", TxFlash);
