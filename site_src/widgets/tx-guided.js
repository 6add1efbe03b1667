/**
 * <tx-guided>: guided decoding of JSON, one token at a time.
 *
 * Attributes (all optional):
 *   seed     seed of the toy model's noise, default 0
 *   skill    how strongly the toy model prefers grammatical tokens, 0 to 10, default 4
 *   unguided boolean attribute: start without the grammar's mask
 *
 * The runs come from `demos.guided.generate` (guided and unguided, same seed) in the
 * Pyodide worker; stepping through them happens here. At each step the widget shows the
 * tokens the grammar allows, the raw and masked probabilities, and the mass the mask
 * removed. State for tests: `data-request`, `data-pos` (tokens shown), `data-steps`,
 * `data-text` (text so far); the step panel carries `data-removed-mass`,
 * `data-chosen` and `data-allowed`; the verdict carries `data-valid` and
 * `data-matches-schema`.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml, formatProb } from "./base.js";
import { InputError } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const TOP = 8;

const STYLE = `
  .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; }
  .controls label.check { grid-template-columns: 6.5em auto 1fr; }
  button { font: inherit; padding: 0.2em 0.8em; border-radius: 4px; border: 1px solid var(--tx-border);
           background: var(--md-default-bg-color, #fff); color: inherit; cursor: pointer; }
  button:disabled { opacity: 0.5; cursor: default; }
  button:focus-visible { outline: 2px solid var(--tx-fg); outline-offset: 1px; }
  .out { font-family: var(--md-code-font-family, monospace); display: flex; flex-wrap: wrap; gap: 2px; min-height: 1.6em;
         padding: 0.3em; border: 1px solid var(--tx-border); border-radius: 4px; background: var(--md-default-bg-color, #fff); }
  .piece { white-space: pre; padding: 0 0.2em; border-radius: 3px; background: color-mix(in srgb, var(--tx-accent) 15%, transparent); }
  .piece.bad { background: none; outline: 2px dashed #c62828; }
  .piece.next { outline: 2px solid var(--tx-accent); background: none; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin-top: 0.4em; }
  th, td { text-align: left; padding: 0.12em 0.5em; border-bottom: 1px solid var(--tx-border); }
  td.num, th.num { text-align: right; }
  td.tok { font-family: var(--md-code-font-family, monospace); white-space: pre; }
  tr.disallowed td.tok, tr.disallowed td.raw { text-decoration: line-through; }
  tr.chosen td { font-weight: 700; }
  .barcell .bar { width: 7em; }
  .step-title { margin: 0.6em 0 0.2em; font-weight: 600; }
  .verdict { margin-top: 0.5em; }
  .verdict.ok::before { content: "✓ "; }
  .verdict.bad::before { content: "✗ "; }
  .compare { margin-top: 0.3em; font-style: italic; }
  code { font-family: var(--md-code-font-family, monospace); }
`;

/** Generated text as code, or "(nothing)". */
function literal(text) {
  return text ? `<code>${escapeHtml(text)}</code>` : "(nothing)";
}

function visible(piece) {
  return piece === " " ? "␣" : piece;
}

