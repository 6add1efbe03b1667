/**
 * <tx-stage-tokens>: stage 1 of the pipeline. The reader's prompt as GPT-2 tokens with their
 * ids, and, for one word, the byte-pair merges that produced its pieces (computed by
 * `demos.bpe.apply_merges` with the model's own merges.txt).
 *
 * Shows `data-ids` (JSON) on the token list and `data-tokens` (JSON) on the merge list.
 */
import { callDemo } from "../runtime/python.js";
import { modelsURL } from "../runtime/paths.js";
import { escapeHtml, visible } from "./base.js";
import { PipelineStage } from "./pipeline/stage.js";
import { GPT2_SMALL, shapeLine } from "./pipeline/text.js";
import { define } from "./widget.js";

let mergesText = null;

async function merges(model) {
  if (!mergesText) {
    const url = new URL(`${model.info.name}/merges.txt`, modelsURL).href;
    mergesText = fetch(url).then((r) => {
      if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
      return r.text();
    });
    mergesText.catch(() => {
      mergesText = null;
    });
  }
  return mergesText;
}

class TxStageTokens extends PipelineStage {
  controls() {
    return `<label>Word to split <select name="word"><option value="-1">the longest word</option></select></label>`;
  }

  needsForward() {
    return false;
  }

  async figure({ model, ids, enc }) {
    const { tokenizer } = model;
    const text = this.$(".pl-prompt input").value;
    const chips = ids
      .map(
        (id, i) =>
          `<span class="pl-token" data-id="${id}"><span>${escapeHtml(visible(tokenizer.tokenToString(id)))}</span><small>${id}</small><small>pos ${i}</small></span>`,
      )
      .join("");
    const result = await callDemo("bpe", "apply_merges", { text: text.slice(0, 2000), merges: await merges(model) });
    const words = result.words;
    const select = this.$("select[name=word]");
    let chosen = Number(select.value);
    if (!(chosen >= 0 && chosen < words.length)) {
      chosen = words.reduce((best, w, i) => (w.word.length > words[best].word.length ? i : best), 0);
    }
    select.innerHTML = words
      .slice(0, 64)
      .map((w, i) => `<option value="${i}"${i === chosen ? " selected" : ""}>${escapeHtml(visible(w.word.replace(/Ġ/g, " ")))}</option>`)
      .join("");
    const word = words[chosen];
    const steps = [`<li><code>${word.initial.map(escapeHtml).join(" · ")}</code> (bytes as characters; Ġ is a space)</li>`].concat(
      word.steps.map(
        (s) =>
          `<li>merge <code>${escapeHtml(s.pair[0])} + ${escapeHtml(s.pair[1])}</code> (rank ${s.rank}) → <code>${s.symbols.map(escapeHtml).join(" · ")}</code></li>`,
      ),
    );
    return `${shapeLine("Token ids", [ids.length], [ids.length], model.info.name)}
      <p class="pl-note">${enc.total} token${enc.total === 1 ? "" : "s"} from ${[...text].length} characters; the vocabulary has ${GPT2_SMALL.vocab_size.toLocaleString("en")} entries.</p>
      <figure class="pl-fig scroll"><figcaption>Figure 1. Your prompt as tokens: the piece, its id (a row of the embedding table) and its position.</figcaption>
        <div class="pl-tokens" data-ids="${JSON.stringify(ids)}">${chips}</div></figure>
      <figure class="pl-fig scroll"><figcaption>How “${escapeHtml(word.word.replace(/Ġ/g, "␣"))}” was split: ${word.steps.length} merge${word.steps.length === 1 ? "" : "s"}, lowest rank first.</figcaption>
        <ol class="pl-merges" data-tokens='${JSON.stringify(word.tokens).replace(/'/g, "&#39;")}'>${steps.join("")}</ol></figure>`;
  }
}

define("tx-stage-tokens", TxStageTokens);
