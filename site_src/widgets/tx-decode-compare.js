/**
 * <tx-decode-compare>: one prompt, four decoding methods on the site's GPT-2, side by side:
 * greedy, sampling, beam search and guided JSON, each with the log-probability the model gives
 * its text and how often that text repeats itself (line breaks shown as ↵).
 *
 * The four run one after the other in the model's worker (runtime/model.js: `generate`,
 * `beamSearch`, `generate` with a schema), on the same prompt and length.
 *
 * Attributes (all optional):
 *   prompt          initial text, default "The attention weights of a head"
 *   max-new-tokens  1 to 64, default 20
 *   seed            the sampling seed, default 1
 *   backend         "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model           a model name under models/ (default: the site's default model)
 *   variant         a weight variant of the model ("q4", "q8", "fp16", ...); default: the best for the backend
 *
 * For tests and embedding pages the element exposes `data-state`, `data-running`, `data-runs`,
 * `data-backend`, `data-variant`, and on each method's panel `data-method`, `data-ids` (JSON of
 * its new tokens), `data-log-prob` (their summed log-probability under the model) and
 * `data-distinct` (the share of its tokens that are not repeats).
 */
import { BEAM_LIMITS } from "../runtime/beam.js";
import { MAX_SEED } from "../runtime/rng.js";
import { BACKEND_FIELD, attributeValues, escapeHtml, signed } from "./base.js";
import { parseInteger } from "./inputs.js";
import { RunWidget } from "./run-widget.js";
import { define } from "./widget.js";

/** A small schema for the guided column: the continuation as one JSON string field. */
const SCHEMA = { type: "object", properties: { text: { type: "string", maxLength: 48 } }, required: ["text"] };
const BEAMS = 4;
const SAMPLING = { temperature: 1, topP: 0.95 };

/** The four methods: heading, what it does, and how to run it. */
const METHODS = [
  { method: "greedy", name: "Greedy", how: "the most probable token, every step" },
  { method: "sampling", name: "Sampling", how: `drawn at temperature ${SAMPLING.temperature}, top-p ${SAMPLING.topP}` },
  { method: "beam", name: "Beam search", how: `${BEAMS} beams, the most probable whole continuation found` },
  { method: "guided", name: "Guided JSON", how: 'greedy, masked to the schema {"text": a string}' },
];

const STYLE = `
  .title { display: flow-root; }
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 18.5em), 1fr)); gap: 0.4em 1.2em; margin: 0.5em 0; }
  .grid label { display: grid; grid-template-columns: 8.5em minmax(0, 1fr); align-items: center; gap: 0.4em; }
  .grid input, .grid select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  [aria-invalid="true"] { outline: 2px solid #c62828; }
  .panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 16em), 1fr)); gap: 0.6em; margin-top: 0.6em; }
  .panel { border: 1px solid var(--tx-border); border-radius: 4px; padding: 0.4em 0.6em; min-width: 0; }
  .panel h4 { margin: 0 0 0.1em; font-size: 1em; }
  .panel .how, .panel .numbers { color: var(--tx-muted); font-size: 0.9em; margin: 0.1em 0; }
  .panel .text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.3em 0; min-height: 2.5em; }
  .panel .text .given { color: var(--tx-muted); }
  .panel.waiting .text { color: var(--tx-muted); }
`;

/** The summed log-probability of a run's tokens ("−12.3") and the share of them that are not repeats. */
function measures(ids, logProb) {
  return { logProb, distinct: ids.length ? new Set(ids).size / ids.length : 0 };
}

class TxDecodeCompare extends RunWidget {
  template() {
    const panels = METHODS.map(
      ({ method, name, how }) => `<section class="panel waiting" data-method="${method}" aria-label="${name}">
        <h4>${name}</h4><p class="how">${escapeHtml(how)}</p><p class="text">not run yet</p><p class="numbers"></p></section>`,
    ).join("");
    return `
      <style>${STYLE}</style>
      <div class="title">One prompt, four ways to decode <span class="badge" title="Where the model runs"></span></div>
      <label class="prompt">Prompt <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>
      <div class="grid">
        <label>New tokens <input name="maxNewTokens" type="number" min="1" max="${BEAM_LIMITS.maxNewTokens}" step="1" inputmode="numeric"></label>
        <label>Sampling seed <input name="seed" type="number" min="0" max="${MAX_SEED}" step="1" inputmode="numeric"></label>
        ${BACKEND_FIELD}
      </div>
      <div class="row buttons">
        <button type="button" class="go">Run all four</button>
        <button type="button" class="stop" disabled>Stop</button>
      </div>
      <div class="panels">${panels}</div>
      <p class="notices" role="note" hidden></p>`;
  }