class TxGuided extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Guided decoding: JSON for <code class="schema"></code></div>
      <div class="controls">
        <label>Seed <input name="seed" type="number" min="0" step="1"><output></output></label>
        <label>Model skill <input name="skill" type="range" min="0" max="10" step="0.5"><output></output></label>
        <label class="check">Mask <input name="guided" type="checkbox"><output></output></label>
      </div>
      <div class="row" role="group" aria-label="Step through the decoding">
        <button name="restart">Restart</button><button name="back">◀ Back</button>
        <button name="step">Step ▶</button><button name="end">Run to the end</button>
        <span class="counter"></span>
      </div>
      <div class="out" aria-label="Text generated so far" data-tx-literal></div>
      <div class="panel"></div>
      <p class="verdict" aria-live="polite"></p>
      <p class="compare"></p>`;
  }

  setup() {
    this.wire({ seed: this.getAttribute("seed") ?? "0", skill: this.getAttribute("skill") ?? "4" });
    this.wire({ guided: !this.hasAttribute("unguided") }, { on: "change" });
    const go = (name, fn) => this.$(`button[name="${name}"]`).addEventListener("click", () => this.moveTo(fn()));
    go("restart", () => 0);
    go("back", () => this.pos - 1);
    go("step", () => this.pos + 1);
    go("end", () => this.run.steps.length);
    this.pos = 0;
  }

  request() {
    const seedText = this.field("seed").value.trim();
    if (!/^\d+$/.test(seedText) || Number(seedText) > 2 ** 31 - 1) {
      throw new InputError("The seed must be a whole number from 0 to 2,147,483,647.", "seed");
    }
    return { seed: Number(seedText), skill: Number(this.field("skill").value), guided: this.field("guided").checked };
  }

  echo(r) {
    this.$('[name="skill"] + output').textContent = r.skill.toFixed(1);
    this.$('[name="guided"] + output').textContent = r.guided ? "on" : "off";
  }

  /** The run for the settings and the run with the mask the other way (same seed). */
  async compute(r) {
    this.vocab ??= await callDemo("guided", "vocabulary");
    const run = await callDemo("guided", "generate", r);
    const other = await callDemo("guided", "generate", { ...r, guided: !r.guided });
    return { run, other };
  }

  draw({ run, other }) {
    this.$(".schema").textContent = this.vocab.schema;
    this.run = run;
    this.other = other;
    this.dataset.steps = String(run.steps.length);
    this.renderCompare();
    this.moveTo(Math.min(this.pos, run.steps.length));
  }

  moveTo(pos) {
    const run = this.run;
    if (!run) return;
    this.pos = Math.max(0, Math.min(pos, run.steps.length));
    this.dataset.pos = String(this.pos);
    const shown = run.steps.slice(0, this.pos);
    this.dataset.text = shown
      .map((s) => s.piece)
      .filter((p) => p !== "<eos>")
      .join("");
    const next = run.steps[this.pos];
    this.$(".out").innerHTML =
      shown
        .map(
          (s) =>
            `<span class="piece${s.grammatical ? "" : " bad"}" title="${s.grammatical ? "allowed by the grammar" : "breaks the grammar"}">${escapeHtml(visible(s.piece))}</span>`,
        )
        .join("") + (next ? `<span class="piece next" aria-label="next token">${escapeHtml(visible(next.piece))}?</span>` : "");
    this.$(".counter").textContent = `${this.pos} of ${run.steps.length} tokens`;
    this.$('button[name="restart"]').disabled = this.$('button[name="back"]').disabled = this.pos === 0;
    this.$('button[name="step"]').disabled = this.$('button[name="end"]').disabled = this.pos === run.steps.length;
    this.renderStep(next);
    this.renderVerdict();
  }

  renderStep(step) {
    const panel = this.$(".panel");
    if (!step) {
      panel.innerHTML = "";
      delete panel.dataset.removedMass;
      return;
    }
    const tokens = this.vocab.tokens;
    const allowed = new Set(step.allowed);
    const order = step.probs.map((p, i) => i).sort((a, b) => step.probs[b] - step.probs[a]);
    const rows = order.filter((i, rank) => rank < TOP || allowed.has(i));
    const guided = this.run.guided;
    const kept = 1 - (step.removed_mass ?? 1);
    const where =
      step.state === null
        ? "The text already breaks the grammar, so no token would be allowed."
        : `State: ${step.state}. The grammar allows ${allowed.size} of ${tokens.length} tokens` +
          (guided
            ? `; the mask removes ${formatProb(step.removed_mass)} of the probability and scales the rest by ${(1 / kept).toPrecision(3)}.`
            : `, which hold ${formatProb(kept)} of the probability; without the mask the model may pick any token.`);
    panel.dataset.removedMass = String(step.removed_mass);
    panel.dataset.chosen = String(step.chosen);
    panel.dataset.allowed = JSON.stringify(step.allowed);
    panel.innerHTML = `<p class="step-title">Step ${step.step + 1}: ${escapeHtml(where)}</p>
      <table class="scroll"><thead><tr><th>token</th><th class="num" colspan="2">model probability</th><th>grammar</th>${guided ? '<th class="num">after the mask</th>' : ""}</tr></thead>
      <tbody>${rows
        .map((i) => {
          const ok = allowed.has(i);
          const peak = step.probs[order[0]];
          return `<tr class="${ok ? "allowed" : "disallowed"}${i === step.chosen ? " chosen" : ""}" data-token="${i}" data-prob="${step.probs[i]}"
                    ${guided ? `data-guided-prob="${step.guided_probs[i]}"` : ""}>
          <td class="tok" data-tx-literal>${escapeHtml(visible(tokens[i]))}${i === step.chosen ? " ← chosen" : ""}</td>
          <td class="num raw">${formatProb(step.probs[i])}</td>
          <td class="barcell"><span class="bar"><span style="width:${(100 * step.probs[i]) / peak}%"></span></span></td>
          <td>${ok ? "✓ allowed" : "✗ not allowed"}</td>
          ${guided ? `<td class="num">${formatProb(step.guided_probs[i])}</td>` : ""}</tr>`;
        })
        .join("")}</tbody></table>`;
  }

  renderVerdict() {
    const verdict = this.$(".verdict");
    const run = this.run;
    if (this.pos < run.steps.length) {
      verdict.className = "verdict";
      verdict.textContent = "";
      delete verdict.dataset.valid;
      delete verdict.dataset.matchesSchema;
      return;
    }
    verdict.dataset.valid = String(run.valid_json);
    verdict.dataset.matchesSchema = String(run.matches_schema);
    verdict.className = `verdict ${run.matches_schema ? "ok" : "bad"}`;
    // The generated text is literal JSON (it may well say null): shown as code.
    verdict.innerHTML = run.matches_schema
      ? `json.loads accepts ${literal(run.text)} and it fits the schema.`
      : `${literal(run.text)}: ${escapeHtml(run.error)}`;
  }

  renderCompare() {
    const o = this.other;
    const label = o.guided ? "With the grammar mask" : "Without the mask";
    this.$(".compare").innerHTML =
      `${label}, the same model and seed give ${literal(o.text)}: ` + escapeHtml(o.matches_schema ? "valid JSON that fits the schema." : o.error);
  }
}

define("tx-guided", TxGuided);
