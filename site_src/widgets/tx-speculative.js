/**
 * <tx-speculative>: speculative decoding on the site's GPT-2 in your browser. A draft made of
 * the model's first blocks (an early exit, shipped with the model) proposes a few tokens one at
 * a time; the model checks them all in one pass and keeps a prefix; every round is drawn with
 * what was kept, what was refused and what the model wrote instead. The model can then write
 * the same text alone, to compare the texts and the time per token.
 *
 * runtime/speculative.js has the rule (Leviathan et al., 2023); the worker runs both models,
 * each with its own key-value cache cut back after every round.
 *
 * Attributes (all optional):
 *   prompt          initial text, default "The attention weights of a head"
 *   gamma           proposals a round, 1 to 8, default 4
 *   max-new-tokens  1 to 64, default 32
 *   temperature     0 (greedy, the default) to 2
 *   seed            the sampling seed (temperature above 0; the field is disabled at 0), default 1
 *   compare         "true" (default): also run the model alone; "false": not
 *   backend         "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model           a model name under models/ (default: the site's default model)
 *   variant         a weight variant of the model; default: the best for the backend
 *
 * For tests and embedding pages the element exposes `data-state`, `data-running`, `data-runs`,
 * `data-reason`, `data-tokens` (JSON of the new token ids), `data-proposed` and `data-accepted`
 * (JSON, per round), `data-target-passes`, `data-ms-per-token`, and after a comparison
 * `data-alone-tokens` and `data-alone-ms-per-token`; each proposal shown has `data-token`,
 * `data-fate` ("kept", "refused" or "unchecked"), `data-draft-prob` and, for a proposal the
 * model checked, `data-target-prob`.
 */
import { SPECULATIVE_LIMITS } from "../runtime/speculative.js";
import { MAX_SEED } from "../runtime/rng.js";
import { BATCH_INVARIANT } from "../runtime/variants.js";
import { BACKEND_FIELD, attributeValues, escapeHtml, formatProb, visible } from "./base.js";
import { parseInteger, parseNumber } from "./inputs.js";
import { RunWidget } from "./run-widget.js";
import { define } from "./widget.js";

/** What became of a proposal: class, words. */
const FATES = {
  kept: "kept: the model agrees",
  refused: "refused: the model writes its own token instead",
  unchecked: "not checked: an earlier proposal was refused",
};

const STYLE = `
  .title { display: flow-root; }
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .rate { color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 18.5em), 1fr)); gap: 0.4em 1.2em; margin: 0.5em 0; }
  .grid label { display: grid; grid-template-columns: 8.5em minmax(0, 1fr); align-items: center; gap: 0.4em; }
  .grid input, .grid select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .grid label.check { grid-template-columns: auto 1fr; }
  .grid label.check input { width: auto; }
  [aria-invalid="true"] { outline: 2px solid #c62828; }
  h4 { margin: 0.8em 0 0.3em; font-size: 1em; }
  .plan { margin: 0.2em 0 0.5em; color: var(--tx-muted); }
  .text { margin: 0.3em 0; overflow-wrap: anywhere; white-space: pre-wrap; }
  .given { color: var(--tx-muted); }
  .summary { margin: 0.3em 0; padding: 0; list-style: none; font-variant-numeric: tabular-nums; }
  .summary li { margin: 0.15em 0; }
  .same { color: #2e7d32; font-weight: 600; }
  .differs { color: #c62828; font-weight: 600; }
  .rounds { margin: 0; padding: 0; list-style: none; }
  .rounds > li { margin: 0.3em 0; display: flex; flex-wrap: wrap; gap: 0.25em; align-items: baseline; }
  .rounds .n { min-width: 4.6em; color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  .tok { display: inline-flex; gap: 0.3em; align-items: baseline; max-width: 100%; box-sizing: border-box; white-space: pre;
         border: 1px solid var(--tx-border); border-radius: 4px; padding: 0.05em 0.4em; overflow-wrap: anywhere; }
  .tok.kept { border: 2px solid #2e7d32; background: color-mix(in srgb, #2e7d32 12%, transparent); }
  .tok.refused { border: 2px solid #c62828; text-decoration: line-through; }
  .tok.unchecked { color: var(--tx-muted); border-style: dashed; }
  .tok.model { border: 2px solid var(--tx-accent); font-weight: 600; }
  .key { display: flex; flex-wrap: wrap; gap: 0.3em 0.9em; margin: 0.3em 0; color: var(--tx-muted); }
  .scroll { max-height: 24em; overflow-y: auto; }
  .notices { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
`;

