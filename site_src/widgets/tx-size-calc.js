/**
 * <tx-size-calc>: the model-size calculator.
 *
 * Attributes (all optional):
 *   preset  id of the starting architecture (see demos.size.presets()), default "gpt2-small"
 *
 * Every number is computed by `demos.size.model_size` in the Pyodide worker; each result
 * cell carries the exact value in `data-value` (and its key in `data-key`). The "All
 * presets" table is `demos.size.preset_table()`: computed against published counts.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { formatScientific } from "./format.js";
import { parseInteger, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

/** Fields: [name, label, kind, help, placeholder]; kind is "count" (>= 1), "count0" (>= 0),
 * "optional" (a count, or empty for the default), "flag" or a list of choices. */
const FIELDS = [
  ["n_layer", "Layers", "count", "Transformer blocks in the stack"],
  ["d_model", "Width d", "count", "width of every token vector"],
  ["n_head", "Heads", "count", "must divide the width"],
  ["n_kv_head", "KV heads", "optional", "must divide the heads: empty or = heads is MHA, fewer is GQA, 1 is MQA", "= heads"],
  ["d_ff", "FFN width", "count", "hidden width of the feed-forward network"],
  ["vocab_size", "Vocabulary", "count", "rows of the token table"],
  ["n_positions", "Positions", "count0", "rows of a learned position table"],
  ["positions", "Position kind", ["learned", "sinusoidal", "rotary"], "only learned positions cost parameters"],
  ["norm", "Norm", ["layernorm", "rmsnorm"], "LayerNorm has scale and shift, RMSNorm only scale"],
  ["norm_position", "Norm placement", ["pre", "post"], "pre: final norm; post: norm on the embeddings"],
  ["tie_embeddings", "Tied head", "flag", "output head reuses the token table"],
  ["lm_head", "Output head", "flag", "BERT's bare encoder has none"],
  ["gated_ffn", "Gated FFN", "flag", "SwiGLU: three FFN matrices instead of two"],
  ["bias", "Biases", "flag", "a bias vector after every linear layer"],
  ["n_segments", "Segments", "count0", "BERT's segment (token type) table"],
  ["pooler", "Pooler", "flag", "BERT's (d, d) pooler"],
  ["n_experts", "Experts", "count", "FFN experts per layer (1 = dense)"],
  ["top_k", "Experts per token", "count", "top-k routing"],
  ["n_shared_experts", "Shared experts", "count0", "always-on experts"],
];
const USAGE = [
  ["context_length", "Context (tokens)", "count", "tokens held in the KV cache"],
  ["train_tokens", "Training tokens", "optional", "empty: the Chinchilla budget, 20 per parameter", "20 × parameters"],
  ["kv_precision", "KV precision", ["fp16", "bf16", "fp32", "int8", "int4"], "bytes per cached number"],
];
/** Largest value of each count that demos.size takes (top_k: at most the experts, checked there). */
const MAX = {
  n_layer: 10_000,
  d_model: 1_000_000,
  n_head: 100_000,
  n_kv_head: 100_000,
  d_ff: 10_000_000,
  vocab_size: 10_000_000,
  n_positions: 10_000_000,
  n_segments: 1_000,
  n_experts: 10_000,
  n_shared_experts: 10_000,
  context_length: 100_000_000,
  train_tokens: 1e15,
};
const PRECISIONS = ["fp32", "fp16", "int8", "int4"];

const STYLE = `
  fieldset { border: 1px solid var(--tx-border); border-radius: 4px; margin: 0 0 0.6em; padding: 0.4em 0.8em 0.6em; }
  legend { font-weight: 600; padding: 0 0.3em; }
  .fields { display: grid; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr)); gap: 0.3em 1.2em; }
  .fields label { display: grid; grid-template-columns: 8.5em 1fr; align-items: center; gap: 0.4em; }
  .fields input[type=number] { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .fields input[type=checkbox] { justify-self: start; }
  [aria-invalid="true"] { outline: 2px solid #c62828; }
  .preset-row { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: center; margin-bottom: 0.6em; }
  .note { color: var(--tx-muted); }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 0.15em 0.5em; border-bottom: 1px solid var(--tx-border); vertical-align: top; }
  td.num { text-align: right; white-space: nowrap; }
  /* A phone: the results stay a two-column table (label, value) and long values wrap. */
  @media (max-width: 600px) { td.num { white-space: normal; } }
  tr.group th { padding-top: 0.6em; color: var(--tx-muted); font-weight: 600; }
  details { margin-top: 0.8em; }
  summary { cursor: pointer; font-weight: 600; }
`;

