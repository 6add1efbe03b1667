/**
 * <tx-guided-json>: the site's GPT-2 writes JSON that a JSON Schema allows, in your browser:
 * before each token, every token that would break the schema is masked out, and the view shows
 * how many tokens were allowed and how much of the model's probability the mask removed.
 *
 * The schema (a subset: objects with properties, arrays, strings, integers, numbers, booleans,
 * null, enum and const) becomes a byte-level automaton (runtime/grammar.js), and each of its
 * states a mask over the vocabulary (runtime/token-mask.js), as Outlines does.
 *
 * Attributes (all optional):
 *   example         the schema to start with: "person" (default), "layer" or "answer"
 *   prompt          initial text (default: one that suits the example)
 *   max-new-tokens  default 48
 *   temperature     default 0 (greedy)
 *   seed            a whole number; empty = a fresh random seed each run (shown afterwards)
 *   backend         "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model           a model name under models/ (default: the site's default model)
 *   variant         a weight variant of the model ("q4", "q8", "fp16", ...); default: the best for the backend
 *
 * For tests and embedding pages the element exposes `data-state`, `data-running`, `data-runs`,
 * `data-reason`, `data-seed`, `data-ids` (JSON of the new token ids), `data-text` (the JSON
 * written), `data-parses` ("true"/"false"), `data-backend`, `data-variant`; each row of the step
 * table has `data-id`, `data-allowed`, `data-allowed-any` (before the length budget), `data-removed`
 * and `data-mask-ms`.
 */
import { SchemaError, compileSchema } from "../runtime/grammar.js";
import { MAX_SEED } from "../runtime/rng.js";
import { BACKEND_FIELD, attributeValues, escapeHtml, formatProb, visible } from "./base.js";
import { InputError, parseInteger, parseNumber, parseSelect } from "./inputs.js";
import { RunWidget } from "./run-widget.js";
import { define } from "./widget.js";

/** Example schemas, with a prompt each. */
const EXAMPLES = {
  person: {
    label: "a person",
    prompt: "A person who reads this book, as JSON:",
    schema: {
      type: "object",
      properties: {
        name: { type: "string", maxLength: 20 },
        age: { type: "integer" },
        languages: { type: "array", items: { type: "string", maxLength: 12 }, maxItems: 3 },
      },
      required: ["name", "age", "languages"],
    },
  },
  layer: {
    label: "a Transformer layer",
    prompt: "One layer of the Transformer, as JSON:",
    schema: {
      type: "object",
      properties: {
        name: { type: "string", maxLength: 24 },
        heads: { type: "integer" },
        norm: { enum: ["pre", "post"] },
        residual: { type: "boolean" },
      },
      required: ["name", "heads", "norm", "residual"],
    },
  },
  answer: {
    label: "a yes/no answer",
    prompt: "Does attention look at later tokens in GPT-2? Answer as JSON:",
    schema: {
      type: "object",
      properties: { answer: { enum: ["yes", "no"] }, reason: { type: "string", maxLength: 40 } },
      required: ["answer", "reason"],
    },
  },
};

const STYLE = `
  .title { display: flow-root; } /* holds the floating badge */
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 18.5em), 1fr)); gap: 0.4em 1.2em; margin: 0.5em 0; }
  .grid label { display: grid; grid-template-columns: 8.5em minmax(0, 1fr); align-items: center; gap: 0.4em; }
  .grid input, .grid select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .grid select { min-width: 9.5em; }
  [aria-invalid="true"] { outline: 2px solid #c62828; }
  textarea.schema { font-family: var(--md-code-font-family, monospace); font-size: 0.85em; }
  .json { white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--md-code-font-family, monospace); min-height: 2.5em;
          padding: 0.5em 0.6em; border: 1px solid var(--tx-border); border-radius: 4px; background: var(--md-default-bg-color, #fff); }
  .json .tok { border-radius: 3px; }
  .json .tok.forced { background: color-mix(in srgb, #fb8c00 30%, transparent); text-decoration: underline dotted; }
  .verdict { margin: 0.4em 0; }
  .scroll { max-height: 20em; overflow: auto; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 0.1em 0.45em; border-bottom: 1px solid var(--tx-border); overflow-wrap: break-word; }
  td.num, th.num, td:nth-child(2), th:nth-child(2) { white-space: nowrap; overflow-wrap: normal; }
  td.num, th.num { text-align: right; }

  table { font-size: 0.9em; }
  .muted { color: var(--tx-muted); }
  .notices { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
`;

