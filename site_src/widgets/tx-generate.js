/**
 * <tx-generate>: type a prompt and watch the site's GPT-2 continue it, token by token,
 * in your browser (onnxruntime-web on WebGPU or WASM, with a KV cache).
 *
 * Each new token is coloured by the probability the model gave it, with a matching
 * underline style so the shading is readable without colour, and lists the model's
 * top alternatives on hover or keyboard focus (arrow keys move between tokens).
 *
 * Attributes (all optional):
 *   prompt          initial text, default "The Transformer is a"
 *   max-new-tokens  default 40
 *   temperature     default 0.8 (0 = greedy)
 *   top-k           default 0 (off)
 *   top-p           default 0.95 (1 = off)
 *   seed            a whole number; empty = a fresh random seed each run (shown afterwards)
 *   backend         "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model           a model name under models/ (default: the site's default model)
 *   variant         a weight variant of the model ("q4", "q8", "fp16", ...); default: the best for the backend
 *
 * For tests and embedding pages the element exposes `data-state`, `data-running`,
 * `data-runs` (finished runs), `data-reason`, `data-seed`, `data-ids` (JSON of the new
 * token ids), `data-tokens-per-second`, `data-backend`, `data-variant`; each token span
 * has `data-id`, `data-prob`, `data-sample-prob` and `data-top` (JSON [{id, prob}]).
 */
import { MAX_SEED } from "../runtime/rng.js";
import { BACKEND_FIELD, escapeHtml, formatProb, visible } from "./base.js";
import { InputError } from "./inputs.js";
import { RunWidget } from "./run-widget.js";
import { define } from "./widget.js";

/** Probability bands: lower bound, class, underline style named in the key. */
const BANDS = [
  { min: 0.5, cls: "p4", label: "≥ 50%", line: "no underline" },
  { min: 0.2, cls: "p3", label: "20–50%", line: "solid" },
  { min: 0.05, cls: "p2", label: "5–20%", line: "dashed" },
  { min: 0.01, cls: "p1", label: "1–5%", line: "dotted" },
  { min: 0, cls: "p0", label: "< 1%", line: "wavy" },
];

const band = (p) => BANDS.find((b) => p >= b.min);

const STYLE = `
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .rate { color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  details.settings { margin: 0.3em 0 0.6em; }
  details.settings summary { cursor: pointer; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(13em, 1fr)); gap: 0.4em 1.2em; margin-top: 0.5em; }
  .grid label { display: grid; grid-template-columns: 8.5em 1fr; align-items: center; gap: 0.4em; }
  .grid input { font: inherit; width: 100%; box-sizing: border-box; }
  .grid input[aria-invalid="true"] { outline: 2px solid #c62828; }
  .hint { color: var(--tx-muted); margin: 0.4em 0 0; }
  .output { white-space: pre-wrap; word-break: break-word; line-height: 1.9; padding: 0.5em 0.6em; min-height: 3.5em;
            border: 1px solid var(--tx-border); border-radius: 4px; background: var(--md-default-bg-color, #fff); }
  .output .given { color: var(--tx-muted); }
  .tok { border-radius: 3px; padding: 0.05em 0; text-decoration-thickness: 2px; text-underline-offset: 3px; cursor: help; }
  .tok:focus { outline: 2px solid var(--tx-accent); outline-offset: 1px; }
  .p4 { background: color-mix(in srgb, #1e88e5 30%, transparent); }
  .p3 { background: color-mix(in srgb, #26a69a 30%, transparent); text-decoration: underline solid; }
  .p2 { background: color-mix(in srgb, #fdd835 20%, transparent); text-decoration: underline dashed; }
  .p1 { background: color-mix(in srgb, #fb8c00 35%, transparent); text-decoration: underline dotted; }
  .p0 { background: color-mix(in srgb, #e53935 35%, transparent); text-decoration: underline wavy; }
  .legend { display: flex; flex-wrap: wrap; gap: 0.3em 0.9em; margin: 0.4em 0; color: var(--tx-muted); }
  .legend .tok { cursor: default; padding: 0 0.3em; color: var(--tx-fg); }
  .alts { position: absolute; z-index: 2; min-width: 14em; max-width: 22em; padding: 0.4em 0.6em; border-radius: 4px;
          border: 1px solid var(--tx-border); background: var(--md-default-bg-color, #fff); box-shadow: 0 2px 8px rgba(0,0,0,0.2); }
  .alts table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  .alts td { padding: 0.05em 0.4em; }
  .alts td:last-child { text-align: right; }
  .alts tr.chosen { font-weight: 700; }
  .alts .head { margin-bottom: 0.3em; }
  .wrap { position: relative; }
  .notices { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
`;

