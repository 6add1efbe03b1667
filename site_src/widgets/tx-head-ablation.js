/**
 * <tx-head-ablation>: switch attention heads off and see the next-token distribution change:
 * KL divergence and the top 10 before and after; then a map of every head's effect on this
 * prediction (each head ablated alone, one run per head, with progress and Cancel).
 *
 * Attributes (all optional):
 *   prompt    the text, default "When Mary and John went to the store, John gave a drink to"
 *   heads     the heads to switch off, "layer.head" separated by commas, e.g. "9.6, 9.9"
 *   mode      "zero" (the head's output becomes 0) or "mean" (its mean over the prompt's positions)
 *   backend   "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model     a model name under models/ (default: the site's default model)
 *   variant   a weight variant of the model; default: the best for the backend
 */
import { ablateHeads, headImportance, topProbs } from "../runtime/interpret.js";
import { formatProb } from "./base.js";
import { headGridHTML, onCellPick } from "./grid.js";
import { TxInspect, parseHeads } from "./inspect-base.js";
import { define } from "./widget.js";

const MAX_TOKENS = 32;
const TOP = 10;
const MODES = ["zero", "mean"];

class TxHeadAblation extends TxInspect {
  static heading = "Head ablation: switch heads off";

  static stateNames = ["prompt", "heads", "mode"];

  body() {
    return `
      <div class="row">
        <label>Heads to switch off <input name="heads" type="text" spellcheck="false" placeholder="e.g. 9.6, 9.9" size="14"></label>
        <label>Ablation <select name="mode"><option value="zero">zero</option><option value="mean">mean over positions</option></select></label>
      </div>
      <p class="summary" aria-live="polite"></p>
      <div class="cols"><div class="before"></div><div class="after"></div></div>
      <div class="row"><button type="button" class="map-button">Map every head's effect</button></div>
      <div class="map"></div>`;
  }

  setup() {
    this.$("textarea").value = this.getAttribute("prompt") ?? "When Mary and John went to the store, John gave a drink to";
    this.$('input[name="heads"]').value = this.getAttribute("heads") ?? "";
    const mode = this.getAttribute("mode") ?? "zero";
    this.$('select[name="mode"]').value = MODES.includes(mode) ? mode : "zero";
    this.badMode = MODES.includes(mode) ? null : mode;
    const reset = () => {
      this.badMode = null;
    };
    const changed = () => this.rerunSoon(reset);
    this.$("textarea").addEventListener("input", () => {
      this.$(".map").innerHTML = ""; // the map was of another prompt
      changed();
    });
    this.$('input[name="heads"]').addEventListener("input", changed);
    this.$('select[name="mode"]').addEventListener("change", () => {
      this.$(".map").innerHTML = ""; // the map was of the other mode
      this.rerunNow(reset);
    });
    this.$(".map-button").addEventListener("click", () => this.runMap());
    // a head picked on the map joins (or leaves) the heads switched off
    onCellPick(this.shadowRoot, "heads", (l, h) => {
      const input = this.$('input[name="heads"]');
      let chosen;
      try {
        chosen = parseHeads(input.value, this.model.info.config);
      } catch {
        chosen = []; // the box held something else: the picked head replaces it
      }
      const kept = chosen.filter(([a, b]) => a !== l || b !== h);
      input.value = [...kept, ...(kept.length < chosen.length ? [] : [[l, h]])].map(([a, b]) => `${a}.${b}`).join(", ");
      this.rerunNow(reset);
    });
  }

  currentState() {
    return { prompt: this.$("textarea").value, heads: this.$('input[name="heads"]').value.trim(), mode: this.$('select[name="mode"]').value };
  }

  /** The inputs, checked: token ids, heads, mode. */
  inputs(model) {
    if (this.badMode) throw new RangeError(`The mode must be “zero” or “mean”, not “${this.badMode}”.`);
    const ids = this.encode(model, this.$("textarea").value, { max: MAX_TOKENS });
    return { ids, heads: parseHeads(this.$('input[name="heads"]').value, model.info.config), mode: this.$('select[name="mode"]').value };
  }

  async run(model, stale) {
    const { ids, heads, mode } = this.inputs(model);
    this.showProgress("Running the model…");
    const { before, after, kl } = await ablateHeads(model, ids, heads, mode);
    if (stale()) return;
    const top = topProbs(before, TOP);
    this.$(".before").innerHTML = this.topTable(model, top, { caption: "Before: the model as it is", name: "before-table" });
    const after10 = topProbs(after, TOP).map((t) => ({ ...t, extra: [formatProb(before[t.id])] }));
    this.$(".after").innerHTML = heads.length
      ? this.topTable(model, after10, {
          caption: `After switching off ${heads.map(([l, h]) => `${l}.${h}`).join(", ")} (${mode})`,
          name: "after-table",
          extraHeads: ["before"],
        })
      : "";
    this.dataset.kl = String(kl);
    this.$(".summary").textContent = heads.length
      ? `KL(before ‖ after) = ${kl.toPrecision(3)} nats. The top token “${this.pieceText(model, top[0].id)}” goes from ${formatProb(before[top[0].id])} to ${formatProb(after[top[0].id])}.`
      : `Name heads to switch off (layer.head) for ${mode === "mean" ? "mean" : "zero"} ablation, or map every head below and click one.`;
    return `${ids.length} tokens; ${heads.length} head${heads.length === 1 ? "" : "s"} off.`;
  }

  /** Ablate every head alone and draw the KL of each. */
  runMap() {
    const mode = this.$('select[name="mode"]').value;
    const compute = (model, options) => headImportance(model, this.inputs(model).ids, mode, options);
    return this.runLong(`Ablating each head in turn (${mode})`, compute, (model, { kl }) => {
      const { n_layer: L, n_head: nh } = model.info.config;
      this.$(".map").innerHTML = headGridHTML({
        name: "heads",
        caption: `KL(before ‖ after) with each head switched off alone (${mode} ablation); darker = the prediction depends more on it. Click a head to switch it off above.`,
        values: kl,
        L,
        nh,
        text: (v) => v.toPrecision(2),
        title: (l, h, v) => `head ${l}.${h}: KL ${v.toPrecision(3)} nats`,
      });
      return L * nh;
    });
  }
}

define("tx-head-ablation", TxHeadAblation);
