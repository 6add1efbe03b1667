/**
 * <tx-beam-search>: beam search on the site's GPT-2 in your browser, step by step: every
 * candidate each step weighed, which beams run on, which hypotheses finish, and why.
 *
 * All beams run as one batch per step, with the key-value cache reordered by beam
 * (runtime/beam.js has the rules: transformers' `generate(num_beams=...)`).
 *
 * Attributes (all optional):
 *   prompt          initial text, default "The Transformer is a"
 *   beams           1 to 8, default 4
 *   max-new-tokens  1 to 64, default 12
 *   length-penalty  −5 to 5, default 1 (a finished score is log-probability / length ** penalty)
 *   early-stopping  "false" (default), "true" or "never"
 *   end-token       "endoftext" (default: <|endoftext|>), "period" (a full stop ends a hypothesis) or "none"
 *   backend         "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model           a model name under models/ (default: the site's default model)
 *   variant         a weight variant of the model ("q4", "q8", "fp16", ...); default: the best for the backend
 *
 * For tests and embedding pages the element exposes `data-state`, `data-running`, `data-runs`
 * (finished searches), `data-reason` (beam.js BEAM_ENDINGS), `data-steps`, `data-hypotheses`
 * (JSON [{tokens, score}] best first), `data-step-ms`, `data-backend`, `data-variant`; each
 * candidate of the tree has `data-parent`, `data-token`, `data-log-prob` and `data-fate`
 * ("kept", "finished", "ended" or "pruned").
 */
import { BEAM_LIMITS } from "../runtime/beam.js";
import { BACKEND_FIELD, attributeValues, escapeHtml, signed, visible } from "./base.js";
import { parseInteger, parseNumber, parseSelect } from "./inputs.js";
import { RunWidget } from "./run-widget.js";
import { define } from "./widget.js";

const END_TOKENS = { endoftext: "<|endoftext|>", period: "a full stop “.”", none: "none (every beam runs to the limit)" };
const EARLY = { false: false, true: true, never: "never" };

/** What became of a candidate, in the key's order: class, words. */
const FATES = {
  kept: "runs on as a beam",
  finished: "ended among the best: offered to the finished list",
  ended: "ended, but outside the best beams: dropped",
  pruned: "pruned: not among the best that run on",
};

const STYLE = `
  .title { display: flow-root; } /* holds the floating badge */
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .rate { color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 18.5em), 1fr)); gap: 0.4em 1.2em; margin: 0.5em 0; }
  .grid label { display: grid; grid-template-columns: 8.5em minmax(0, 1fr); align-items: center; gap: 0.4em; }
  .grid select { min-width: 9.5em; }
  .grid input, .grid select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  [aria-invalid="true"] { outline: 2px solid #c62828; }
  h4 { margin: 0.8em 0 0.3em; font-size: 1em; }
  .hyps { margin: 0; padding-left: 1.6em; }
  .hyps li, .beams li { margin: 0.2em 0; overflow-wrap: anywhere; }
  .given { color: var(--tx-muted); }
  .score { font-variant-numeric: tabular-nums; color: var(--tx-muted); white-space: nowrap; }
  .note { color: var(--tx-muted); font-weight: normal; }
  li.none { list-style: none; color: var(--tx-muted); }
  .plan { margin: 0.2em 0 0.5em; color: var(--tx-muted); }
  .beams { margin: 0; padding-left: 1.6em; }
  .steps { margin: 0; padding: 0; list-style: none; }
  .steps > li { margin: 0.3em 0; display: flex; flex-wrap: wrap; gap: 0.25em; align-items: baseline; }
  .steps .n { min-width: 3.6em; color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  .cand { display: inline-flex; gap: 0.3em; align-items: baseline; max-width: 100%; box-sizing: border-box;
          border: 1px solid var(--tx-border); border-radius: 4px; padding: 0.05em 0.4em; font-variant-numeric: tabular-nums;
          overflow-wrap: anywhere; }
  .cand .from { color: var(--tx-muted); font-size: 0.85em; }
  .cand.kept { border: 2px solid var(--tx-accent); }
  .cand.finished { border: 2px double #2e7d32; background: color-mix(in srgb, #2e7d32 12%, transparent); }
  .cand.ended, .cand.pruned { color: var(--tx-muted); }
  .cand.pruned .tokentext { text-decoration: line-through; }
  .cand.ended { border-style: dashed; }
  .key { display: flex; flex-wrap: wrap; gap: 0.3em 0.9em; margin: 0.3em 0; color: var(--tx-muted); }
  .scroll { max-height: 24em; overflow-y: auto; }
  .notices { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
`;