class TxGenerate extends RunWidget {
  template() {
    const legend = BANDS.map((b) => `<span><span class="tok ${b.cls}">${b.label}</span> ${b.line}</span>`).join("");
    return `
      <style>${STYLE}</style>
      <div class="title">GPT-2 writes, one token at a time <span class="badge" title="Where the model runs"></span></div>
      <label class="prompt">Prompt <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>
      <div class="row buttons">
        <button type="button" class="go">Generate</button>
        <button type="button" class="stop" disabled>Stop</button>
        <span class="rate"></span>
      </div>
      <details class="settings">
        <summary>Settings</summary>
        <div class="grid">
          <label>Max new tokens <input name="maxNewTokens" type="number" min="1" step="1" inputmode="numeric"></label>
          <label>Temperature <input name="temperature" type="number" min="0" step="0.05" inputmode="decimal"></label>
          <label>Top-k <input name="topK" type="number" min="0" step="1" inputmode="numeric"></label>
          <label>Top-p <input name="topP" type="number" min="0.01" max="1" step="0.01" inputmode="decimal"></label>
          <label>Seed <input name="seed" type="number" min="0" max="${MAX_SEED}" step="1" placeholder="random" inputmode="numeric"></label>
          ${BACKEND_FIELD}
        </div>
        <p class="hint">Temperature 0 is greedy decoding. Top-k 0 and top-p 1 switch those filters off.
          The same seed and settings give the same text again.</p>
      </details>
      <div class="wrap">
        <div class="output" role="group" aria-label="Prompt and generated text"><span class="given"></span><span class="continuation"></span></div>
        <div class="alts" role="tooltip" id="alts" hidden></div>
      </div>
      <div class="legend" aria-label="Key: probability the model gave each new token">Probability the model gave the token: ${legend}</div>
      <p class="notices" role="note" hidden></p>`;
  }

  setup() {
    const attr = (name, fallback) => this.getAttribute(name) ?? fallback;
    this.$("textarea").value = attr("prompt", "The Transformer is a");
    this.input("maxNewTokens").value = attr("max-new-tokens", "40");
    this.input("temperature").value = attr("temperature", "0.8");
    this.input("topK").value = attr("top-k", "0");
    this.input("topP").value = attr("top-p", "0.95");
    this.input("seed").value = attr("seed", "");
    this.$("select").value = attr("backend", "auto");
    this.wireRuns({ settings: ["maxNewTokens", "temperature", "topK", "topP", "seed"], readyLine: "Ready: press Generate (or Ctrl+Enter in the prompt)." });
    const output = this.$(".continuation");
    output.addEventListener("mouseover", (event) => this.showAlternatives(event.target.closest(".tok")));
    output.addEventListener("mouseleave", () => this.hideAlternatives());
    output.addEventListener("focusin", (event) => this.showAlternatives(event.target.closest(".tok")));
    output.addEventListener("focusout", () => this.hideAlternatives());
    output.addEventListener("keydown", (event) => this.moveFocus(event));
  }

  input(name) {
    return this.$(`.grid input[name="${name}"]`);
  }

  /** The loaded model's limits on the fields. */
  prepare(model) {
    this.input("maxNewTokens").max = String(model.info.config.n_positions);
    this.input("topK").max = String(model.info.config.vocab_size);
  }

  /**
   * The settings as `generate()` options, each field marked valid or not.
   * @throws {InputError} naming the first field that is not valid (Generate is then disabled)
   */
  options() {
    const limits = this.model?.info.config ?? { n_positions: Infinity, vocab_size: Infinity };
    const checks = {
      maxNewTokens: (v) =>
        Number.isInteger(v) && v >= 1 && v <= limits.n_positions ? null : `Max new tokens must be a whole number from 1 to ${limits.n_positions}.`,
      temperature: (v) => (Number.isFinite(v) && v >= 0 && v <= 10 ? null : "Temperature must be a number from 0 (greedy) to 10."),
      topK: (v) => (Number.isInteger(v) && v >= 0 && v <= limits.vocab_size ? null : `Top-k must be a whole number from 0 (off) to ${limits.vocab_size}.`),
      topP: (v) => (Number.isFinite(v) && v > 0 && v <= 1 ? null : "Top-p must be above 0 and at most 1 (1 = off)."),
      seed: (v) =>
        v === null || (Number.isInteger(v) && v >= 0 && v <= MAX_SEED)
          ? null
          : `The seed must be a whole number from 0 to ${MAX_SEED}, or empty for a random one.`,
    };
    const readers = Object.fromEntries(
      Object.entries(checks).map(([name, check]) => [
        name,
        () => {
          const text = this.input(name).value.trim();
          const value = name === "seed" && text === "" ? null : text === "" ? NaN : Number(text);
          const message = check(value);
          if (message) throw new InputError(message, name);
          return value;
        },
      ]),
    );
    const options = this.fieldValues(readers);
    if (options.seed === null) delete options.seed;
    return options;
  }