/** "124.44 M"-style count with the exact integer after it. */
function formatCount(n) {
  const units = [
    [1e12, "T"],
    [1e9, "B"],
    [1e6, "M"],
    [1e3, "k"],
  ];
  const [scale, unit] = units.find(([s]) => n >= s) ?? [1, ""];
  const short = unit ? `${(n / scale).toFixed(n / scale >= 100 ? 1 : 2)} ${unit}` : String(n);
  return unit ? `${short} (${Math.round(n).toLocaleString("en")})` : short;
}

/** Bytes in decimal units, e.g. "497.76 MB". */
function formatSize(bytes) {
  const units = [
    [1e15, "PB"],
    [1e12, "TB"],
    [1e9, "GB"],
    [1e6, "MB"],
    [1e3, "kB"],
  ];
  const [scale, unit] = units.find(([s]) => bytes >= s) ?? [1, "B"];
  return `${(bytes / scale).toFixed(2)} ${unit}`;
}

function fieldHtml([name, label, kind, help, placeholder]) {
  const title = `title="${escapeHtml(help)}"`;
  if (Array.isArray(kind)) {
    return `<label ${title}>${label}<select name="${name}">${kind.map((k) => `<option>${k}</option>`).join("")}</select></label>`;
  }
  if (kind === "flag") return `<label ${title}>${label}<input name="${name}" type="checkbox"></label>`;
  const min = kind === "count0" ? 0 : 1;
  const hint = placeholder ? ` placeholder="${escapeHtml(placeholder)}"` : "";
  return `<label ${title}>${label}<input name="${name}" type="number" min="${min}" step="1" inputmode="numeric"${hint}></label>`;
}

