/**
 * PipelineStage, the base of the <tx-stage-*> widgets (and of <tx-pipeline>): the shared
 * prompt box, model-sized pickers and other controls, and an output area redrawn whenever
 * the prompt or a control changes.
 * @module widgets/pipeline/stage
 */
import { TxElement } from "../base.js";
import { options, showCellValues } from "./figures.js";
import { encodePrompt, loadPipelineModel, runForward, truncationNote } from "./forward.js";
import { bindPrompt, promptBar } from "./prompt.js";
import { PIPELINE_CSS } from "./styles.js";

/** The selects a stage can ask for: label, the config entry that sizes it, option prefix. */
const PICKERS = {
  layer: { label: "Block", size: "n_layer", prefix: "block" },
  head: { label: "Head", size: "n_head", prefix: "head" },
};

/**
 * Base of the <tx-stage-*> widgets: the shared prompt box, optional controls, and an output
 * area redrawn by `draw(context)` whenever the prompt or a control changes. Subclasses set
 * `controls()` (markup) and `draw({model, ids, run, enc})` (returns HTML, may be async).
 * `data-state` is "ready" once the figure is drawn; `data-runs` counts the drawings.
 */
export class PipelineStage extends TxElement {
  /** Model-sized selects the widget shows, from PICKERS: e.g. ["layer", "head"]. */
  pickers() {
    return [];
  }

  /** Markup of the widget's own controls (selects, sliders): by default its pickers. */
  controls() {
    return this.pickers()
      .map((name) => `<label>${PICKERS[name].label} <select name="${name}"></select></label>`)
      .join("");
  }

  /** Fill each picker with one option per block or head of `model`, the first time only. */
  fillPickers(model) {
    for (const name of this.pickers()) {
      const select = this.$(`select[name=${name}]`);
      const { size, prefix } = PICKERS[name];
      if (!select.options.length) select.innerHTML = options(model.info.config[size], prefix);
    }
  }

  /** Whether the figure needs the forward pass (tokenization does not). */
  needsForward() {
    return true;
  }

  template() {
    return `${PIPELINE_CSS}${this.css ? `<style>${this.css}</style>` : ""}
      ${promptBar()}
      <div class="pl-row pl-controls">${this.controls()}</div>
      <p class="pl-note pl-trunc" hidden></p>
      <div class="pl-out" aria-live="polite"></div>`;
  }

  mount() {
    this.generation = 0;
    showCellValues(this.shadowRoot);
    this.unbindPrompt = bindPrompt(this, () => this.refresh());
    this.shadowRoot
      .querySelectorAll(".pl-controls select, .pl-controls input")
      .forEach((el) => el.addEventListener(el.type === "range" || el.type === "number" ? "input" : "change", () => this.refresh()));
    this.bind?.();
    this.refresh();
  }

  /** Instant navigation removes the page's widgets: stop listening for prompt changes. */
  disconnectedCallback() {
    this.unbindPrompt?.();
    this.generation++;
  }

  /** Current value of a control, as a number. */
  num(selector) {
    return Number(this.$(selector).value);
  }

  async refresh() {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    try {
      this.showProgress("Loading the model…");
      const model = await loadPipelineModel((event) => {
        if (!stale() && this.dataset.state !== "ready") this.showProgress(event.message, event);
      });
      if (stale()) return;
      this.fillPickers(model);
      this.prepare?.(model);
      const enc = encodePrompt(model, this.$(".pl-prompt input").value);
      const note = this.$(".pl-trunc");
      note.textContent = truncationNote(enc);
      note.hidden = !enc.truncated;
      this.showProgress("Running the model…");
      const run = this.needsForward() ? await runForward(model, enc.ids) : null;
      if (stale()) return;
      const html = await this.draw({ model, ids: enc.ids, run, enc });
      if (stale()) return;
      this.$(".pl-out").innerHTML = html;
      this.afterDraw?.({ model, ids: enc.ids, run });
      this.dataset.runs = String(Number(this.dataset.runs || 0) + 1);
      this.dataset.variant = model.info.variant;
      this.showReady(`${model.info.name} · ${model.info.variant} · ${model.info.backend}`);
    } catch (err) {
      if (stale()) return;
      this.showError(err, { retry: () => this.refresh() });
    }
  }
}
