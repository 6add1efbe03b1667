/**
 * <tx-circuits>: one head's QK and OV circuits, read from the weights of a model that has learned
 * something: the two-layer attention-only model of the induction task, trained by the project
 * (8,000 steps) on sequences of 16 letters with a stretch written twice, or the same model before
 * training. Beside the circuits, what the head does on held-out sequences written twice.
 *
 * Attributes (all optional):
 *   weights  "trained" (default) or "initial"
 *   head     the head, as layer.head: 0.0 (default), 0.1, 1.0 or 1.1
 *
 * Computed by `demos.circuits.trained_circuits`. Four heat maps (pipeline/figures.js `heatmap`,
 * values in `data-values`): QK on letters, OV on letters, QK on positions, and the head's
 * attention on a held-out sequence. The summary carries `data-own-letter`, `data-copying`,
 * `data-eigen-copying` and `data-earlier-copy` (numbers it states).
 */
import { callDemo } from "../runtime/python.js";
import { parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { heatmap, showCellValues } from "./pipeline/figures.js";
import { PIPELINE_CSS } from "./pipeline/styles.js";
import { define } from "./widget.js";

const HEADS = ["0.0", "0.1", "1.0", "1.1"];
const percent = (x) => `${Math.round(100 * x)}%`;
const signed = (x) => x.toFixed(2).replace("-", "−");
const rowsOf16 = (share) => `${Math.round(16 * share)} of 16 rows`;

class TxCircuits extends TxLab {
  template() {
    return `${PIPELINE_CSS}
      <div class="title">A head's QK and OV circuits, read from its weights</div>
      <div class="controls pl-row">
        <label>Weights <select name="weights">
          <option value="trained">trained (8,000 steps)</option>
          <option value="initial">before training</option></select></label>
        <label>Head (layer.head) <select name="head">${HEADS.map((h) => `<option value="${h}">${h}</option>`).join("")}</select></label>
      </div>
      <div class="summary pl-note" aria-live="polite"></div>
      <div class="pl-figs"></div>`;
  }

  setup() {
    this.wire({ weights: this.getAttribute("weights") ?? "trained", head: this.getAttribute("head") ?? "0.0" }, { on: "change" });
    showCellValues(this.shadowRoot);
  }

  request() {
    const weights = parseSelect(this.field("weights"), { label: "The weights" });
    const [layer, head] = parseSelect(this.field("head"), { label: "The head" }).split(".").map(Number);
    return { weights, layer, head };
  }

  /** Every head's circuits for one set of weights, asked of Python once (a head change only redraws). */
  compute({ weights }) {
    this.computed ??= new Map();
    if (!this.computed.has(weights)) {
      const result = callDemo("circuits", "trained_circuits", { weights });
      this.computed.set(weights, result);
      result.catch(() => this.computed.delete(weights)); // a fault is asked again on Retry
    }
    return this.computed.get(weights);
  }

  draw(result, { layer, head }) {
    const one = result.heads.find((h) => h.layer === layer && h.head === head);
    const name = `${layer}.${head}`;
    const letters = result.letters;
    this.$(".pl-figs").innerHTML = [
      heatmap(one.qk, {
        name: "qk",
        caption: `QK on letters: query ↓, key →`,
        rowLabels: letters,
        colLabel: `key letter, ${letters[0]} to ${letters.at(-1)} →`,
        cell: 14,
      }),
      heatmap(one.ov, {
        name: "ov",
        caption: `OV on letters: attended ↓, logit raised →`,
        rowLabels: letters,
        colLabel: `logit of letter, ${letters[0]} to ${letters.at(-1)} →`,
        cell: 14,
      }),
      heatmap(one.positional, {
        name: "positional",
        caption: `QK on positions: where a query ↓ looks by position alone`,
        rowLabels: Array.from({ length: result.positions }, (_, i) => String(i)),
        colLabel: "key position →",
        cell: 12,
      }),
      heatmap(one.attention, {
        name: "attention",
        caption: `Its attention on a held-out sequence written twice`,
        rowLabels: result.example.map((t, i) => `${i} ${t}`),
        colLabel: "key →",
        cell: 14,
      }),
    ].join("");
    const summary = this.$(".summary");
    Object.assign(summary.dataset, {
      ownLetter: one.own_letter,
      copying: one.copying,
      eigenCopying: one.eigen_copying,
      earlierCopy: one.held_out.earlier_copy,
    });
    const held = one.held_out;
    summary.innerHTML = `<strong>${result.weights === "trained" ? "Trained" : "Before training"}, head ${name}</strong><ul>
      <li>QK: the largest score is on the diagonal in ${rowsOf16(one.own_letter)} (the head looks for its own letter where it is);
        by position alone it gives the previous position ${percent(one.previous)} of its attention.</li>
      <li>OV: the largest logit is the attended letter itself in ${rowsOf16(one.copying)}; eigenvalue score ${signed(one.eigen_copying)}
        (1: it copies, −1: it lowers what it attends to).</li>
      <li>On held-out sequences written twice, from the second copy: ${percent(held.earlier_copy)} of its attention on the earlier copy of the
        current letter, ${percent(held.after_copy)} on the letter after it (the induction score), ${percent(held.previous)} on the previous position.
        The model's loss: ${result.loss.second.toFixed(2)} nats on the second copy, ${result.loss.first.toFixed(2)} on the first (a guess among 16 letters: 2.77).</li></ul>`;
  }
}

define("tx-circuits", TxCircuits);
