/**
 * <tx-patching>: activation patching. Run a clean and a corrupted prompt of the same token
 * length; then run the corrupted one again with one activation copied from the clean run, and
 * see how much of the clean answer comes back: (LD_patched − LD_corrupted) / (LD_clean −
 * LD_corrupted), LD = logit(good) − logit(bad) at the last position. A heat map over (layer,
 * position) for the residual stream, and one over (layer, head) for each head's output.
 *
 * Attributes (all optional):
 *   pair       a ready-made pair: "capital" (default) or "ioi" (indirect object)
 *   clean      the clean prompt (overrides the pair's)
 *   corrupted  the corrupted prompt, with as many tokens as the clean one
 *   good       the answer the clean prompt should give (one token, e.g. " Paris")
 *   bad        the answer the corrupted prompt gives instead (one token, e.g. " Rome")
 *   backend    "auto" (WebGPU when an adapter exists, else WASM), "webgpu" or "wasm"
 *   model      a model name under models/ (default: the site's default model)
 *   variant    a weight variant of the model; default: the best for the backend
 */
import { checkPair, patchHeads, patchResidual } from "../runtime/interpret.js";
import { gridHTML } from "./grid.js";
import { TxInspect } from "./inspect-base.js";
import { define } from "./widget.js";

const MAX_TOKENS = 24;

/** Ready-made pairs: the prompts differ in one token, and so does the answer. */
export const PAIRS = {
  capital: {
    label: "capital city",
    clean: "The capital of France is the city of",
    corrupted: "The capital of Italy is the city of",
    good: " Paris",
    bad: " Rome",
  },
  ioi: {
    label: "indirect object",
    clean: "When Mary and John went to the store, John gave a drink to",
    corrupted: "When Mary and John went to the store, Mary gave a drink to",
    good: " Mary",
    bad: " John",
  },
};

class TxPatching extends TxInspect {
  static heading = "Activation patching: where does the answer live?";

  static stateNames = ["pair", "clean", "corrupted", "good", "bad"];

  body() {
    const options = Object.entries(PAIRS)
      .map(([key, { label }]) => `<option value="${key}">${label}</option>`)
      .join("");
    return `
      <div class="row"><label>Pair <select name="pair">${options}<option value="custom">your own</option></select></label></div>
      <div class="pair">
        <label class="prompt">Clean prompt <textarea name="clean" rows="2" spellcheck="false"></textarea></label>
        <label class="prompt">Corrupted prompt <textarea name="corrupted" rows="2" spellcheck="false"></textarea></label>
      </div>
      <div class="row">
        <label>Good answer <input name="good" type="text" size="9" spellcheck="false"></label>
        <label>Bad answer <input name="bad" type="text" size="9" spellcheck="false"></label>
      </div>
      <p class="summary" aria-live="polite"></p>
      <div class="row">
        <button type="button" class="resid-button">Patch the residual stream</button>
        <button type="button" class="heads-button">Patch each head</button>
      </div>
      <div class="resid"></div>
      <div class="heads"></div>`;
  }

  setup() {
    const pair = this.getAttribute("pair") ?? "capital";
    const preset = PAIRS[pair] ?? PAIRS.capital;
    this.badPair = pair in PAIRS || pair === "custom" ? null : pair;
    const custom = ["clean", "corrupted", "good", "bad"].some((n) => this.hasAttribute(n));
    this.$('select[name="pair"]').value = custom ? "custom" : pair in PAIRS ? pair : "capital";
    for (const name of ["clean", "corrupted", "good", "bad"]) this.field(name).value = this.getAttribute(name) ?? preset[name];
    const changed = () => {
      this.$(".resid").innerHTML = ""; // the maps were of the other inputs
      this.$(".heads").innerHTML = "";
      this.rerunSoon();
    };
    this.$('select[name="pair"]').addEventListener("change", (event) => {
      this.badPair = null;
      const chosen = PAIRS[event.target.value];
      if (chosen) for (const name of ["clean", "corrupted", "good", "bad"]) this.field(name).value = chosen[name];
      this.$(".resid").innerHTML = "";
      this.$(".heads").innerHTML = "";
      this.rerunNow();
    });
    for (const name of ["clean", "corrupted", "good", "bad"]) {
      this.field(name).addEventListener("input", () => {
        this.$('select[name="pair"]').value = "custom";
        changed();
      });
    }
    this.$(".resid-button").addEventListener("click", () => this.runPatch("resid"));
    this.$(".heads-button").addEventListener("click", () => this.runPatch("heads"));
  }