class TxSizeCalc extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Model-size calculator</div>
      <div class="preset-row"><label>Preset <select name="preset"><option>loading…</option></select></label>
        <span class="note"></span></div>
      <fieldset><legend>Architecture</legend><div class="fields">${FIELDS.map(fieldHtml).join("")}</div></fieldset>
      <fieldset><legend>Use</legend><div class="fields">${USAGE.map(fieldHtml).join("")}</div></fieldset>
      <table class="results" aria-label="Results"><tbody></tbody></table>
      <details class="all"><summary>All presets: computed against published parameter counts</summary>
        <table><thead><tr><th>model</th><th>published</th><th>computed here</th><th>difference</th></tr></thead><tbody></tbody></table>
      </details>`;
  }

  setup() {
    this.$('[name="preset"]').addEventListener("change", () => {
      if (this.applyPreset(this.$('[name="preset"]').value)) this.update();
    });
  }

  /** The presets (the select and the table of published counts), and the first one's fields. */
  async prepare() {
    const [presets, table] = await Promise.all([callDemo("size", "presets"), callDemo("size", "preset_table")]);
    this.presets = presets;
    this.$('[name="preset"]').innerHTML =
      presets.map((p) => `<option value="${p.id}">${escapeHtml(p.name)}</option>`).join("") + '<option value="custom">custom (edited)</option>';
    this.renderPresetTable(table);
    const wanted = this.getAttribute("preset") ?? "gpt2-small";
    const known = presets.some((p) => p.id === wanted);
    if (!known) {
      // said once, after the first preset is computed
      this.notice =
        `There is no preset “${wanted.slice(0, 40)}” (the preset attribute): showing ${presets[0].name}.` +
        ` The ids are ${presets.map((p) => p.id).join(", ")}.`;
    }
    this.applyPreset(known ? wanted : presets[0].id);
    for (const el of this.shadowRoot.querySelectorAll(".fields [name]")) {
      el.addEventListener(el.type === "checkbox" || el.tagName === "SELECT" ? "change" : "input", () => this.update());
    }
  }

  /** Fill the fields from the preset `id`; false for "custom" (the fields stay as they are). */
  applyPreset(id) {
    const preset = this.presets.find((p) => p.id === id);
    if (!preset) return false;
    this.$('[name="preset"]').value = id;
    const config = { n_kv_head: "", n_segments: 0, pooler: false, n_experts: 1, top_k: 1, n_shared_experts: 0, ...preset.config };
    for (const [name] of FIELDS) this.setField(name, config[name]);
    this.setField("context_length", config.n_positions || 2048);
    this.setField("train_tokens", preset.train_tokens ?? "");
    this.setField("kv_precision", "fp16");
    try {
      this.presetRequest = this.request(); // to tell later whether the reader edited the preset
    } catch {
      this.presetRequest = null; // the next update says what is wrong
    }
    this.$(".note").textContent = [`Published: ${preset.published_label}.`, preset.note].filter(Boolean).join(" ");
    return true;
  }

  setField(name, value) {
    const el = this.$(`[name="${name}"]`);
    if (el.type === "checkbox") el.checked = Boolean(value);
    else el.value = String(value);
    el.removeAttribute("aria-invalid");
  }

  /** The fields as keyword arguments of model_size; an InputError names the first bad field (marked aria-invalid). */
  request() {
    const kwargs = {};
    for (const [name, label, kind] of [...FIELDS, ...USAGE]) {
      const el = this.$(`[name="${name}"]`);
      el.removeAttribute("aria-invalid");
      try {
        if (Array.isArray(kind)) kwargs[name] = parseSelect(el, { label });
        else if (kind === "flag") kwargs[name] = el.checked;
        else if (kind !== "optional" || el.value.trim() !== "") {
          kwargs[name] = parseInteger(el.value, { label, min: kind === "count0" ? 0 : 1, max: MAX[name] });
        }
      } catch (err) {
        el.setAttribute("aria-invalid", "true");
        throw err;
      }
    }
    return kwargs;
  }

  /** The preset select says "custom" once the architecture differs from the preset's. */
  echo(kwargs) {
    const architecture = (request) => JSON.stringify(FIELDS.map(([name]) => request?.[name]));
    if (architecture(kwargs) !== architecture(this.presetRequest)) this.$('[name="preset"]').value = "custom";
  }

  compute(kwargs) {
    return callDemo("size", "model_size", kwargs);
  }

  draw(result) {
    this.renderResults(result);
  }

  /** A fault that names a field (model_size's ValueError) marks it aria-invalid. */
  showFault(err) {
    const field = /^model size: |^(\w+) /.exec(err.message)?.[1];
    this.$(`.fields [name="${field}"]`)?.setAttribute("aria-invalid", "true");
    super.showFault(err);
  }

  renderResults(r) {
    const p = r.parameters;
    const kv = r.kv_cache;
    const row = (label, key, value, text) => `<tr><th scope="row">${label}</th>
      <td class="num" data-key="${key}" data-value="${value}">${text ?? formatCount(value)}</td></tr>`;
    const group = (label) => `<tr class="group"><th colspan="2">${label}</th></tr>`;
    const moe = r.moe.total !== r.moe.active;
    this.$(".results tbody").innerHTML = [
      group("Parameters"),
      row("Total", "parameters.total", p.total),
      row("Token embedding", "parameters.token_embedding", p.token_embedding),
      row("Position embedding", "parameters.position_embedding", p.position_embedding),
      row("All layers", "parameters.layers", p.layers),
      row("One layer: attention", "parameters.attention_per_layer", p.attention_per_layer),
      row("One layer: FFN (all experts)", "parameters.ffn_per_layer", p.ffn_per_layer),
      row("Output head (0 when tied)", "parameters.lm_head", p.lm_head),
      row(
        "Active per token (MoE)",
        "moe.active",
        r.moe.active,
        moe ? `${formatCount(r.moe.active)}, ${(100 * r.moe.active_fraction).toFixed(1)}% of all` : `${formatCount(r.moe.active)}: dense, all of them`,
      ),
      group("Memory for the weights"),
      ...PRECISIONS.map((name) => row(name, `weight_memory.${name}`, r.weight_memory[name], formatSize(r.weight_memory[name]))),
      group(`KV cache (${escapeHtml(kv.precision)})`),
      row("Per token, MHA (all heads)", "kv_cache.bytes_per_token.mha", kv.bytes_per_token.mha, formatSize(kv.bytes_per_token.mha)),
      row("Per token, this model", "kv_cache.bytes_per_token.gqa", kv.bytes_per_token.gqa, formatSize(kv.bytes_per_token.gqa)),
      row("Per token, MQA (one KV head)", "kv_cache.bytes_per_token.mqa", kv.bytes_per_token.mqa, formatSize(kv.bytes_per_token.mqa)),
      row(`For ${kv.context_length.toLocaleString("en")} tokens`, "kv_cache.bytes_for_context", kv.bytes_for_context, formatSize(kv.bytes_for_context)),
      group("Training compute"),
      row("Training tokens D", "train_tokens", r.train_tokens),
      row("FLOPs ≈ 6 · N · D", "training_flops", r.training_flops, formatScientific(r.training_flops)),
      row("Chinchilla tokens ≈ 20 · N", "chinchilla_tokens", r.chinchilla_tokens),
    ].join("");
  }

  renderPresetTable(rows) {
    this.$(".all tbody").innerHTML = rows
      .map(
        (r) => `<tr data-id="${r.id}">
      <td>${escapeHtml(r.name)}</td><td class="num" data-published="${r.published}">${escapeHtml(r.published_label)}</td>
      <td class="num" data-computed="${r.computed}">${formatCount(r.computed)}</td>
      <td class="num" data-relative-error="${r.relative_error}">${r.relative_error >= 0 ? "+" : "−"}${Math.abs(100 * r.relative_error).toFixed(2)}%</td></tr>`,
      )
      .join("");
  }
}

define("tx-size-calc", TxSizeCalc);