/** A token's text, with spaces and line breaks made visible. */
const shown = (text) => escapeHtml(visible(text));

class TxGuidedJson extends RunWidget {
  template() {
    const examples = Object.entries(EXAMPLES)
      .map(([value, { label }]) => `<option value="${value}">${escapeHtml(label)}</option>`)
      .join("");
    return `
      <style>${STYLE}</style>
      <div class="title">GPT-2 writes JSON a schema allows <span class="badge" title="Where the model runs"></span></div>
      <div class="grid">
        <label>Example schema <select name="example">${examples}</select></label>
      </div>
      <label class="prompt">JSON Schema <textarea class="schema" name="schema" rows="6" spellcheck="false"></textarea></label>
      <label class="prompt">Prompt <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>
      <div class="grid">
        <label>Max new tokens <input name="maxNewTokens" type="number" min="1" step="1" inputmode="numeric"></label>
        <label>Temperature <input name="temperature" type="number" min="0" max="10" step="0.05" inputmode="decimal"></label>
        <label>Seed <input name="seed" type="number" min="0" max="${MAX_SEED}" step="1" placeholder="random" inputmode="numeric"></label>
        ${BACKEND_FIELD}
      </div>
      <p class="plan muted" aria-live="polite"></p>
      <div class="row buttons">
        <button type="button" class="go">Generate</button>
        <button type="button" class="stop" disabled>Stop</button>
      </div>
      <div class="json" role="group" aria-label="The JSON the model wrote"></div>
      <p class="verdict" aria-live="polite"></p>
      <p class="muted">Each step: how many of the vocabulary's tokens the schema allowed, how much of the model's own
        probability fell on tokens it did not allow, and the model's favourite among those. A token written where the
        mask removed more than half of the probability is <span class="tok forced">marked</span>.</p>
      <div class="scroll"><table aria-label="What the mask did at each step">
        <thead><tr><th class="num">#</th><th>token</th><th class="num">allowed</th><th class="num">removed</th><th>model wanted</th></tr></thead>
        <tbody></tbody></table></div>
      <p class="notices" role="note" hidden></p>`;
  }

  setup() {
    const start = attributeValues(this.host, { example: "person", prompt: "", max_new_tokens: "48", temperature: "0", seed: "", backend: "auto" });
    this.field("example").value = start.example;
    this.field("maxNewTokens").value = start.max_new_tokens;
    this.field("temperature").value = start.temperature;
    this.field("seed").value = start.seed;
    this.field("backend").value = start.backend;
    this.wireRuns({ settings: ["schema", "maxNewTokens", "temperature", "seed"], readyLine: "Ready: press Generate." });
    this.useExample(start.prompt || null);
    this.field("example").addEventListener("change", () => this.useExample(null));
  }

  /** Put the chosen example's schema (and its prompt, unless `prompt` is given) in the fields. */
  useExample(prompt) {
    let example;
    try {
      example = EXAMPLES[parseSelect(this.field("example"), { label: "The example schema" })];
    } catch (err) {
      this.showError(err);
      return;
    }
    this.field("schema").value = JSON.stringify(example.schema, null, 2);
    this.field("prompt").value = prompt ?? example.prompt;
    this.settingsChanged();
  }

  /**
   * The settings as `generate()` options (the schema parsed and compiled here, so that a
   * mistake is named before anything runs), each field marked valid or not.
   * @throws {InputError}
   */
  options() {
    const values = this.fieldValues({
      schema: () => {
        let schema;
        try {
          schema = JSON.parse(this.field("schema").value);
        } catch (err) {
          throw new InputError(`The schema is not valid JSON: ${err.message}`, "schema");
        }
        try {
          this.grammar = compileSchema(schema);
        } catch (err) {
          if (err instanceof SchemaError) throw new InputError(`This schema cannot be used: ${err.message}`, "schema");
          throw err;
        }
        return schema;
      },
      maxNewTokens: () =>
        parseInteger(this.field("maxNewTokens").value, {
          label: "Max new tokens",
          name: "maxNewTokens",
          min: 1,
          max: this.model?.info.config.n_positions ?? Infinity,
        }),
      temperature: () => parseNumber(this.field("temperature").value, { label: "Temperature", name: "temperature", min: 0, max: 10 }),
      seed: () =>
        this.field("seed").value.trim() === "" ? undefined : parseInteger(this.field("seed").value, { label: "The seed", name: "seed", min: 0, max: MAX_SEED }),
    });
    if (values.seed === undefined) delete values.seed;
    return values;
  }