/** Milliseconds, rounded for reading. */
const ms = (x) => `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`;
const sum = (values) => values.reduce((a, b) => a + b, 0);

class TxSpeculative extends RunWidget {
  template() {
    const { maxGamma, maxNewTokens, maxTemperature } = SPECULATIVE_LIMITS;
    const key =
      Object.entries(FATES)
        .map(([fate, words]) => `<span><span class="tok ${fate}">token</span> ${words}</span>`)
        .join("") + `<span><span class="tok model">token</span> written by the model</span>`;
    return `
      <style>${STYLE}</style>
      <div class="title">Speculative decoding on GPT-2: the draft proposes, the model checks <span class="badge" title="Where the model runs"></span></div>
      <label class="prompt">Prompt <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>
      <div class="grid">
        <label>Proposals a round <input name="gamma" type="number" min="1" max="${maxGamma}" step="1" inputmode="numeric"></label>
        <label>Max new tokens <input name="maxNewTokens" type="number" min="1" max="${maxNewTokens}" step="1" inputmode="numeric"></label>
        <label>Temperature <input name="temperature" type="number" min="0" max="${maxTemperature}" step="0.1" inputmode="decimal"></label>
        <label>Seed <input name="seed" type="number" min="0" max="${MAX_SEED}" step="1" inputmode="numeric"></label>
        <label class="check"><input name="compare" type="checkbox"> then let the model write alone, to compare</label>
        ${BACKEND_FIELD}
      </div>
      <p class="plan" aria-live="polite"></p>
      <div class="row buttons">
        <button type="button" class="go">Decode</button>
        <button type="button" class="stop" disabled>Stop</button>
        <span class="rate"></span>
      </div>
      <p class="text" aria-live="polite"></p>
      <ul class="summary"></ul>
      <h4>Every round: the draft's proposals, then the model's token</h4>
      <div class="key" aria-label="Key">${key}</div>
      <div class="scroll"><ol class="rounds" aria-label="The rounds"></ol></div>
      <p class="notices" role="note" hidden></p>`;
  }

  setup() {
    const start = attributeValues(this.host, {
      prompt: "The attention weights of a head",
      gamma: "4",
      max_new_tokens: "32",
      temperature: "0",
      seed: "1",
      compare: "true",
      backend: "auto",
    });
    this.field("prompt").value = start.prompt;
    this.field("gamma").value = start.gamma;
    this.field("maxNewTokens").value = start.max_new_tokens;
    this.field("temperature").value = start.temperature;
    this.field("seed").value = start.seed;
    this.field("compare").checked = start.compare !== "false";
    this.field("backend").value = start.backend;
    this.wireRuns({ settings: ["gamma", "maxNewTokens", "temperature", "seed", "compare"], readyLine: "Ready: press Decode (or Ctrl+Enter in the prompt)." });
    this.settingsChanged();
  }

