/**
 * <tx-stage-loop>: stage 8. Greedy generation with the key/value cache, token by token: each
 * step feeds one new token, reads the cached keys and values of all earlier ones, and appends
 * its own. The table shows what each step fed the model and what the cache holds.
 *
 * Shows one `tr` per new token with `data-id`, `data-fed` and `data-cache-bytes`, and
 * `data-ids` (JSON, the new ids) on the table.
 */
import { escapeHtml, visible } from "./base.js";
import { parseInteger } from "./inputs.js";
import { PipelineStage } from "./pipeline/stage.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

class TxStageLoop extends PipelineStage {
  controls() {
    return `<label>New tokens <input type="number" name="steps" min="1" max="32" step="1" value="8"></label>`;
  }

  needsForward() {
    return false;
  }

  async figure({ model, ids }) {
    const steps = parseInteger(this.$("input[name=steps]").value, { label: "New tokens", min: 1, max: 32 });
    const { n_layer: L, n_head: H, n_embd: C } = model.info.config;
    const hd = C / H;
    const perToken = 2 * L * H * hd * 4; // keys and values, float32
    const run = model.generate(ids, { maxNewTokens: steps, temperature: 0, stopAtEos: false, alternatives: 0 });
    const rows = [];
    const newIds = [];
    let text = "";
    for await (const token of run) {
      const n = token.index;
      const fed = n === 0 ? ids.length : 1; // the prefill feeds the prompt, later steps one token
      const fromCache = n === 0 ? 0 : ids.length + n - 1; // earlier positions read from the cache
      const length = ids.length + n; // positions cached after this step
      newIds.push(token.id);
      text += token.text;
      rows.push(
        `<tr data-id="${token.id}" data-fed="${fed}" data-cache-bytes="${length * perToken}"><td>${n + 1}</td><td>${escapeHtml(visible(token.piece))}</td><td>${token.id}</td><td>${fed}</td><td>${fromCache}</td><td>${length}</td><td>${((length * perToken) / 1024).toFixed(1)} KiB</td></tr>`,
      );
    }
    const summary = await run.result;
    const g = GPT2_SMALL;
    const T = ids.length;
    return `${shapeLine("one layer's cached keys after the prompt", [g.n_head, T, g.n_embd / g.n_head], [H, T, hd], model.info.name)}
      <p class="pl-note">Greedy continuation: <q>${escapeHtml(text + summary.tail)}</q></p>
      <figure class="pl-fig scroll"><figcaption>Figure 8. Each row is one trip through stages 2–7. “fed” is how many tokens entered the model; “from cache” how many earlier positions it read instead of recomputing; the cache holds keys and values for every layer (${L}) and head (${H}), ${(perToken / 1024).toFixed(1)} KiB per position in float32.</figcaption>
      <table class="pl-table pl-loop" data-ids="${JSON.stringify(newIds)}"><thead><tr><th>step</th><th>token</th><th>id</th><th>fed</th><th>from cache</th><th>positions cached after</th><th>cache size</th></tr></thead><tbody>${rows.join("")}</tbody></table></figure>`;
  }
}

define("tx-stage-loop", TxStageLoop);
