/**
 * <tx-pipeline>: the whole forward pass on one screen. Each box is a stage (a link to its
 * page) with the shape of the tensor at that point on the rail, for GPT-2 small and for the
 * site's model, and what the reader's prompt looks like there, from one live forward pass.
 * "Step through" moves a marker down the boxes.
 *
 * Attributes: `base` (optional), the URL prefix of the stage pages: a relative path or an http(s) address (default "./").
 * Shows `data-shape` (the site model's shape) and `data-stage` on each box.
 */
import { escapeHtml, formatProb, visible } from "./base.js";
import { InputError } from "./inputs.js";
import { topK } from "../runtime/probs.js";
import { PipelineStage } from "./pipeline/stage.js";
import { GPT2_SMALL, shapeText } from "./pipeline/text.js";
import { define } from "./widget.js";

/** The stages in running order: slug, number, title, shape as a function of (config, T). */
export const STAGES = [
  ["01-tokenization", "1", "Tokenization", (c, T) => [T]],
  ["02-token-embedding", "2", "Token embedding", (c, T) => [T, c.n_embd]],
  ["03-positional-encoding", "3", "Positional encoding", (c, T) => [T, c.n_embd]],
  ["04-final-embedding", "4", "Final embedding", (c, T) => [T, c.n_embd]],
  ["05a-qkv", "5a", "Query, key, value", (c, T) => [T, 3 * c.n_embd]],
  ["05b-heads", "5b", "Split into heads", (c, T) => [c.n_head, T, c.n_embd / c.n_head]],
  ["05c-attention", "5c", "Masked self-attention", (c, T) => [c.n_head, T, T]],
  ["05d-recombine", "5d", "Recombine the heads", (c, T) => [T, c.n_embd]],
  ["05e-mlp", "5e", "MLP", (c, T) => [T, 4 * c.n_embd]],
  ["05f-norm-residual-dropout", "5f", "LayerNorm, residual, dropout", (c, T) => [T, c.n_embd]],
  ["06-logits", "6", "Output projection", (c, T) => [c.vocab_size]],
  ["07-sampling", "7", "Softmax and sampling", (c, T) => [c.vocab_size]],
  ["08-autoregression", "8", "Emit a token, loop", (c, T) => [T + 1]],
];

/**
 * The `base` attribute as the prefix of the stage links: a relative path or an http(s)
 * address. Anything else (`javascript:`, `data:`) would make the links run or show what the
 * embedding page chose, so it is refused.
 */
function linkBase(base) {
  if (base === null) return "./";
  let url = null;
  try {
    url = new URL(base, document.baseURI);
  } catch {
    // not an address at all
  }
  if (url && (url.protocol === "http:" || url.protocol === "https:")) return base;
  throw new InputError(`The base attribute must be a relative path or an http(s) address (it is “${base.slice(0, 40)}”).`);
}

const fmt = (a) => Array.from(a, (v) => v.toFixed(2)).join(", ");

class TxPipeline extends PipelineStage {
  controls() {
    return `<button type="button" class="pl-play">Step through the stages</button>`;
  }

  wireControls() {
    this.$(".pl-play").addEventListener("click", () => this.play());
  }

  play() {
    const boxes = [...this.shadowRoot.querySelectorAll(".pl-box")];
    clearInterval(this.timer);
    let i = 0;
    const mark = () => {
      boxes.forEach((b, k) => b.toggleAttribute("data-current", k === i));
      if (boxes[i]) this.$(".pl-where").textContent = `Now at stage ${boxes[i].dataset.stage}.`;
      i++;
      if (i > boxes.length) clearInterval(this.timer);
    };
    mark();
    this.timer = setInterval(mark, 700);
  }

  get css() {
    return `.pl-rail { list-style: none; margin: 0; padding: 0 0 0 1.2em; border-left: 4px solid currentColor; }
      .pl-box { margin: 0 0 0.5em; padding: 0.35em 0.6em; border: 1px solid rgba(128,128,128,0.6); border-radius: 4px; position: relative; }
      .pl-box::before { content: ""; position: absolute; left: -1.55em; top: 0.8em; width: 0.7em; height: 0.7em; border-radius: 50%; background: currentColor; }
      .pl-box[data-current] { outline: 3px solid currentColor; }
      .pl-box[data-current]::after { content: "◀ your prompt is here"; font-size: 0.8em; margin-left: 0.5em; }
      .pl-box a { font-weight: 600; }
      .pl-box .pl-shape { margin: 0.1em 0; }
      .pl-live { font-size: 0.85em; overflow-wrap: anywhere; }`;
  }

  async figure({ model, ids, run }) {
    const cfg = model.info.config;
    const T = ids.length;
    const base = linkBase(this.getAttribute("base"));
    const C = cfg.n_embd;
    const L = cfg.n_layer;
    const tok = (id) => escapeHtml(visible(model.tokenizer.tokenToString(id)));
    const lastRow = (x) => x.subarray((T - 1) * C, T * C);
    const norm = (x) => Math.sqrt(x.reduce((s, v) => s + v * v, 0));
    const best = topK(run.logits, 3);
    let max = -Infinity,
      sum = 0;
    for (const z of run.logits) max = Math.max(max, z);
    for (const z of run.logits) sum += Math.exp(z - max);
    const prob = (id) => Math.exp(run.logits[id] - max) / sum;
    const attnLast = run.attn[L - 1].subarray((T - 1) * T, T * T); // layer L-1, head 0, last query
    const live = {
      "01-tokenization": ids.map((id) => `${tok(id)}<sub>${id}</sub>`).join(" "),
      "04-final-embedding": `x for “${tok(ids[T - 1])}” starts ${fmt(lastRow(run.hidden[0]).subarray(0, 4))}, …`,
      "05c-attention": `last block, head 0: “${tok(ids[T - 1])}” puts ${(100 * attnLast[T - 1]).toFixed(1)}% of its attention on itself`,
      "05f-norm-residual-dropout": `‖x‖ of the last token after each block: ${run.hidden
        .slice(1)
        .map((h) => norm(lastRow(h)).toPrecision(3))
        .join(" → ")}`,
      "06-logits": `largest logits: ${best.map(({ id }) => `${tok(id)} ${run.logits[id].toFixed(2)}`).join(", ")}`,
      "07-sampling": `most likely next token: ${tok(best[0].id)} (${formatProb(prob(best[0].id))})`,
      "08-autoregression": `greedy: the prompt grows by ${tok(best[0].id)} and runs again`,
    };
    const boxes = STAGES.map(([slug, n, title, shape]) => {
      const mine = shape(cfg, T);
      const small = shape(GPT2_SMALL, T);
      const same = mine.join() === small.join();
      return `<li class="pl-box" data-stage="${n}" data-shape="${mine.join(",")}">
        <a href="${escapeHtml(base)}${slug}/">${n} · ${title}</a>
        <p class="pl-shape">GPT-2 small ${shapeText(small)}${same ? "" : ` · ${escapeHtml(model.info.name)} ${shapeText(mine)}`}</p>
        ${live[slug] ? `<div class="pl-live">${live[slug]}</div>` : ""}</li>`;
    }).join("");
    return `<p class="pl-note pl-where" aria-live="polite">${T} tokens enter at the top; ${L} block${L === 1 ? "" : "s"} repeat stages 5a–5f.</p><ol class="pl-rail">${boxes}</ol>`;
  }
}

define("tx-pipeline", TxPipeline);