  setup() {
    const start = attributeValues(this.host, { prompt: "The attention weights of a head", max_new_tokens: "20", seed: "1", backend: "auto" });
    this.field("prompt").value = start.prompt;
    this.field("maxNewTokens").value = start.max_new_tokens;
    this.field("seed").value = start.seed;
    this.field("backend").value = start.backend;
    this.wireRuns({ settings: ["maxNewTokens", "seed"], readyLine: "Ready: press Run all four." });
  }

  options() {
    return this.fieldValues({
      maxNewTokens: () => parseInteger(this.field("maxNewTokens").value, { label: "New tokens", name: "maxNewTokens", min: 1, max: BEAM_LIMITS.maxNewTokens }),
      seed: () => parseInteger(this.field("seed").value, { label: "The sampling seed", name: "seed", min: 0, max: MAX_SEED }),
    });
  }

  /** The panels say the settings they will run with (and the guided one how long its JSON may be). */
  describe({ maxNewTokens, seed }) {
    this.panel("sampling").querySelector(".how").textContent = `${METHODS[1].how}, seed ${seed}`;
    this.panel("greedy").querySelector(".how").textContent = `${METHODS[0].how}, ${maxNewTokens} tokens`;
  }

  request() {
    return { prompt: this.field("prompt").value, options: this.options() };
  }

  panel(method) {
    return this.$(`.panel[data-method="${method}"]`);
  }

  async compute({ prompt, options: { maxNewTokens, seed } }) {
    const model = this.model || (await this.useModel({ backend: this.field("backend").value }));
    if (!model) return null;
    for (const { method } of METHODS) this.showPanel(method, null);
    return this.whileRunning(async () => {
      const results = {};
      const plain = { maxNewTokens, stopAtEos: false, alternatives: 0 };
      const runs = {
        greedy: () => model.generate(prompt, { ...plain, temperature: 0 }),
        sampling: () => model.generate(prompt, { ...plain, ...SAMPLING, seed }),
        beam: () => model.beamSearch(prompt, { numBeams: BEAMS, maxNewTokens, eos: null }),
        // The JSON needs room for its braces and key: at least the shortest text, in tokens.
        guided: () => model.generate(prompt, { ...plain, maxNewTokens: Math.max(maxNewTokens, 12), temperature: 0, schema: SCHEMA }),
      };
      for (const { method, name } of METHODS) {
        this.showProgress(`${name}…`);
        this.run = runs[method]();
        const ids = [];
        let logProb = 0;
        for await (const item of this.run) {
          if (method === "beam") continue;
          ids.push(item.id);
          logProb += Math.log(item.prob);
        }
        const result = await this.run.result;
        if (result.reason === "stopped") return { stopped: name };
        if (method === "beam") {
          const best = result.hypotheses[0];
          results[method] = { ids: best.tokens, ...measures(best.tokens, best.logProb) };
        } else {
          results[method] = { ids, ...measures(ids, logProb) };
        }
        results[method].text = model.tokenizer.decode(results[method].ids);
        this.showPanel(method, results[method], prompt);
      }
      return { results };
    });
  }

  /** One method's panel: its text after the prompt, and its numbers (null: waiting). */
  showPanel(method, result, prompt = "") {
    const panel = this.panel(method);
    panel.classList.toggle("waiting", !result);
    panel.querySelector(".text").innerHTML = result
      ? `<span class="given">${escapeHtml(prompt)}</span>${escapeHtml(result.text.replace(/\n/g, "↵"))}`
      : "waiting…";
    panel.querySelector(".numbers").textContent = result
      ? `log-probability ${signed(result.logProb)} over ${result.ids.length} tokens (${signed(result.logProb / result.ids.length)} a token) · ` +
        `${Math.round(100 * result.distinct)}% of its tokens are not repeats`
      : "";
    for (const key of ["ids", "logProb", "distinct"]) delete panel.dataset[key];
    if (result) Object.assign(panel.dataset, { ids: JSON.stringify(result.ids), logProb: String(result.logProb), distinct: String(result.distinct) });
  }

  draw(result) {
    if (result.stopped) return `Stopped during ${result.stopped}.`;
    return "Done: the four continuations of one prompt.";
  }
}

define("tx-decode-compare", TxDecodeCompare);