  request() {
    return { prompt: this.field("prompt").value, options: this.options() };
  }

  /** What a run will do, in one line above the buttons: decoding, length, the schema's grammar. */
  describe({ maxNewTokens, temperature, seed }) {
    const seedText = seed === undefined ? "a random seed" : `seed ${seed}`;
    const how = temperature === 0 ? `Greedy decoding (at temperature 0, ${seedText} changes nothing)` : `Sampling at temperature ${temperature}, ${seedText}`;
    const { states, bytesToEnd, start } = this.grammar;
    this.$(".plan").textContent =
      `${how}, up to ${maxNewTokens} new tokens. The schema's grammar has ${states.toLocaleString("en")} states; ` +
      `its shortest JSON is ${bytesToEnd[start]} characters.`;
  }

  async compute({ prompt, options }) {
    const model = this.model || (await this.useModel({ backend: this.field("backend").value }));
    if (!model) return null;
    const out = this.$(".json");
    out.replaceChildren();
    this.$("tbody").replaceChildren();
    this.$(".verdict").textContent = "";
    for (const key of ["reason", "text", "parses"]) delete this.dataset[key];
    this.dataset.ids = "[]";
    this.showProgress("Reading the prompt and compiling the schema…");
    return this.whileRunning(async () => {
      const ids = [];
      this.run = model.generate(prompt, { ...options, alternatives: 0, stopAtEos: false });
      for await (const token of this.run) {
        ids.push(token.id);
        this.dataset.ids = JSON.stringify(ids);
        this.drawToken(token);
        if (this.dataset.state !== "ready") this.showReady("Writing… (Stop or Esc ends it)");
      }
      return { ...(await this.run.result), text: model.tokenizer.decode(ids) };
    });
  }

  drawToken(token) {
    const { allowed, allowedAny, removed, blocked, maskMs } = token.guide;
    const forced = removed > 0.5 ? " forced" : "";
    const title = `allowed ${allowed.toLocaleString("en")} tokens; the mask removed ${formatProb(removed)} of the probability`;
    this.$(".json").insertAdjacentHTML("beforeend", `<span class="tok${forced}" title="${escapeHtml(title)}">${escapeHtml(token.text)}</span>`);
    const wanted = blocked ? `“${shown(blocked.text)}” ${formatProb(blocked.prob)}` : `<span class="muted">its first choice was allowed</span>`;
    this.$("tbody").insertAdjacentHTML(
      "beforeend",
      `<tr data-id="${token.id}" data-allowed="${allowed}" data-allowed-any="${allowedAny}" data-removed="${removed}" data-mask-ms="${maskMs}">
        <td class="num">${token.index + 1}</td><td>“${shown(token.piece)}”</td><td class="num">${allowed.toLocaleString("en")}</td>
        <td class="num">${formatProb(removed)}</td><td>${wanted}</td></tr>`,
    );
  }

  draw(result) {
    if (result.tail) this.$(".json").insertAdjacentText("beforeend", result.tail);
    this.dataset.seed = String(result.seed);
    this.dataset.reason = result.reason;
    this.dataset.text = result.text;
    let verdict;
    try {
      JSON.parse(result.text);
      this.dataset.parses = "true";
      verdict = "✓ JSON.parse reads it, and the schema's grammar accepted every token.";
    } catch (err) {
      this.dataset.parses = "false";
      verdict = result.reason === "stopped" ? "Stopped before the JSON was complete: it does not parse yet." : `✗ It does not parse: ${err.message}`;
    }
    this.$(".verdict").textContent = verdict;
    return `${result.message} Seed ${result.seed}.`;
  }
}

define("tx-guided-json", TxGuidedJson);