class TxBeamSearch extends RunWidget {
  template() {
    const { maxBeams, maxNewTokens, minLengthPenalty, maxLengthPenalty } = BEAM_LIMITS;
    const options = (table) =>
      Object.entries(table)
        .map(([value, label]) => `<option value="${value}">${escapeHtml(label)}</option>`)
        .join("");
    const key = Object.entries(FATES)
      .map(([fate, words]) => `<span><span class="cand ${fate}"><span class="tokentext">token</span></span> ${words}</span>`)
      .join("");
    const from = `<span><span class="cand"><span class="from">2→</span></span> the beam it extends</span>`;
    return `
      <style>${STYLE}</style>
      <div class="title">Beam search on GPT-2, step by step <span class="badge" title="Where the model runs"></span></div>
      <label class="prompt">Prompt <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>
      <div class="grid">
        <label>Beams <input name="beams" type="number" min="1" max="${maxBeams}" step="1" inputmode="numeric"></label>
        <label>Max new tokens <input name="maxNewTokens" type="number" min="1" max="${maxNewTokens}" step="1" inputmode="numeric"></label>
        <label>Length penalty <input name="lengthPenalty" type="number" min="${minLengthPenalty}" max="${maxLengthPenalty}" step="0.25" inputmode="decimal"></label>
        <label>Early stopping <select name="earlyStopping">${options({ false: "no", true: "yes", never: "never" })}</select></label>
        <label>A hypothesis ends at <select name="endToken">${options(END_TOKENS)}</select></label>
        ${BACKEND_FIELD}
      </div>
      <p class="plan" aria-live="polite"></p>
      <div class="row buttons">
        <button type="button" class="go">Search</button>
        <button type="button" class="stop" disabled>Stop</button>
        <span class="rate"></span>
      </div>
      <h4>Finished hypotheses, best first <span class="note">(score = log-probability / length<sup>penalty</sup>)</span></h4>
      <ol class="hyps" aria-live="polite"></ol>
      <h4>Beams running</h4>
      <ol class="beams" start="0"></ol>
      <h4>Every step's candidates, best first</h4>
      <div class="key" aria-label="Key">${from}${key}</div>
      <div class="scroll"><ol class="steps" aria-label="The candidates of each step"></ol></div>
      <p class="notices" role="note" hidden></p>`;
  }

  setup() {
    const start = attributeValues(this.host, {
      prompt: "The Transformer is a",
      beams: "4",
      max_new_tokens: "12",
      length_penalty: "1",
      early_stopping: "false",
      end_token: "endoftext",
      backend: "auto",
    });
    this.field("prompt").value = start.prompt;
    this.field("beams").value = start.beams;
    this.field("maxNewTokens").value = start.max_new_tokens;
    this.field("lengthPenalty").value = start.length_penalty;
    this.field("earlyStopping").value = start.early_stopping;
    this.field("endToken").value = start.end_token;
    this.field("backend").value = start.backend;
    this.wireRuns({
      settings: ["beams", "maxNewTokens", "lengthPenalty", "earlyStopping", "endToken"],
      readyLine: "Ready: press Search (or Ctrl+Enter in the prompt).",
    });
    this.settingsChanged(); // the plan, or what is wrong with an attribute
  }

  /**
   * The settings as `beamSearch()` options, each field marked valid or not.
   * @throws {InputError} naming the first field that is not valid (Search is then disabled)
   */
  options() {
    const { maxBeams, maxNewTokens, minLengthPenalty, maxLengthPenalty } = BEAM_LIMITS;
    const values = this.fieldValues({
      beams: () => parseInteger(this.field("beams").value, { label: "The number of beams", name: "beams", min: 1, max: maxBeams }),
      maxNewTokens: () => parseInteger(this.field("maxNewTokens").value, { label: "Max new tokens", name: "maxNewTokens", min: 1, max: maxNewTokens }),
      lengthPenalty: () =>
        parseNumber(this.field("lengthPenalty").value, { label: "The length penalty", name: "lengthPenalty", min: minLengthPenalty, max: maxLengthPenalty }),
      earlyStopping: () => parseSelect(this.field("earlyStopping"), { label: "Early stopping" }),
      endToken: () => parseSelect(this.field("endToken"), { label: "The end of a hypothesis" }),
    });
    return {
      numBeams: values.beams,
      maxNewTokens: values.maxNewTokens,
      lengthPenalty: values.lengthPenalty,
      earlyStopping: EARLY[values.earlyStopping],
      endToken: values.endToken,
    };
  }

  request() {
    return { prompt: this.field("prompt").value, options: this.options() };
  }

  /** The search the settings ask for, in one sentence above the Search button. */
  describe({ numBeams, maxNewTokens, lengthPenalty, earlyStopping, endToken }) {
    const beams = numBeams === 1 ? "1 beam (greedy decoding)" : `${numBeams} beams`;
    const ends = endToken === "none" ? "no token ends a hypothesis" : `a hypothesis ends at ${END_TOKENS[endToken]}`;
    const early = {
      false: "stops when no running beam can still win",
      true: `stops as soon as ${numBeams} hypotheses have finished`,
      never: "stops only when no running beam could win even at the full length",
    }[String(earlyStopping)];
    this.$(".plan").textContent =
      `${beams}, ${2 * numBeams} candidates a step, up to ${maxNewTokens} new tokens; ${ends}; ` +
      `score = log-probability / length^${lengthPenalty}; the search ${early}.`;
  }

