/**
 * <tx-next-token>: your text → GPT-2 tokenizer → the site's model in onnxruntime-web →
 * the ten most likely next tokens.
 *
 * Attributes (all optional):
 *   prompt    initial text, default "The Transformer is a"
 *   backend   "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model     a model name under models/ (default: the site's default model)
 *   variant   a weight variant of the model ("q4", "q8", ...); default: the best for the backend
 *
 * The prompt and backend are kept in the page address (url-state.js), so a link reproduces them.
 *
 * A download that fails (missing, truncated or corrupted file, stalled server) shows
 * its message and a Retry button; files already checked come from Cache Storage.
 */
import { topK } from "../runtime/probs.js";
import { BACKEND_FIELD, PROMPT_FIELD, escapeHtml, formatProb, visible } from "./base.js";
import { readState, writeState } from "./url-state.js";
import { Widget, define } from "./widget.js";

const TOP = 10;

class TxNextToken extends Widget {
  template() {
    return `
      <div class="title">What comes next? <span class="badge" title="Where the model runs"></span></div>
      ${PROMPT_FIELD}
      <div class="row">
        ${BACKEND_FIELD}
        <span class="tokens" aria-label="Tokens"></span>
      </div>
      <p class="notices" role="note" hidden></p>
      <table class="topk"><thead><tr><th>#</th><th>token</th><th>id</th><th>probability</th></tr></thead><tbody></tbody></table>
      <style>
        .notices { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
      </style>`;
  }

  setup() {
    readState(this.host, ["prompt", "backend"]); // a shared link's prompt (url-state.js)
    const text = this.$("textarea");
    text.value = this.getAttribute("prompt") ?? "The Transformer is a";
    const select = this.$("select");
    select.value = this.getAttribute("backend") ?? "auto";
    const save = () => writeState(this.host, { prompt: text.value, backend: select.value === "auto" ? null : select.value });
    text.addEventListener("input", () => {
      save();
      this.updateSoon(250);
    });
    select.addEventListener("change", () => {
      save();
      this.update();
    });
  }

  /** The prompt's tokens and the model's distribution over the next one (none for an empty prompt). */
  async compute() {
    const stale = this.staleCheck();
    const model = await this.useModel({ backend: this.$("select").value });
    if (!model) return null;
    const ids = model.tokenizer.encode(this.$("textarea").value);
    this.showTokens(model.tokenizer, ids);
    if (ids.length === 0) return { model, ids, logits: null };
    this.showProgress("Running the model…");
    const { logits } = await model.forward(ids);
    return stale() ? null : { model, ids, logits };
  }

  draw({ model, ids, logits }) {
    if (!logits) {
      this.$("tbody").innerHTML = "";
      return "Type some text to see the model's guesses.";
    }
    this.render(model.tokenizer, topK(logits, TOP));
    const where = model.info.backendNote ? ` ${model.info.backendNote}` : "";
    return `${ids.length} token${ids.length === 1 ? "" : "s"} in, one distribution over ${logits.length.toLocaleString("en")} tokens out.${where}`;
  }

  /** The lost model's numbers are no longer the model's. */
  modelLost() {
    this.$("tbody").innerHTML = "";
  }

  showTokens(tokenizer, ids) {
    this.$(".tokens").innerHTML =
      ids
        .slice(0, 64)
        .map((id) => `<span class="token" title="id ${id}">${escapeHtml(visible(tokenizer.tokenToString(id)))}</span>`)
        .join("") + (ids.length > 64 ? ` … (${ids.length} tokens)` : "");
  }

  render(tokenizer, top) {
    this.dataset.runs = String(Number(this.dataset.runs || 0) + 1);
    this.$("tbody").innerHTML = top
      .map(
        ({ id, prob }, rank) => `
      <tr data-id="${id}" data-prob="${prob}">
        <td>${rank + 1}</td><td class="token">${escapeHtml(visible(tokenizer.tokenToString(id)))}</td>
        <td>${id}</td><td><span class="bar"><span style="width:${(100 * prob) / top[0].prob}%"></span></span> ${formatProb(prob)}</td>
      </tr>`,
      )
      .join("");
  }
}

define("tx-next-token", TxNextToken);
