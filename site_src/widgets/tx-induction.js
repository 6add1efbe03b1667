/**
 * <tx-induction>: induction heads. A random token sequence written twice: a model with induction
 * heads predicts the second copy from the first, attending from each token to the one after
 * its earlier occurrence. Per-head induction scores as a heat map, the loss on the first copy
 * against the second, and the attention pattern of the top-scoring (or a clicked) head.
 *
 * Attributes (all optional):
 *   length    tokens in each copy, 4 to 100 (default 20)
 *   seed      the random sequence's seed, a whole number (default 1)
 *   head      the head whose attention is drawn, "layer.head" (default: the top-scoring one)
 *   backend   "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model     a model name under models/ (default: the site's default model)
 *   variant   a weight variant of the model; default: the best for the backend
 */
import { MAX_SEED } from "../runtime/rng.js";
import { induction, repeatedTokens } from "../runtime/interpret.js";
import { argmax } from "../runtime/sampler.js";
import { attributeValues } from "./base.js";
import { gridHTML, headGridHTML, onCellPick } from "./grid.js";
import { TxInspect, parseHeads } from "./inspect-base.js";
import { heatmap, showCellValues } from "./pipeline/figures.js";
import { define } from "./widget.js";

const LENGTH = { min: 4, max: 100 };

class TxInduction extends TxInspect {
  static heading = "Induction heads: copying what came before";

  static stateNames = ["length", "seed", "head"];

  body() {
    return `
      <div class="row">
        <label>Tokens per copy <input name="length" type="number" min="${LENGTH.min}" max="${LENGTH.max}" step="1" inputmode="numeric"></label>
        <label>Seed <input name="seed" type="number" min="0" max="${MAX_SEED}" step="1" inputmode="numeric"></label>
        <button type="button" class="reseed">New random sequence</button>
      </div>
      <p class="summary" aria-live="polite"></p>
      <div class="scores"></div>
      <div class="loss"></div>
      <div class="pattern"></div>`;
  }

  setup() {
    this.head = this.getAttribute("head") || null;
    const changed = () =>
      this.rerunSoon(() => {
        this.head = null;
      });
    this.wire(attributeValues(this, { length: "20", seed: "1" }), { run: changed });
    this.$(".reseed").addEventListener("click", () => {
      this.$('input[name="seed"]').value = String(Number(this.$('input[name="seed"]').value || 0) + 1);
      changed();
    });
    showCellValues(this.shadowRoot);
    onCellPick(this.shadowRoot, "scores", (l, h) => {
      this.head = `${l}.${h}`;
      this.saveState();
      this.drawPattern(l, h);
    });
  }

  currentState() {
    return { length: this.$('input[name="length"]').value, seed: this.$('input[name="seed"]').value, head: this.head };
  }

  /** A whole number from an input, in range, or a clear error. */
  whole(name, label, min, max) {
    const raw = this.$(`input[name="${name}"]`).value.trim();
    const value = Number(raw);
    if (raw === "" || !Number.isInteger(value) || value < min || value > max)
      throw new RangeError(`${label} must be a whole number from ${min} to ${max}, not “${raw}”.`);
    return value;
  }

  async run(model, stale) {
    const { n_layer: L, n_head: nh, vocab_size: V, eos_token_id: bos, n_positions } = model.info.config;
    const half = this.whole("length", "Tokens per copy", LENGTH.min, Math.min(LENGTH.max, Math.floor((n_positions - 1) / 2)));
    const seed = this.whole("seed", "The seed", 0, MAX_SEED);
    const ids = repeatedTokens(half, V, seed, bos);
    this.showProgress("Running the repeated sequence…");
    const result = await induction(model, ids, half);
    if (stale()) return;
    Object.assign(this, { ids, half, result });
    this.dataset.ids = ids.join(",");
    const { scores, loss } = result;
    const top = argmax(scores);
    this.dataset.top = `${Math.floor(top / nh)}.${top % nh}`;
    this.$(".scores").innerHTML = headGridHTML({
      name: "scores",
      caption: `Induction score of each head: its mean attention, from each token of the second copy, to the token after that token's first occurrence (1 = all of it). Click a head to see its attention.`,
      values: scores,
      L,
      nh,
      shade: (v) => v, // an attention weight: 1 is the darkest
      title: (l, h, v) => `head ${l}.${h}: induction score ${v.toFixed(3)}`,
    });
    // loss at the tokens of each copy: first copy positions 1..half-1 predict tokens 2..half
    const mean = (a) => a.reduce((s, v) => s + v, 0) / a.length;
    const first = Array.from(loss.slice(0, half));
    const second = Array.from(loss.slice(half, 2 * half));
    this.dataset.lossFirst = String(mean(first));
    this.dataset.lossSecond = String(mean(second));
    const uniform = Math.log(V); // the loss of a uniform guess: the darkest shade
    this.$(".loss").innerHTML = gridHTML({
      name: "loss",
      caption: `Loss (nats) predicting each token, shaded up to ${uniform.toFixed(1)} (a uniform guess over the vocabulary): first copy, mean ${mean(first).toFixed(2)}; second copy, mean ${mean(second).toFixed(2)}. A model that copies is far better on the second.`,
      rows: 2,
      cols: half,
      corner: "copy \\ token",
      rowLabel: (r) => (r === 0 ? "first" : "second"),
      colLabel: (c) => String(c + 1),
      cell: (r, c) => {
        const v = (r === 0 ? first : second)[c];
        return {
          value: v,
          shade: v / uniform,
          html: `<span class="cell-value">${v.toFixed(1)}</span>`,
          title: `${r === 0 ? "first" : "second"} copy, token ${c + 1}: ${v.toFixed(3)} nats`,
        };
      },
    });
    this.$(".summary").textContent =
      `<|endoftext|> and ${half} random tokens, written twice (${ids.length} tokens). Top head: ${this.dataset.top}, score ${scores[top].toFixed(3)}.`;
    const [l, h] = (this.head && parseHeads(this.head, model.info.config)[0]) || [Math.floor(top / nh), top % nh];
    this.drawPattern(l, h);
    return `Mean loss ${mean(first).toFixed(2)} nats on the first copy, ${mean(second).toFixed(2)} on the second.`;
  }

  drawPattern(l, h) {
    const { attentions } = this.result;
    const T = this.ids.length;
    const a = attentions[l].data; // (nh, T, T)
    const rows = Array.from({ length: T }, (_, i) => Array.from(a.subarray((h * T + i) * T, (h * T + i + 1) * T)));
    this.dataset.pattern = `${l}.${h}`;
    this.$(".pattern").innerHTML = heatmap(rows, {
      name: "pattern",
      caption: `Attention of head ${l}.${h}: row = the token attending, column = the token attended to. An induction head lights up the diagonal stripe ${this.half - 1} to the left of the main diagonal in the second half.`,
    });
  }
}

define("tx-induction", TxInduction);