  /** The end token's id for the model: <|endoftext|>, the full stop, or none. */
  endTokenId(model, endToken) {
    if (endToken === "none") return null;
    if (endToken === "period") return model.tokenizer.encode(".")[0];
    return model.info.config.eos_token_id;
  }

  /** One search: each step drawn as it comes, the hypotheses at the end. */
  async compute({ prompt, options: { endToken, ...options } }) {
    const model = this.model || (await this.useModel({ backend: this.field("backend").value }));
    if (!model) return null;
    this.clear();
    this.showProgress(prompt ? "Reading the prompt…" : "Empty prompt: starting from <|endoftext|>…");
    this.promptText = prompt;
    return this.whileRunning(async () => {
      this.run = model.beamSearch(prompt, { ...options, eos: this.endTokenId(model, endToken) });
      for await (const step of this.run) {
        this.drawStep(step, options.numBeams);
        this.drawLists(step.finished, step.beams);
        this.dataset.steps = String(step.index + 1);
        if (this.dataset.state !== "ready") this.showReady("Searching… (Stop or Esc ends it)");
      }
      return this.run.result;
    });
  }

  clear() {
    for (const list of [".hyps", ".beams", ".steps"]) this.$(list).replaceChildren();
    this.$(".rate").textContent = "";
    for (const key of ["reason", "hypotheses", "steps", "stepMs"]) delete this.dataset[key];
  }

  draw(result) {
    this.drawLists(result.hypotheses, result.reason === "stopped" ? result.beams : []);
    this.dataset.reason = result.reason;
    this.dataset.steps = String(result.steps);
    this.dataset.hypotheses = JSON.stringify(result.hypotheses.map(({ tokens, score }) => ({ tokens, score })));
    if (result.stepMs) this.dataset.stepMs = String(result.stepMs);
    const perStep = result.stepMs ? ` · ${Math.round(result.stepMs)} ms a step for ${result.options.numBeams} beams` : "";
    this.$(".rate").textContent = `${result.steps} step${result.steps === 1 ? "" : "s"}${perStep} · prompt read in ${Math.round(result.prefillMs)} ms`;
    return result.message;
  }

  /** The finished hypotheses (with their scores) and the beams still running. */
  drawLists(finished, beams) {
    const given = `<span class="given">${escapeHtml(this.promptText)}</span>`;
    const penalty = Number(this.field("lengthPenalty").value);
    this.$(".hyps").innerHTML = finished.length
      ? finished
          .map(
            (h) => `<li data-tokens="${escapeHtml(JSON.stringify(h.tokens))}" data-score="${h.score}">${given}${escapeHtml(h.text)}
              <span class="score">${signed(h.logProb)} / ${h.tokens.length}<sup>${penalty}</sup> = <b>${signed(h.score)}</b></span></li>`,
          )
          .join("")
      : `<li class="none">none yet</li>`;
    this.$(".beams").innerHTML = beams.length
      ? beams
          .map(
            (b) =>
              `<li data-tokens="${escapeHtml(JSON.stringify(b.tokens))}">${given}${escapeHtml(b.text)} <span class="score">${signed(b.logProb)}</span></li>`,
          )
          .join("")
      : `<li class="none">none: the search has ended</li>`;
  }

  /** One row of the tree: the step's candidates, best first, each marked with what became of it. */
  drawStep(step, numBeams) {
    const cells = step.tokens.map((token, i) => {
      const fate = step.kept.includes(i) ? "kept" : step.ended[i] ? (i < numBeams ? "finished" : "ended") : "pruned";
      const to = fate === "kept" ? ` as beam ${step.kept.indexOf(i)}` : "";
      const label = `Beam ${step.parents[i]} + “${visible(step.pieces[i])}”: log-probability ${signed(step.logProbs[i])}; ${FATES[fate]}${to}`;
      return `<span class="cand ${fate}" role="listitem" title="${escapeHtml(label)}" aria-label="${escapeHtml(label)}" data-parent="${step.parents[i]}"
        data-token="${token}" data-log-prob="${step.logProbs[i]}" data-fate="${fate}"><span class="from">${step.parents[i]}→</span><span
        class="tokentext">${escapeHtml(visible(step.pieces[i]))}</span> ${signed(step.logProbs[i])}</span>`;
    });
    this.$(".steps").insertAdjacentHTML(
      "beforeend",
      `<li role="list" aria-label="Step ${step.index + 1}"><span class="n">step ${step.index + 1}</span>${cells.join("")}</li>`,
    );
  }
}

define("tx-beam-search", TxBeamSearch);
