/**
 * PipelineStage, the base of the <tx-stage-*> widgets (and of <tx-pipeline>): the shared
 * prompt box, model-sized pickers and other controls, and an output area redrawn whenever
 * the prompt or a control changes.
 * @module widgets/pipeline/stage
 */
import { Widget } from "../widget.js";
import { options, showCellValues } from "./figures.js";
import { PIPELINE_NEEDS, encodePrompt, runForward, truncationNote } from "./forward.js";
import { bindPrompt, promptBar } from "./prompt.js";
import { PIPELINE_CSS } from "./styles.js";

/** The selects a stage can ask for: label, the config entry that sizes it, option prefix. */
const PICKERS = {
  layer: { label: "Block", size: "n_layer", prefix: "block" },
  head: { label: "Head", size: "n_head", prefix: "head" },
};

/**
 * Base of the <tx-stage-*> widgets, a `Widget` (widget.js): the shared prompt box, optional
 * controls, and an output area redrawn by `figure(context)` whenever the prompt or a control
 * changes. Its `compute` loads the model and runs the forward pass, its `draw` the figure.
 * Subclasses set `controls()` (markup) and `figure({model, ids, run, enc})` (returns HTML, may
 * be async), and `wireControls()` for listeners beyond redrawing.
 * `data-state` is "ready" once the figure is drawn; `data-runs` counts the drawings.
 */
export class PipelineStage extends Widget {
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

  setup() {
    showCellValues(this.shadowRoot);
    this.unbindPrompt = bindPrompt(this, () => this.update());
    this.shadowRoot
      .querySelectorAll(".pl-controls select, .pl-controls input")
      .forEach((el) => el.addEventListener(el.type === "range" || el.type === "number" ? "input" : "change", () => this.update()));
    this.wireControls();
  }

  /** Subclass hook: listeners of the widget's own controls beyond redrawing (e.g. a Play button). */
  wireControls() {}

  /** Instant navigation removes the page's widgets: stop listening for prompt changes. */
  unmount() {
    this.unbindPrompt?.();
    this.generation++;
  }

  /** Current value of a control, as a number. */
  num(selector) {
    return Number(this.$(selector).value);
  }

  /** The model, the prompt's tokens and (when the figure needs it) the forward pass. */
  async compute() {
    const stale = this.staleCheck();
    this.showProgress("Loading the model…");
    const model = await this.useModel({ needs: PIPELINE_NEEDS });
    if (!model) return null;
    this.fillPickers(model);
    const enc = encodePrompt(model, this.$(".pl-prompt input").value);
    const note = this.$(".pl-trunc");
    note.textContent = truncationNote(enc);
    note.hidden = !enc.truncated;
    this.showProgress("Running the model…");
    const run = this.needsForward() ? await runForward(model, enc.ids) : null;
    return stale() ? null : { model, ids: enc.ids, run, enc };
  }

  /** Draw the figure; the status line says which model drew it. */
  async draw(context) {
    const stale = this.staleCheck();
    const html = await this.figure(context);
    if (stale()) return "";
    this.$(".pl-out").innerHTML = html;
    this.dataset.runs = String(Number(this.dataset.runs || 0) + 1);
    const { name, variant, backend } = context.model.info;
    return `${name} · ${variant} · ${backend}`;
  }
}
