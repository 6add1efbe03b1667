/**
 * <tx-logit-attribution>: direct logit attribution. The residual stream at the last position
 * is a sum of what the embeddings, every head and every MLP wrote into it; read through the
 * unembedding (with the final LayerNorm's scale frozen), each part pushes a token's logit up
 * or down by an amount that adds up to the logit. A heat map of the heads, a row of the MLPs,
 * and the largest parts by name.
 *
 * Attributes (all optional):
 *   prompt    the text, default "The Eiffel Tower is in the city of"
 *   token     the next token to explain, one token such as " Paris" (default: the model's top prediction)
 *   backend   "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model     a model name under models/ (default: the site's default model)
 *   variant   a weight variant of the model; default: the best for the backend
 */
import { logitAttribution } from "../runtime/interpret.js";
import { attributeValues } from "./base.js";
import { gridHTML, headGridHTML, maxAbs } from "./grid.js";
import { TxInspect } from "./inspect-base.js";
import { define } from "./widget.js";

const MAX_TOKENS = 32;
const LARGEST = 6;

const signed = (v) => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(3)}`;

class TxLogitAttribution extends TxInspect {
  static heading = "Direct logit attribution: who pushed this token?";

  static stateNames = ["prompt", "token"];

  body() {
    return `
      <div class="row"><label>Token to explain <input name="token" type="text" size="10" spellcheck="false" placeholder="the top prediction"></label></div>
      <p class="summary" aria-live="polite"></p>
      <div class="heads"></div>
      <div class="mlps"></div>
      <div class="largest"></div>`;
  }

  setup() {
    const starting = attributeValues(this, { prompt: "The Eiffel Tower is in the city of", token: "" });
    this.wire(starting, { run: () => this.rerunSoon() });
  }

  currentState() {
    return { prompt: this.field("prompt").value, token: this.field("token").value };
  }

  /** The token to explain: one token's text, or none (the top prediction). */
  target(model) {
    const text = this.$('input[name="token"]').value;
    if (text === "") return undefined;
    const ids = model.tokenizer.encode(text);
    if (ids.length !== 1) throw new RangeError(`“${text}” is ${ids.length} tokens; name exactly one (most words need a leading space, e.g. “ Paris”).`);
    return ids[0];
  }

  async run(model, stale) {
    const ids = this.encode(model, this.$("textarea").value, { max: MAX_TOKENS });
    const token = this.target(model);
    this.showProgress("Splitting the last position's stream into its parts…");
    const parts = await logitAttribution(model, ids, token);
    if (stale()) return;
    const { n_layer: L, n_head: nh } = model.info.config;
    const { heads, mlps } = parts;
    const scale = maxAbs([...heads, ...mlps]);
    Object.assign(this.dataset, { token: String(parts.token), logit: String(parts.logit) });
    this.$(".heads").innerHTML = headGridHTML({
      name: "heads",
      caption: "Each head's direct push on the token's logit (orange up, blue down), through its output projection and the unembedding.",
      values: heads,
      L,
      nh,
      shade: (v) => v / scale, // on the MLPs' scale too
      title: (l, h, v) => `head ${l}.${h}: ${signed(v)}`,
    });
    this.$(".mlps").innerHTML = gridHTML({
      name: "mlps",
      caption: "Each block's MLP, on the same scale.",
      rows: 1,
      cols: L,
      corner: "block",
      rowLabel: () => "MLP",
      colLabel: String,
      cell: (r, l) => ({
        value: mlps[l],
        shade: mlps[l] / scale,
        html: `<span class="cell-value">${mlps[l].toFixed(2)}</span>`,
        title: `MLP ${l}: ${signed(mlps[l])}`,
      }),
    });
    const named = [
      ...Array.from(heads, (v, i) => [`head ${Math.floor(i / nh)}.${i % nh}`, v]),
      ...Array.from(mlps, (v, l) => [`MLP ${l}`, v]),
      ["embeddings", parts.embeddings],
      ["attention biases", parts.attnBias],
    ].sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
    this.$(".largest").innerHTML = `<p class="legend">The largest parts:</p><table class="topk largest-table"><tbody>${named
      .slice(0, LARGEST)
      .map(([name, v]) => `<tr data-part="${name}" data-value="${v}"><td>${name}</td><td>${signed(v)}</td></tr>`)
      .join("")}</tbody></table>`;
    this.$(".summary").textContent =
      `Logit of “${this.pieceText(model, parts.token)}”: ${parts.logit.toFixed(3)} = heads ${signed(heads.reduce((s, v) => s + v, 0))} ` +
      `+ MLPs ${signed(mlps.reduce((s, v) => s + v, 0))} + embeddings ${signed(parts.embeddings)} + attention biases ${signed(parts.attnBias)} ` +
      `+ the final LayerNorm's bias ${signed(parts.rest)}.`;
    return `${L * nh} heads and ${L} MLPs at the last of ${ids.length} tokens.`;
  }
}

define("tx-logit-attribution", TxLogitAttribution);