  /**
   * The settings as `speculative()` options, each field marked valid or not.
   * @throws {InputError} naming the first field that is not valid (Decode is then disabled)
   */
  options() {
    const { minGamma, maxGamma, maxNewTokens, maxTemperature } = SPECULATIVE_LIMITS;
    const values = this.fieldValues({
      gamma: () => parseInteger(this.field("gamma").value, { label: "Proposals a round", name: "gamma", min: minGamma, max: maxGamma }),
      maxNewTokens: () => parseInteger(this.field("maxNewTokens").value, { label: "Max new tokens", name: "maxNewTokens", min: 1, max: maxNewTokens }),
      temperature: () => parseNumber(this.field("temperature").value, { label: "The temperature", name: "temperature", min: 0, max: maxTemperature }),
    });
    if (values.temperature === 0) {
      this.field("seed").setAttribute("aria-invalid", "false"); // greedy: no seed is read
      return { ...values, compare: this.field("compare").checked };
    }
    const { seed } = this.fieldValues({
      seed: () => parseInteger(this.field("seed").value, { label: "The seed", name: "seed", min: 0, max: MAX_SEED }),
    });
    return { ...values, seed, compare: this.field("compare").checked };
  }

  request() {
    return { prompt: this.field("prompt").value, options: this.options() };
  }

  /** The run the settings ask for, in one sentence; the seed is offered only when sampling. */
  describe({ gamma, maxNewTokens, temperature, seed, compare }) {
    this.field("seed").disabled = temperature === 0;
    const how =
      temperature === 0
        ? "greedy (the model's own greedy text, exactly)"
        : `sampled at temperature ${temperature} with seed ${seed} (from the model's own distribution)`;
    const alone = compare ? "; then the model alone, for comparison" : "";
    this.$(".plan").textContent = `Up to ${gamma} proposal${gamma === 1 ? "" : "s"} a round, ${maxNewTokens} new tokens, ${how}${alone}.`;
  }

  /** The model scores a round's proposals in one pass: each as a pass of one would, or greedy is not exact. */
  modelNeeds() {
    return [BATCH_INVARIANT];
  }

  async compute({ prompt, options: { compare, ...options } }) {
    const model = this.model || (await this.useModel({ backend: this.field("backend").value, needs: this.modelNeeds() }));
    if (!model) return null;
    this.clear();
    this.promptText = prompt;
    this.showProgress("Loading the draft model…");
    return this.whileRunning(async () => {
      this.run = model.speculative(prompt, options);
      let text = "";
      for await (const event of this.run) {
        if (event.kind === "progress") {
          if (event.stage === "notice") this.noticeLine(event.message);
          else this.showProgress(`Draft model: ${event.message}`, event.total > 1 ? { loaded: event.loaded, total: event.total } : {}); // bytes
          continue;
        }
        text += event.text;
        this.drawRound(event);
        this.showText(text);
        if (this.dataset.state !== "ready") this.showReady("Decoding… (Stop or Esc ends it)");
      }
      const result = await this.run.result;
      if (!compare || result.reason === "stopped") return { result };
      this.showProgress("The model alone…");
      this.run = model.generate(prompt, {
        maxNewTokens: result.tokens.length,
        temperature: options.temperature,
        seed: options.seed,
        stopAtEos: false,
        alternatives: 0,
      });
      const alone = [];
      for await (const token of this.run) alone.push(token.id);
      const summary = await this.run.result;
      return { result, alone: summary.reason === "stopped" ? null : { tokens: alone, msPerToken: summary.totalMs / alone.length } };
    });
  }

  /** A remark about the draft's download (e.g. a variant that did not open), beside the model's. */
  noticeLine(message) {
    const box = this.$(".notices");
    box.textContent = `${box.hidden ? "" : `${box.textContent} `}${message}`;
    box.hidden = false;
  }

  clear() {
    this.$(".rounds").replaceChildren();
    this.$(".summary").replaceChildren();
    this.$(".text").textContent = "";
    this.$(".rate").textContent = "";
    for (const key of ["reason", "tokens", "proposed", "accepted", "targetPasses", "msPerToken", "aloneTokens", "aloneMsPerToken"]) delete this.dataset[key];
  }

  showText(text) {
    this.$(".text").innerHTML = `<span class="given">${escapeHtml(this.promptText)}</span>${escapeHtml(text)}`;
  }

