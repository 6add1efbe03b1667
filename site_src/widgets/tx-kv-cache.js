/**
 * <tx-kv-cache>: how much memory the KV cache takes for MHA, GQA and MQA, and how much
 * arithmetic it saves during generation.
 *
 * Attributes (all optional):
 *   preset    "gpt2-small" (default) or "llama-7b-gqa" (see demos.kv_cache.presets())
 *   context   tokens in the cache, default 1024
 *
 * Computed by `demos.kv_cache.compare_attention_variants` and
 * `demos.kv_cache.generation_flops`. Each memory bar carries `data-variant`,
 * `data-kv-heads`, `data-bytes-per-token` and `data-bytes`; the FLOP table carries
 * `data-without`, `data-with` and `data-ratio`.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { formatBinaryBytes, formatScientific } from "./format.js";
import { parseInteger, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const STYLE = `
  .controls input[type=number] { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .shape { color: var(--tx-muted); margin-bottom: 0.6em; }
  .mem-row { display: grid; grid-template-columns: 4em minmax(3em, 1fr) auto; gap: 0.5em; align-items: center; margin: 2px 0; }
  /* The model names are long: their select takes a whole row (on a phone, under its label). */
  .controls label:has(select[name=preset]) { grid-column: 1 / -1; }
  @media (max-width: 600px) { .controls label:has(select[name=preset]) { grid-template-columns: minmax(0, 1fr); } }
  .mem-row .bar { height: 1.1em; }
  .mem-row .value { text-align: right; font-variant-numeric: tabular-nums; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 0.4em; }
  th, td { padding: 0.1em 0.7em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  th:first-child, td:first-child { text-align: left; }
`;

class TxKvCache extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">The KV cache: memory and saved arithmetic</div>
      <div class="controls">
        <label>Model <select name="preset"><option value="">loading…</option></select><span></span></label>
        <label>Context <input name="context_length" type="number" min="1" step="1"><span>tokens</span></label>
        <label>Precision <select name="dtype"><option>float32</option><option selected>float16</option><option>bfloat16</option><option>int8</option></select><span></span></label>
      </div>
      <div class="shape"></div>
      <div class="memory" role="list" aria-label="KV-cache memory per attention variant"></div>
      <div class="title" style="margin-top:0.8em">Generating with and without the cache</div>
      <div class="controls">
        <label>Prompt <input name="prompt_length" type="number" min="1" step="1"><span>tokens</span></label>
        <label>Generate <input name="new_tokens" type="number" min="1" step="1"><span>tokens</span></label>
      </div>
      <table class="flops" aria-label="Arithmetic to generate the tokens"><tbody></tbody></table>
      <div class="summary"></div>`;
  }

  setup() {
    this.field("context_length").value = this.getAttribute("context") ?? "1024";
    this.field("prompt_length").value = "16";
    this.field("new_tokens").value = "256";
  }

  /** The model presets, as the options of the model select. */
  async prepare() {
    this.presets = await callDemo("kv_cache", "presets");
    const select = this.field("preset");
    select.innerHTML = Object.entries(this.presets)
      .map(([id, p]) => `<option value="${escapeHtml(id)}">${escapeHtml(p.label)}</option>`)
      .join("");
    select.value = this.getAttribute("preset") ?? "gpt2-small"; // an unknown id leaves it empty: request() says so
    for (const el of this.shadowRoot.querySelectorAll(".controls [name]")) el.addEventListener("input", () => this.update());
  }

  request() {
    const id = parseSelect(this.field("preset"), { label: "The model" });
    const dtype = parseSelect(this.field("dtype"), { label: "The precision" });
    const sizes = {};
    for (const [name, label] of [
      ["context_length", "The context"],
      ["prompt_length", "The prompt"],
      ["new_tokens", "The number of generated tokens"],
    ]) {
      sizes[name] = parseInteger(this.field(name).value, { label, min: 1, max: 1_000_000, unit: "tokens" });
    }
    const { label, ...shape } = this.presets[id];
    return { preset: id, ...shape, dtype, ...sizes };
  }

  compute(request) {
    const { n_layer, n_head, d_head, gqa_kv_heads, context_length, dtype, prompt_length, new_tokens } = request;
    return Promise.all([
      callDemo("kv_cache", "compare_attention_variants", { n_layer, n_head, d_head, gqa_kv_heads, context_length, dtype }),
      callDemo("kv_cache", "generation_flops", { n_layer, d_model: n_head * d_head, prompt_length, new_tokens }),
    ]);
  }

  draw([memory, flops], request) {
    const { n_layer, n_head, d_head } = request;
    this.$(".shape").textContent =
      `${n_layer} layers, ${n_head} query heads of width ${d_head} (d = ${n_head * d_head}).` +
      " Per token and layer the cache holds one key and one value vector per key/value head.";
    const largest = memory.variants[0].total_bytes;
    this.$(".memory").innerHTML = memory.variants
      .map(
        (v) => `
      <div class="mem-row" role="listitem" data-variant="${v.name}" data-kv-heads="${v.n_kv_head}"
           data-bytes-per-token="${v.bytes_per_token}" data-bytes="${v.total_bytes}">
        <span class="label">${v.name}</span>
        <span class="bar"><span style="width:${(100 * v.total_bytes) / largest}%"></span></span>
        <span class="value">${formatBinaryBytes(v.total_bytes)} · ${v.n_kv_head} KV head${v.n_kv_head === 1 ? "" : "s"}</span>
      </div>`,
      )
      .join("");
    const t = this.$(".flops tbody");
    t.dataset.without = String(flops.without_cache);
    t.dataset.with = String(flops.with_cache);
    t.dataset.ratio = String(flops.ratio);
    t.innerHTML = `<tr><th>recompute the whole prefix every step</th><td>${formatScientific(flops.without_cache)} FLOPs</td></tr>
      <tr><th>prefill once, then one token per step with the cache</th><td>${formatScientific(flops.with_cache)} FLOPs</td></tr>`;
    this.$(".summary").textContent =
      `The cache does ${flops.ratio.toFixed(1)}× less arithmetic (${(100 * flops.saved_fraction).toFixed(1)}% saved)` +
      ` for ${request.new_tokens} new tokens after a ${request.prompt_length}-token prompt; the price is` +
      ` ${formatBinaryBytes(memory.variants[0].bytes_per_token)} of memory per cached token with MHA.`;
  }
}

define("tx-kv-cache", TxKvCache);
