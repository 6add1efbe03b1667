/**
 * What the "Looking inside the model" widgets share: the site's model loaded with its inspect
 * graph (runtime/interpret.js), a badge saying where it runs, the inputs kept in the page address
 * (url-state.js), and long runs (one pass per head or per position) with a progress bar and a
 * Cancel button. They are `Widget`s (widget.js) whose `compute` loads the model and calls
 * `run(model, stale)`: a subclass gives `static heading`, `static stateNames`, `body()` and
 * `run(model, stale)`, which draws and returns the status line; it calls `this.saveState()` when
 * an input changes and `this.update()` to run again.
 *
 * Common attributes: `backend` ("auto", "webgpu", "wasm"), `model`, `variant`.
 * @module widgets/inspect-base
 */
import { BACKEND_FIELD, PROMPT_FIELD, escapeHtml, formatProb, visible } from "./base.js";
import { readState, writeState } from "./url-state.js";
import { Widget } from "./widget.js";

/** How long after the last keystroke a widget runs again, ms. */
const INPUT_PAUSE_MS = 300;

/** The inputs every inspect widget keeps in the address. */
const COMMON_STATE = ["backend"];

export const INSPECT_CSS = `<style>
  .scroll { overflow-x: auto; max-width: 100%; }
  table.grid { border-collapse: collapse; font-size: 0.78em; }
  table.grid th { font-weight: normal; padding: 0.15em 0.3em; white-space: nowrap; text-align: right; }
  table.grid thead th { text-align: center; }
  table.grid td { padding: 0; border: 1px solid var(--tx-border, #ccc); text-align: center; }
  table.grid td button { all: unset; box-sizing: border-box; display: block; cursor: pointer; min-width: 2.2em; padding: 0.2em 0.25em; color: #111; }
  table.grid td button:focus-visible { outline: 2px solid var(--tx-accent); outline-offset: -2px; }
  table.grid td.picked { outline: 2px solid var(--tx-accent); outline-offset: -2px; }
  .cell-token { display: block; white-space: nowrap; }
  .cell-value { display: block; font-size: 0.85em; opacity: 0.8; }
  .grid-figure, .pl-fig { margin: 0.5em 0; }
  .pl-fig figcaption { font-size: 0.8em; opacity: 0.85; }
  .pl-fig svg { max-width: 100%; height: auto; font-size: 10px; }
  .pl-readout { font-size: 0.8em; margin: 0.1em 0 0; min-height: 1.3em; }
  table.topk.largest-table { width: auto; }
  .legend { font-size: 0.8em; opacity: 0.85; margin: 0.2em 0; }
  .cancel[hidden] { display: none; }
  .note { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
  .random-note { font-size: 0.85em; opacity: 0.9; }
  .pair { display: grid; gap: 0.4em; }
  .cols { display: flex; flex-wrap: wrap; gap: 1em; }
  .cols > * { flex: 1 1 16em; min-width: 0; }
</style>`;

export class TxInspect extends Widget {
  /** The widget's title line (a subclass sets its own: static, so it cannot shadow a DOM member). */
  static heading = "";

  /** Attribute names kept in the address, besides backend; "prompt" among them draws the prompt box. */
  static stateNames = [];

  /** The widget-specific markup. */
  body() {
    return "";
  }

  template() {
    return `
      <div class="title">${this.constructor.heading} <span class="badge" title="Where the model runs"></span></div>
      <div class="row">
        ${BACKEND_FIELD}
        <button type="button" class="cancel" hidden>Cancel</button>
      </div>
      ${this.constructor.stateNames.includes("prompt") ? PROMPT_FIELD : ""}
      ${this.body()}
      <p class="note notices" role="note" hidden></p>
      <p class="note random-note" hidden></p>
      ${INSPECT_CSS}`;
  }

  mount() {
    readState(this.host, [...COMMON_STATE, ...this.constructor.stateNames]);
    const select = this.$('select[name="backend"]');
    select.value = this.getAttribute("backend") ?? "auto";
    if (!select.value) select.value = "auto";
    select.addEventListener("change", () => {
      this.saveState();
      this.update();
    });
    this.$(".cancel").addEventListener("click", () => this.controller?.abort());
    super.mount();
  }