  /** One round: each proposal with its fate and both probabilities, then the model's token. */
  drawRound(round) {
    const cells = round.proposals.map((token, i) => {
      const fate = i < round.kept ? "kept" : i === round.kept ? "refused" : "unchecked";
      const target = round.targetProbs[i]; // null when the check stopped before it
      const probs = `draft ${formatProb(round.draftProbs[i])}` + (target === null ? "" : `, model ${formatProb(target)}`);
      const label = `“${visible(round.pieces[i])}”: ${probs}; ${FATES[fate]}`;
      return `<span class="tok ${fate}" title="${escapeHtml(label)}" aria-label="${escapeHtml(label)}" data-token="${token}" data-fate="${fate}"
        data-draft-prob="${round.draftProbs[i]}"${target === null ? "" : ` data-target-prob="${target}"`}>${escapeHtml(visible(round.pieces[i]))}</span>`;
    });
    const why = round.fromResidual ? "instead of the refused proposal" : round.proposals.length ? "after every proposal was kept" : "its own next token";
    const label = `“${visible(round.lastPiece)}”: written by the model (probability ${formatProb(round.lastProb)}), ${why}`;
    cells.push(
      `<span class="tok model" title="${escapeHtml(label)}" aria-label="${escapeHtml(label)}" data-token="${round.last}">${escapeHtml(visible(round.lastPiece))}</span>`,
    );
    const kept = `${round.kept}/${round.proposals.length}`;
    this.$(".rounds").insertAdjacentHTML(
      "beforeend",
      `<li aria-label="Round ${round.index + 1}: ${kept} kept"><span class="n">round ${round.index + 1} · ${kept}</span>${cells.join("")}</li>`,
    );
  }

  draw({ result, alone }) {
    this.showText(result.text);
    this.dataset.reason = result.reason;
    this.dataset.tokens = JSON.stringify(result.tokens);
    this.dataset.proposed = JSON.stringify(result.proposed);
    this.dataset.accepted = JSON.stringify(result.accepted);
    this.dataset.targetPasses = String(result.targetPasses);
    if (result.msPerToken) this.dataset.msPerToken = String(result.msPerToken);
    const kept = sum(result.accepted);
    const offered = sum(result.proposed);
    const n = result.tokens.length;
    const { draft } = result;
    const lines = [
      `${n} tokens from ${result.targetPasses} passes of the model: <b>${(n / result.targetPasses).toFixed(2)} tokens a pass</b>` +
        (offered ? `; ${kept} of ${offered} proposals kept (${Math.round((100 * kept) / offered)}%)` : ""),
      `The draft (the first ${draft.blocks} of ${draft.of} blocks, ${draft.variant}) ran ${result.draftPasses} times, ${ms(result.draftMs)}; ` +
        `the model ${ms(result.targetMs)}; ${ms(result.msPerToken ?? 0)} a token in all.`,
    ];
    if (alone) {
      this.dataset.aloneTokens = JSON.stringify(alone.tokens);
      this.dataset.aloneMsPerToken = String(alone.msPerToken);
      const first = alone.tokens.findIndex((id, i) => id !== result.tokens[i]);
      const greedy = result.options.temperature === 0;
      const verdict =
        first < 0
          ? `<span class="same">the same text</span>`
          : greedy
            ? `<span class="differs">a different text from token ${first + 1} on</span>`
            : `a different sample from token ${first + 1} on (at temperature above 0 only the distribution is the same)`;
      const speed = result.msPerToken ? `; speculative decoding took ${(result.msPerToken / alone.msPerToken).toFixed(2)}× its time a token` : "";
      lines.push(`The model alone: ${verdict}, ${ms(alone.msPerToken)} a token${speed}.`);
    }
    this.$(".summary").innerHTML = lines.map((line) => `<li>${line}</li>`).join("");
    this.$(".rate").textContent = `${result.proposed.length} round${result.proposed.length === 1 ? "" : "s"}`;
    return result.message;
  }
}

define("tx-speculative", TxSpeculative);