  field(name) {
    return this.$(`[name="${name}"]`);
  }

  currentState() {
    const pair = this.$('select[name="pair"]').value;
    if (pair !== "custom") return { pair, clean: null, corrupted: null, good: null, bad: null };
    return Object.fromEntries(["clean", "corrupted", "good", "bad"].map((n) => [n, this.field(n).value]).concat([["pair", "custom"]]));
  }

  /** One answer token, or a clear error. */
  answer(model, which) {
    const text = this.field(which).value;
    const ids = model.tokenizer.encode(text);
    const name = which === "good" ? "The good answer" : "The bad answer";
    if (ids.length !== 1)
      throw new RangeError(`${name} “${text}” is ${ids.length} tokens; it must be exactly one (most words need a leading space, e.g. “ Paris”).`);
    return ids[0];
  }

  /** The inputs, checked: the two prompts' ids and the two answers. */
  inputs(model) {
    if (this.badPair) throw new RangeError(`There is no ready-made pair “${this.badPair}”; the pairs are ${Object.keys(PAIRS).join(", ")}.`);
    const clean = this.encode(model, this.field("clean").value, { max: MAX_TOKENS, what: "The clean prompt" });
    const corrupted = this.encode(model, this.field("corrupted").value, { max: MAX_TOKENS, what: "The corrupted prompt" });
    checkPair(clean, corrupted);
    const good = this.answer(model, "good");
    const bad = this.answer(model, "bad");
    if (good === bad) throw new RangeError("The good and the bad answer are the same token; patching measures the gap between two different ones.");
    return { clean, corrupted, good, bad };
  }

  async run(model, stale) {
    const { clean, corrupted, good, bad } = this.inputs(model);
    this.showProgress("Running both prompts…");
    const ld = async (ids) => {
      const { logits } = await model.inspect(ids, { want: ["logits"], lastOnly: true });
      return logits.data[good] - logits.data[bad];
    };
    const ldClean = await ld(clean);
    const ldCorrupt = await ld(corrupted);
    if (stale()) return;
    Object.assign(this.dataset, { ldClean: String(ldClean), ldCorrupt: String(ldCorrupt) });
    const g = this.pieceText(model, good);
    const b = this.pieceText(model, bad);
    this.$(".summary").textContent =
      `Logit difference “${g}” − “${b}”: ${ldClean.toFixed(3)} on the clean prompt, ${ldCorrupt.toFixed(3)} on the corrupted one.` +
      (Math.abs(ldClean - ldCorrupt) < 1e-3 ? " They barely differ, so the restored share is not meaningful for this pair on this model." : "");
    return `${clean.length} tokens each. Patch the residual stream (${model.info.config.n_layer} × ${clean.length} runs) or each head (${model.info.config.n_layer} × ${model.info.config.n_head} runs).`;
  }

  runPatch(kind) {
    const label = kind === "resid" ? "Patching the residual stream" : "Patching each head";
    const fn = kind === "resid" ? patchResidual : patchHeads;
    const compute = (model, options) => {
      const { clean, corrupted, good, bad } = this.inputs(model);
      this.patched = clean;
      return fn(model, clean, corrupted, good, bad, options);
    };
    return this.runLong(label, compute, (model, result) => {
      const { n_layer: L, n_head: nh } = model.info.config;
      const clean = this.patched;
      const cols = kind === "resid" ? clean.length : nh;
      const value = (l, c) => result.restored[l * cols + c];
      this.$(`.${kind}`).innerHTML = gridHTML({
        name: kind,
        caption:
          kind === "resid"
            ? "Share of the clean logit difference restored by copying the clean residual stream entering each block at each position (1 = all of it, orange; negative, blue)."
            : "Share restored by copying one head's output, at every position, from the clean run.",
        rows: L,
        cols,
        corner: kind === "resid" ? "layer \\ token" : "layer \\ head",
        rowLabel: String,
        colLabel: kind === "resid" ? (t) => this.pieceText(model, clean[t]) : String,
        cell: (l, c) => ({
          value: value(l, c),
          shade: value(l, c),
          html: `<span class="cell-value">${value(l, c).toFixed(2)}</span>`,
          title: kind === "resid" ? `block ${l}, position ${c}: ${value(l, c).toFixed(3)} restored` : `head ${l}.${c}: ${value(l, c).toFixed(3)} restored`,
        }),
      });
      return L * cols;
    });
  }
}

define("tx-patching", TxPatching);
