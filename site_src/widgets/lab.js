/**
 * The lab widgets (<tx-attention>, <tx-ffn>, …): read the inputs, ask Python, draw the answer.
 * A lab is a `Widget` (widget.js, whose comment describes the loop) that computes in Python:
 *
 *   class Thing extends TxLab {
 *     template() { return `<input name="n" type="range" min="1" max="8"><output></output>`; }
 *     setup() { this.wire({ n: this.getAttribute("n") ?? "4" }); }
 *     request() { return { n: parseInteger(this.field("n").value, { label: "n", min: 1, max: 8 }) }; }
 *     compute(request) { return callDemo("thing", "run", request); }
 *     draw(result) { this.$("output").textContent = result.text; }
 *   }
 *   define("tx-thing", Thing);
 * @module widgets/lab
 */
import { followPython } from "../runtime/python.js";
import { Widget } from "./widget.js";

/** CSS of a lab's figures, inside its STYLE: captioned SVG charts as wide as the card. */
export const FIGURE_CSS = `
  figure { margin: 0; }
  figcaption { color: var(--tx-muted); margin-bottom: 0.3em; }
  svg { width: 100%; height: auto; display: block; }`;

/** A widget that computes in Python: it follows Python's start (progress, a Retry elsewhere). */
export class TxLab extends Widget {
  mount() {
    this.onUnmount(followPython(this));
    super.mount();
  }
}
