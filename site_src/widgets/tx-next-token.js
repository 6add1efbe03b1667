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
import { loadModel } from "../runtime/model.js";
import { topK } from "../runtime/probs.js";
import { PROMPT_FIELD, TxElement, escapeHtml, formatProb, modelBadge, watchModel } from "./base.js";
import { readState, writeState } from "./url-state.js";

const TOP = 10;

/** Make spaces and line breaks in a token visible. */
function visible(text) {
  return text.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥");
}

class TxNextToken extends TxElement {
  template() {
    return `
      <div class="title">What comes next? <span class="badge" title="Where the model runs"></span></div>
      ${PROMPT_FIELD}
      <div class="row">
        <label>Run on <select name="backend">
          <option value="auto">best available</option><option value="webgpu">WebGPU</option><option value="wasm">WASM (CPU)</option>
        </select></label>
        <span class="tokens" aria-label="Tokens"></span>
      </div>
      <p class="notice" role="note" hidden></p>
      <table class="topk"><thead><tr><th>#</th><th>token</th><th>id</th><th>probability</th></tr></thead><tbody></tbody></table>
      <style>
        .notice { margin: 0.3em 0; padding: 0.3em 0.6em; border-left: 3px solid var(--tx-accent); }
      </style>`;
  }

  mount() {
    readState(this, ["prompt", "backend"]); // a shared link's prompt (url-state.js)
    const text = this.$("textarea");
    text.value = this.getAttribute("prompt") ?? "The Transformer is a";
    const select = this.$("select");
    select.value = this.getAttribute("backend") ?? "auto";
    const save = () => writeState(this, { prompt: text.value, backend: select.value === "auto" ? null : select.value });
    let timer = null;
    text.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        save();
        this.update();
      }, 250);
    });
    select.addEventListener("change", () => {
      save();
      this.update();
    });
    this.generation = 0;
    this.onProgress = (event) => {
      if (this.dataset.state !== "ready") this.showProgress(event.message, event);
    };
    this.update();
  }

  async update() {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    try {
      const model = await loadModel({
        model: this.getAttribute("model") || undefined,
        variant: this.getAttribute("variant") || undefined,
        backend: this.$("select").value,
        onProgress: this.onProgress,
      });
      if (stale()) return;
      this.watchModel(model);
      this.showBadge(model.info);
      this.showNotices(model.info.notices);
      const ids = model.tokenizer.encode(this.$("textarea").value);
      this.showTokens(model.tokenizer, ids);
      if (ids.length === 0) {
        this.$("tbody").innerHTML = "";
        this.showReady("Type some text to see the model's guesses.");
        return;
      }
      this.showProgress("Running the model…");
      const { logits } = await model.forward(ids);
      if (stale()) return;
      this.render(model.tokenizer, topK(logits, TOP));
      const where = model.info.backendNote ? ` ${model.info.backendNote}` : "";
      this.showReady(`${ids.length} token${ids.length === 1 ? "" : "s"} in, one distribution over ${logits.length.toLocaleString("en")} tokens out.${where}`);
    } catch (err) {
      if (stale()) return;
      this.showError(err, { retry: () => this.update() });
    }
  }

  /** When the model stops working (e.g. the WebGPU device is lost), say so at once, with Retry. */
  watchModel(model) {
    watchModel(this, model, (err) => {
      this.generation++; // a forward pass of the lost model must not draw over the message
      this.$("tbody").innerHTML = ""; // its numbers are no longer the model's
      this.showError(err, { retry: () => this.update() });
    });
  }

  showNotices(notices) {
    const box = this.$(".notice");
    box.textContent = notices.join(" ");
    box.hidden = notices.length === 0;
  }

  showBadge(info) {
    this.dataset.variant = info.variant;
    this.$(".badge").textContent = modelBadge(info);
    this.dataset.backend = info.backend;
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

customElements.define("tx-next-token", TxNextToken);
