/**
 * <tx-decoding>: greedy decoding, beam search and sampling on a tiny bigram model whose
 * next-word probabilities are a fixed, printed table.
 *
 * Attributes (all optional):
 *   method          "greedy", "beam" (default) or "sample"
 *   beam-width      1 to 8, default 2
 *   max-len         1 to 8, default 6
 *   length-penalty  0 to 2 in steps of 0.25, default 0 (rank by joint probability)
 *
 * Everything is computed by `demos.decoding.decode` (and `model` for the table) in the
 * Pyodide worker. The summary rows carry `data-tokens` (JSON), `data-prob`,
 * `data-logprob` and `data-score` at full precision; every candidate of the search
 * carries `data-tokens`, `data-prob` and `data-kept`. `data-request` on the element is
 * the JSON of the arguments the shown result was computed for.
 */
import { callDemo } from "../runtime/python.js";
import { attributeValues, escapeHtml } from "./base.js";
import { parseInteger, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const SHOWN_PER_STEP = 10;
const METHOD_NAMES = { greedy: "Greedy", beam: "Beam search", sample: "Sampling" };

const STYLE = `
  .controls label[hidden] { display: none; }
  .controls input[type=number], .controls select { font: inherit; width: 100%; box-sizing: border-box; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin: 0.3em 0 0.6em; }
  th, td { text-align: left; padding: 0.15em 0.5em; border-bottom: 1px solid var(--tx-border); vertical-align: top; }
  td.num, th.num { text-align: right; }
  tr.best td:first-child::before { content: "★ "; }
  .seq { font-family: var(--md-code-font-family, monospace); }
  .steps { display: flex; gap: 0.6em; overflow-x: auto; padding-bottom: 0.3em; }
  .step { min-width: 11em; flex: 0 0 auto; }
  .step h4 { margin: 0 0 0.3em; font-size: 0.95em; }
  .step ol { list-style: none; margin: 0; padding: 0; display: grid; gap: 2px; }
  .cand { display: grid; grid-template-columns: 1fr auto; gap: 0 0.4em; padding: 0.15em 0.35em; border-radius: 3px;
          border: 1px solid var(--tx-border); background: var(--md-default-bg-color, #fff); }
  .cand .words { font-family: var(--md-code-font-family, monospace); }
  .cand .last { font-weight: 700; }
  .cand .p { text-align: right; font-variant-numeric: tabular-nums; }
  .cand .tag { grid-column: 1 / -1; font-size: 0.85em; }
  .cand.kept { border-color: var(--tx-accent); border-width: 2px; }
  .cand.kept .tag { color: var(--tx-accent-text); font-weight: 600; }
  .cand.pruned { border-style: dashed; background: transparent; }
  .cand.pruned .words { text-decoration: line-through; }
  .more { font-size: 0.85em; font-style: italic; }
  h3 { font-size: 1em; margin: 0.8em 0 0.3em; }
  details summary { cursor: pointer; }
  .table-model td, .table-model th { text-align: right; }
  .table-model td:first-child, .table-model th:first-child { text-align: left; }
  .steps:focus-visible { outline: 2px solid var(--tx-accent); outline-offset: 2px; }
`;

function fmtProb(p) {
  if (p === 0) return "0";
  return p >= 0.001 ? p.toPrecision(4).replace(/\.?0+$/, "") : p.toExponential(2);
}

function fmtLog(x) {
  return Number.isFinite(x) ? x.toFixed(3) : "−∞";
}

function words(tokens) {
  return escapeHtml(tokens.join(" "));
}

class TxDecoding extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Decoding a tiny bigram model</div>
      <div class="controls">
        <label>Method <select name="method">
          <option value="greedy">greedy</option><option value="beam">beam search</option><option value="sample">sampling</option>
        </select><output></output></label>
        <label data-for="beam">Beam width <input name="beam_width" type="range" min="1" max="8" step="1"><output></output></label>
        <label>Max length <input name="max_len" type="range" min="1" max="8" step="1"><output></output></label>
        <label data-for="beam">Length penalty <input name="length_penalty" type="range" min="0" max="2" step="0.25"><output></output></label>
        <label data-for="sample">Temperature <input name="temperature" type="range" min="0" max="2" step="0.1"><output></output></label>
        <label data-for="sample">Samples <input name="num_samples" type="range" min="1" max="50" step="1"><output></output></label>
        <label data-for="sample">Seed <input name="seed" type="number" min="0" step="1" value="0"><output></output></label>
      </div>
      <table class="results scroll" aria-label="Sequences found and their probabilities">
        <thead><tr><th>decoder</th><th>sequence</th><th class="num">joint probability</th><th class="num">log-prob</th><th class="num">score</th></tr></thead>
        <tbody></tbody>
      </table>
      <p class="legend"></p>
      <h3 class="trace-title"></h3>
      <div class="trace"></div>
      <details class="model"><summary>The model: next-word probabilities</summary><div class="model-table"></div></details>`;
  }

  setup() {
    const initial = {
      ...attributeValues(this, { method: "beam", beam_width: "2", max_len: "6", length_penalty: "0" }),
      temperature: "1",
      num_samples: "20",
      seed: "0",
    };
    this.wire(initial, { on: (el) => (el.type === "number" ? "change" : "input") });
    this.field("seed").addEventListener("input", () => this.update());
  }

  /** The next-word table and the first decoding, asked for together. */
  start() {
    this.rerun();
  }

  /** Retry after Python failed to start: the model table and the decoding both need it. */
  rerun() {
    if (!this.model) this.loadModel();
    return this.update();
  }

  async loadModel() {
    try {
      this.renderModel(await callDemo("decoding", "model"));
    } catch (err) {
      this.showError(err, { retry: () => this.rerun() });
    }
  }

  /** Control values as decode()'s keyword arguments; throws a readable Error on bad input. */
  request() {
    const value = (name) => this.$(`[name="${name}"]`).value;
    const seed = parseInteger(value("seed"), { label: "The seed", min: 0, max: 2 ** 32 - 1 });
    return {
      method: parseSelect(this.$('[name="method"]'), { label: "The method" }),
      beam_width: Number(value("beam_width")),
      max_len: Number(value("max_len")),
      length_penalty: Number(value("length_penalty")),
      temperature: Number(value("temperature")),
      num_samples: Number(value("num_samples")),
      seed,
    };
  }

  echo(r) {
    for (const label of this.shadowRoot.querySelectorAll(".controls label[data-for]")) {
      label.hidden = label.dataset.for !== r.method;
    }
    const out = (name) => this.$(`[name="${name}"] + output`);
    out("beam_width").textContent = r.beam_width === 1 ? "1 (= greedy)" : String(r.beam_width);
    out("max_len").textContent = `${r.max_len} words`;
    out("length_penalty").textContent = r.length_penalty === 0 ? "0 (off)" : r.length_penalty.toFixed(2);
    out("temperature").textContent = r.temperature === 0 ? "0 (greedy)" : r.temperature.toFixed(1);
    out("num_samples").textContent = String(r.num_samples);
  }

  compute(request) {
    return callDemo("decoding", "decode", request);
  }

  draw(result, request) {
    this.$(".legend").textContent = this.render(request, result);
  }

  row(role, label, seq, best) {
    return `<tr data-role="${role}" class="${best ? "best" : ""}" data-tokens="${escapeHtml(JSON.stringify(seq.tokens))}"
        data-prob="${seq.prob}" data-logprob="${seq.logprob}" data-score="${seq.score}">
      <td>${escapeHtml(label)}</td><td class="seq">${words(seq.tokens)}</td>
      <td class="num">${fmtProb(seq.prob)}</td><td class="num">${fmtLog(seq.logprob)}</td><td class="num">${fmtLog(seq.score)}</td></tr>`;
  }

  render(r, d) {
    const optimum = d.optimum;
    const same = (a) => a.tokens.join(" ") === optimum.tokens.join(" ");
    const rows = [];
    if (d.method === "beam") rows.push(this.row("result", `beam search, width ${r.beam_width}`, d.result.best, same(d.result.best)));
    if (d.method === "sample") {
      const top = d.result.distinct[0];
      rows.push(this.row("result", `most frequent of ${r.num_samples} samples`, top, same(top)));
    }
    rows.push(this.row("greedy", "greedy", d.greedy, same(d.greedy)));
    rows.push(this.row("optimum", `best of all ${d.num_sequences} sequences`, optimum, true));
    this.$(".results tbody").innerHTML = rows.join("");
    const trace = this.$(".trace");
    if (d.method === "beam") {
      this.$(".trace-title").textContent = `Beam search step by step: ${r.beam_width} beam${r.beam_width > 1 ? "s" : ""} survive each step`;
      trace.innerHTML = this.beamSteps(d.result.steps);
    } else if (d.method === "greedy") {
      this.$(".trace-title").textContent = "Greedy step by step: the most probable next word, every time";
      trace.innerHTML = this.greedySteps(d.result);
    } else {
      this.$(".trace-title").textContent = `${r.num_samples} samples at temperature ${r.temperature}`;
      trace.innerHTML = this.sampleTable(d.result, r.num_samples);
    }
    const penalty = r.length_penalty ? `log-prob / length^${r.length_penalty}` : "log-prob, no length penalty";
    return `★ marks the best sequence of all. Score: ${penalty}.`;
  }

  beamSteps(steps) {
    return `<div class="steps scroll" tabindex="0" role="group" aria-label="Beam search candidates, one column per step">${steps
      .map((candidates, k) => {
        const shown = candidates.filter((c, i) => c.kept || i < SHOWN_PER_STEP);
        const hidden = candidates.length - shown.length;
        return `<section class="step" aria-label="Step ${k + 1}"><h4>Step ${k + 1}</h4><ol>${shown
          .map((c) => {
            const last = c.tokens[c.tokens.length - 1];
            const prefix = c.tokens.slice(0, -1).join(" ");
            const status = c.kept ? (c.new ? "✓ kept" : "✓ kept (finished)") : "✗ pruned";
            return `<li class="cand ${c.kept ? "kept" : "pruned"}" data-tokens="${escapeHtml(JSON.stringify(c.tokens))}"
                  data-prob="${c.prob}" data-score="${c.score}" data-kept="${c.kept}">
            <span class="words">${escapeHtml(prefix)} <span class="last">${escapeHtml(last)}</span></span>
            <span class="p">${fmtProb(c.prob)}</span><span class="tag">${status}</span></li>`;
          })
          .join("")}</ol>${hidden > 0 ? `<p class="more">+ ${hidden} more pruned</p>` : ""}</section>`;
      })
      .join("")}</div>`;
  }

  greedySteps(result) {
    const tokens = this.model ? this.model.tokens : [];
    return `<div class="steps scroll" tabindex="0" role="group" aria-label="Greedy choices, one column per step">${result.steps
      .map((s, k) => {
        const options = s.probs
          .map((p, i) => ({ p, w: tokens[i] }))
          .filter((o) => o.p > 0)
          .sort((a, b) => b.p - a.p);
        return `<section class="step" aria-label="Step ${k + 1}"><h4>Step ${k + 1}: after “${escapeHtml(s.context)}”</h4><ol>${options
          .map(
            (o) =>
              `<li class="cand ${o.w === s.choice ? "kept" : "pruned"}" data-word="${escapeHtml(o.w)}" data-prob="${o.p}" data-kept="${o.w === s.choice}">
          <span class="words">${escapeHtml(o.w)}</span><span class="p">${fmtProb(o.p)}</span>
          <span class="tag">${o.w === s.choice ? "✓ chosen" : "not chosen"}</span></li>`,
          )
          .join("")}</ol></section>`;
      })
      .join("")}</div>`;
  }

  sampleTable(result, n) {
    return `<table class="samples scroll"><thead><tr><th>sequence</th><th class="num">times drawn</th><th class="num">model probability</th></tr></thead><tbody>${result.distinct
      .map(
        (s) => `<tr data-tokens="${escapeHtml(JSON.stringify(s.tokens))}" data-count="${s.count}" data-prob="${s.prob}">
        <td class="seq">${words(s.tokens)}</td><td class="num">${s.count} of ${n}</td><td class="num">${fmtProb(s.prob)}</td></tr>`,
      )
      .join("")}</tbody></table>`;
  }

  renderModel(model) {
    this.model = model;
    const head = model.tokens.map((t) => `<th scope="col">${escapeHtml(t)}</th>`).join("");
    const body = model.contexts
      .map((c, i) => `<tr><th scope="row">${escapeHtml(c)}</th>${model.table[i].map((p) => `<td>${p === 0 ? "·" : fmtProb(p)}</td>`).join("")}</tr>`)
      .join("");
    this.$(".model-table").innerHTML =
      `<table class="table-model scroll"><thead><tr><th>after ↓ / next →</th>${head}</tr></thead><tbody>${body}</tbody></table>`;
  }
}

define("tx-decoding", TxDecoding);