  /**
   * Once the reader has paused typing for INPUT_PAUSE_MS: `beforeRun()`, save the inputs in the
   * address and run again (each change restarts the wait).
   */
  rerunSoon(beforeRun = () => {}) {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => this.rerunNow(beforeRun), INPUT_PAUSE_MS);
  }

  /** `beforeRun()`, save the inputs in the address and run again now (a choice, not typing). */
  rerunNow(beforeRun = () => {}) {
    clearTimeout(this.pending);
    beforeRun();
    this.saveState();
    this.update();
  }

  /** Write the current inputs into the address (`currentState()` gives them). */
  saveState() {
    writeState(this.host, {
      backend: this.$('select[name="backend"]').value === "auto" ? null : this.$('select[name="backend"]').value,
      ...this.currentState(),
    });
  }

  /** Subclass hook: the values of `stateNames` now. */
  currentState() {
    return {};
  }

  /** Load the model (once per page) and run the widget's computation (`run`); its line is drawn. */
  async compute() {
    const stale = this.staleCheck();
    this.controller?.abort();
    // At once, not when the model answers: until the new result is drawn, what the widget shows
    // is the old input's, and a pick on it (a cell) is redrawn away.
    this.showProgress(this.model ? "Running again…" : "Starting…");
    const model = await this.useModel({ needs: ["inspect"], backend: this.$('select[name="backend"]').value });
    if (!model) return null;
    this.showRandomNote(model.info);
    return this.run(model, stale);
  }

  /** The line `run` returned. */
  draw(line) {
    return line;
  }

  /** Subclass hook: compute and draw with `model`, return the status line; `stale()` is true once a newer run began. */
  async run() {}

  /**
   * Run a long computation with progress ("label: 12 of 144 runs") and Cancel.
   * @param {string} label
   * @param {(options: {onProgress: Function, signal: AbortSignal}) => Promise<any>} fn
   */
  async steps(label, fn) {
    this.controller = new AbortController();
    const { signal } = this.controller;
    const cancel = this.$(".cancel");
    cancel.hidden = false;
    try {
      return await fn({
        signal,
        onProgress: (loaded, total) => {
          this.dataset.progress = `${loaded}/${total}`;
          this.showProgress(label, { loaded, total, unit: "runs" });
        },
      });
    } catch (err) {
      if (err?.name === "AbortError") err.message = `Cancelled after ${this.dataset.progress?.replace("/", " of ") ?? "0"} runs.`;
      throw err;
    } finally {
      cancel.hidden = true;
    }
  }

  /**
   * A long run started by a button: `compute(model, {onProgress, signal})` with progress and
   * Cancel, then `draw(model, result)`, which returns how many runs it took; errors and a
   * cancel are shown in the status line. Dropped when the inputs changed meanwhile.
   */
  async runLong(label, compute, draw) {
    const generation = this.generation;
    const model = this.model;
    if (!model) return this.update();
    this.showProgress(`${label}…`); // at once: the first run's progress comes after its first pass
    try {
      const started = performance.now();
      const result = await this.steps(label, (options) => compute(model, options));
      if (generation !== this.generation) return;
      const runs = draw(model, result);
      this.showReady(`${runs} runs in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
    } catch (err) {
      if (generation !== this.generation) return;
      if (err?.name === "AbortError") this.showReady(err.message);
      else this.showError(err, { retry: () => this.runLong(label, compute, draw) });
    }
  }

  /** Say when the model has random weights (its numbers then show no structure). */
  showRandomNote({ name, randomWeights }) {
    const random = this.$(".random-note");
    random.hidden = !randomWeights;
    random.textContent = randomWeights
      ? `This site serves “${name}”, a model with random weights: the numbers are this model's, computed exactly, but it has learned nothing, so expect no structure. The page says what trained GPT-2 small shows.`
      : "";
  }

  /** A token as visible text (spaces as ␣), escaped for HTML. */
  piece(model, id) {
    return escapeHtml(this.pieceText(model, id));
  }

  /** A token as visible text, not escaped (for labels that are escaped later). */
  pieceText(model, id) {
    return visible(model.tokenizer.tokenToString(id));
  }

  /**
   * A top-k table: rank, token, probability (and `extra` columns).
   * @param {object} model
   * @param {{id: number, prob: number, extra?: string[]}[]} rows
   * @param {{caption: string, name: string, extraHeads?: string[]}} options
   */
  topTable(model, rows, { caption, name, extraHeads = [] }) {
    const head = ["#", "token", "probability", ...extraHeads].map((h) => `<th>${h}</th>`).join("");
    const body = rows
      .map(
        ({ id, prob, extra = [] }, i) =>
          `<tr data-id="${id}" data-prob="${prob}"><td>${i + 1}</td><td class="token">${this.piece(model, id)}</td><td>${formatProb(prob)}</td>${extra.map((e) => `<td>${e}</td>`).join("")}</tr>`,
      )
      .join("");
    return `<p class="legend">${caption}</p><table class="topk ${name}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
  }

  /** Read a prompt's token ids, with clear messages for empty or too long prompts. */
  encode(model, text, { max = 64, what = "The prompt" } = {}) {
    const ids = model.tokenizer.encode(text);
    if (ids.length === 0) throw new RangeError(`${what} is empty: type some text.`);
    if (ids.length > max) throw new RangeError(`${what} is ${ids.length} tokens; these views take at most ${max}, so shorten it.`);
    return ids;
  }
}

/**
 * Heads written "layer.head", separated by commas or spaces ("9.6, 9.9"), checked against the model.
 * @returns {[number, number][]}
 * @throws {RangeError} naming the first entry that is not a head of this model
 */
export function parseHeads(text, { n_layer: L, n_head: nh }) {
  const heads = [];
  for (const entry of String(text)
    .split(/[\s,]+/)
    .filter(Boolean)) {
    const match = /^(\d+)\.(\d+)$/.exec(entry);
    const [l, h] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
    if (!match || l >= L || h >= nh) {
      throw new RangeError(
        `“${entry}” is not a head of this model: write layer.head, with layer 0 to ${L - 1} and head 0 to ${nh - 1} (e.g. ${L - 1}.${nh - 1}).`,
      );
    }
    if (!heads.some(([a, b]) => a === l && b === h)) heads.push([l, h]);
  }
  return heads;
}