  request() {
    return { prompt: this.field("prompt").value, options: this.options() };
  }

  /** One run: each token drawn as it comes; the run's result (seed, reason, speed) at the end. */
  async compute({ prompt, options }) {
    const model = this.model || (await this.useModel({ backend: this.field("backend").value }));
    if (!model) return null;
    this.$(".given").textContent = prompt;
    const out = this.$(".continuation");
    out.innerHTML = "";
    this.hideAlternatives();
    delete this.dataset.reason;
    this.dataset.ids = "[]";
    this.$(".rate").textContent = "";
    this.showProgress(prompt ? "Reading the prompt…" : "Empty prompt: starting from <|endoftext|>…");
    return this.whileRunning(async () => {
      const ids = [];
      this.run = model.generate(prompt, options);
      for await (const token of this.run) {
        ids.push(token.id);
        this.dataset.ids = JSON.stringify(ids);
        out.insertAdjacentHTML("beforeend", this.tokenHtml(token));
        if (token.index === 0) out.querySelector(".tok").tabIndex = 0;
        this.showRate(ids.length, token.tokensPerSecond);
        if (this.dataset.state !== "ready") this.showReady("Generating… (Stop or Esc ends it)");
      }
      return this.run.result;
    });
  }

  draw(result) {
    if (result.tail) this.$(".continuation").insertAdjacentText("beforeend", result.tail);
    this.dataset.seed = String(result.seed);
    this.dataset.reason = result.reason;
    this.showRate(result.newTokens, result.tokensPerSecond, result);
    return `${result.message} Seed ${result.seed}.`;
  }

  tokenHtml(token) {
    const { cls } = band(token.prob);
    const top = JSON.stringify(token.top.map(({ id, prob }) => ({ id, prob })));
    const label = `“${visible(token.piece)}”, probability ${formatProb(token.prob)}`;
    return `<span class="tok ${cls}" tabindex="-1" role="button" aria-describedby="alts" aria-label="${escapeHtml(label)}"
      data-index="${token.index}" data-id="${token.id}" data-prob="${token.prob}" data-sample-prob="${token.sampleProb}"
      data-piece="${escapeHtml(token.piece)}" data-top="${escapeHtml(top)}">${escapeHtml(token.text)}</span>`;
  }

  showRate(count, rate, result) {
    const speed = rate ? ` · ${rate.toFixed(1)} tokens/s` : "";
    const first = result ? ` · prompt read in ${Math.round(result.prefillMs)} ms` : "";
    this.$(".rate").textContent = `${count} token${count === 1 ? "" : "s"}${speed}${first}`;
    if (rate) this.dataset.tokensPerSecond = String(rate);
  }

  showAlternatives(span) {
    if (!span || !this.$(".continuation").contains(span)) return;
    const chosen = Number(span.dataset.id);
    const top = JSON.parse(span.dataset.top);
    const tokenizer = this.model.tokenizer;
    const rows = top
      .map(
        ({ id, prob }) => `<tr class="${id === chosen ? "chosen" : ""}">
        <td>${id === chosen ? "✓" : ""}</td><td class="token">${escapeHtml(visible(tokenizer.tokenToString(id)))}</td><td>${formatProb(prob)}</td></tr>`,
      )
      .join("");
    const listed = top.some(({ id }) => id === chosen);
    const box = this.$(".alts");
    box.innerHTML = `<div class="head">Chosen: <span class="token">${escapeHtml(visible(span.dataset.piece))}</span>,
        ${formatProb(Number(span.dataset.prob))}${listed ? "" : " (outside the top list)"}</div>
      <table aria-label="The model's most likely tokens at this step"><tbody>${rows}</tbody></table>`;
    const wrap = this.$(".wrap").getBoundingClientRect();
    const rect = span.getBoundingClientRect();
    box.style.left = `${Math.max(0, Math.min(rect.left - wrap.left, wrap.width - 240))}px`;
    box.style.top = `${rect.bottom - wrap.top + 4}px`;
    box.hidden = false;
  }

  hideAlternatives() {
    this.$(".alts").hidden = true;
  }

  /** Arrow keys, Home and End move the focus between generated tokens (one tab stop). */
  moveFocus(event) {
    const tokens = [...this.$(".continuation").querySelectorAll(".tok")];
    const at = tokens.indexOf(event.target);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: tokens.length - 1 }[event.key];
    if (to === undefined || to < 0 || to >= tokens.length) return;
    event.preventDefault();
    tokens[at].tabIndex = -1;
    tokens[to].tabIndex = 0;
    tokens[to].focus();
  }
}

define("tx-generate", TxGenerate);
