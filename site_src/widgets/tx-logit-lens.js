/**
 * <tx-logit-lens>: every layer's residual stream, at every position of your prompt, read
 * through the final LayerNorm and the unembedding: what the model would predict if it stopped
 * there. A layers × positions grid of the top token and its probability, the final
 * prediction's rank and probability layer by layer, and the top 10 of any cell on click.
 *
 * Attributes (all optional):
 *   prompt    the text, default "The Eiffel Tower is in the city of"
 *   layer     the row whose top 10 is shown: 0 = the embeddings, n_layer = the output (default)
 *   position  the column whose top 10 is shown (default: the last)
 *   backend   "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model     a model name under models/ (default: the site's default model)
 *   variant   a weight variant of the model; default: the best for the backend
 */
import { logitLens, rankOf, topProbs } from "../runtime/interpret.js";
import { argmax } from "../runtime/sampler.js";
import { escapeHtml, formatProb } from "./base.js";
import { gridHTML, onCellPick } from "./grid.js";
import { TxInspect } from "./inspect-base.js";
import { define } from "./widget.js";

const MAX_TOKENS = 32;
const TOP = 10;
const CELL_CHARS = 8; // a cell shows this much of its token

/** Row label of lens row l: the embeddings, then the output of each block. */
const layerName = (l) => (l === 0 ? "embeddings" : `after block ${l - 1}`);

class TxLogitLens extends TxInspect {
  static heading = "Logit lens: what each layer would predict";

  static stateNames = ["prompt", "layer", "position"];

  body() {
    return `
      <div class="lens"></div>
      <div class="cols"><div class="final"></div><div class="top"></div></div>`;
  }

  setup() {
    const text = this.$("textarea");
    text.value = this.getAttribute("prompt") ?? "The Eiffel Tower is in the city of";
    text.addEventListener("input", () =>
      this.rerunSoon(() => {
        this.pick = null;
      }),
    );
    onCellPick(this.shadowRoot, "lens", (l, t) => {
      this.pick = { l, t };
      this.saveState();
      this.showTop();
    });
  }

  currentState() {
    return { prompt: this.$("textarea").value, layer: this.pick?.l ?? null, position: this.pick?.t ?? null };
  }

  async run(model, stale) {
    const ids = this.encode(model, this.$("textarea").value, { max: MAX_TOKENS });
    this.showProgress("Reading every layer…");
    const started = performance.now();
    const lens = await logitLens(model, ids);
    if (stale()) return;
    this.ids = ids;
    this.lens = lens;
    const { layers, T } = lens;
    // the top token of every cell, and the final prediction through the layers
    this.cells = [];
    for (let l = 0; l < layers; l++) {
      for (let t = 0; t < T; t++) {
        const probs = lens.cell(l, t);
        const id = argmax(probs);
        this.cells.push({ id, prob: probs[id], probs: t === T - 1 ? probs : null }); // the last position's for drawFinal
      }
    }
    const final = this.cells[(layers - 1) * T + T - 1].id;
    this.final = final;
    this.dataset.final = String(final);
    const layer = this.attributeIndex("layer", layers, layers - 1);
    const position = this.attributeIndex("position", T, T - 1);
    this.pick ??= { l: layer, t: position };
    this.drawGrid(model);
    this.drawFinal(model);
    this.showTop();
    return `${T} positions × ${layers} readings (the embeddings and ${layers - 1} blocks) in ${((performance.now() - started) / 1000).toFixed(2)} s. Click a cell for its top ${TOP}.`;
  }

  /** An index attribute in [0, n), or `fallback`; a bad value is an error the reader sees. */
  attributeIndex(name, n, fallback) {
    const raw = this.getAttribute(name);
    if (raw === null || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0 || value >= n) throw new RangeError(`The ${name} must be a whole number from 0 to ${n - 1}, not “${raw}”.`);
    return value;
  }

  drawGrid(model) {
    const { layers, T } = this.lens;
    this.$(".lens").innerHTML = gridHTML({
      name: "lens",
      caption: "Each cell: the most likely next token read from that layer at that position, shaded by its probability.",
      rows: layers,
      cols: T,
      corner: "layer \\ token",
      rowLabel: (l) => (l === 0 ? "emb" : String(l - 1)),
      colLabel: (t) => this.pieceText(model, this.ids[t]),
      cell: (l, t) => {
        const { id, prob } = this.cells[l * T + t];
        const text = this.pieceText(model, id);
        const piece = escapeHtml(text.length > CELL_CHARS ? `${text.slice(0, CELL_CHARS - 1)}…` : text); // the title has it whole
        return {
          value: prob,
          id,
          shade: prob,
          html: `<span class="cell-token">${piece}</span><span class="cell-value">${formatProb(prob)}</span>`,
          title: `${layerName(l)}, position ${t}: ${model.tokenizer.tokenToString(id)} ${formatProb(prob)}`,
        };
      },
    });
  }

  drawFinal(model) {
    const { layers, T } = this.lens;
    const rows = [];
    for (let l = 0; l < layers; l++) {
      const probs = this.cells[l * T + T - 1].probs;
      rows.push(
        `<tr data-layer="${l}" data-rank="${rankOf(probs, this.final)}" data-prob="${probs[this.final]}"><td>${layerName(l)}</td><td>${rankOf(probs, this.final).toLocaleString("en")}</td><td>${formatProb(probs[this.final])}</td></tr>`,
      );
    }
    this.$(".final").innerHTML =
      `<p class="legend">The final prediction <b class="token">${this.piece(model, this.final)}</b> at the last position, layer by layer:</p>
      <table class="topk final-table"><thead><tr><th>reading</th><th>rank</th><th>probability</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
  }

  showTop() {
    if (!this.lens || !this.pick) return;
    const { l, t } = this.pick;
    const probs = this.lens.cell(l, t);
    const top = topProbs(probs, TOP);
    const caption = `Top ${TOP} read ${l === 0 ? "from the embeddings" : layerName(l)}, position ${t} (<span class="token">${this.piece(this.model, this.ids[t])}</span>):`;
    this.$(".top").innerHTML = this.topTable(this.model, top, { caption, name: "top-table" });
    this.dataset.pick = `${l},${t}`;
  }
}

define("tx-logit-lens", TxLogitLens);
