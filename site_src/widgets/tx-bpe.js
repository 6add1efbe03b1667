/**
 * <tx-bpe>: byte-pair encoding step by step: GPT-2's merges applied to a word, and a tiny
 * BPE trained on an editable corpus.
 *
 * Attributes (all optional):
 *   word      starting text, default "unbelievable"
 *   corpus    starting training corpus
 *   merges    number of merges to learn, default 10
 *
 * GPT-2's merge list is the site's default model's merges.txt (models/index.json names the
 * model, its manifest.json the file). Computed by `demos.bpe.apply_merges` and
 * `demos.bpe.train_bpe`. The element carries `data-tokens` (JSON list of the final GPT-2
 * tokens); each merge step row carries `data-rank` and `data-symbols` (JSON); each trained
 * merge row carries `data-pair` (JSON), `data-count` and `data-ties`.
 */
import { callDemo } from "../runtime/python.js";
import { modelsURL } from "../runtime/paths.js";
import { escapeHtml } from "./base.js";
import { InputError } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const CORPUS = "the cat sat on the mat. the cats sat on the mats, and the rat sat on a hat.";
const STYLE = `
  .row input[type=text] { font: inherit; flex: 1; min-width: 10em; padding: 0.2em 0.4em; }
  .steps { display: grid; grid-template-columns: auto auto minmax(8em, 1fr); gap: 0.2em 0.8em; align-items: center; margin: 0.5em 0; }
  .steps .rank { color: var(--tx-muted); font-variant-numeric: tabular-nums; text-align: right; }
  .steps .merge { font-family: var(--md-code-font-family, monospace); white-space: pre; }
  /* A phone: rank and merge on one line, the word's symbols under them across the card. */
  @media (max-width: 600px) { .steps { grid-template-columns: auto minmax(0, 1fr); } .steps .tokens { grid-column: 1 / -1; margin-bottom: 0.3em; } }
  td .tokens { flex-wrap: nowrap; }
  .token.new { outline: 2px solid var(--tx-accent); }
  .word-head { margin-top: 0.5em; font-weight: 600; }
  textarea { min-height: 4em; }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 0.4em; }
  th, td { padding: 0.1em 0.6em; border-bottom: 1px solid var(--tx-border); text-align: left; }
  td.num { text-align: right; }
  .segmented { display: flex; flex-wrap: wrap; gap: 0.3em 0.9em; margin-top: 0.5em; }
`;

let mergesText = null; // GPT-2's merges.txt, fetched once per page

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  return response;
}

/** The default model's merges.txt, as text. */
function loadMerges() {
  mergesText ??= (async () => {
    const index = await (await fetchOk(new URL("index.json", modelsURL))).json();
    const base = new URL(`${index.default}/`, modelsURL);
    const manifest = await (await fetchOk(new URL("manifest.json", base))).json();
    return (await fetchOk(new URL(manifest.tokenizer.merges.path, base))).text();
  })();
  mergesText.catch(() => {
    mergesText = null;
  }); // a failed download can be retried
  return mergesText;
}

/** Symbols as chips; `fresh` marks the symbol a merge has just created. */
function chips(symbols, fresh = null) {
  return `<span class="tokens">${symbols.map((s) => `<span class="token${s === fresh ? " new" : ""}">${escapeHtml(s)}</span>`).join("")}</span>`;
}

class TxBpe extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">GPT-2's merges, one step at a time</div>
      <div class="row">
        <label>Text <input name="word" type="text" spellcheck="false"></label>
        <label><input name="space" type="checkbox" checked> leading space (a word inside a sentence: shown as Ġ)</label>
      </div>
      <div class="applied" aria-live="polite"></div>
      <div class="title" style="margin-top:0.9em">Train a tiny BPE</div>
      <label class="prompt">Corpus<textarea name="corpus" spellcheck="false"></textarea></label>
      <div class="controls"><label>Merges <input name="num_merges" type="range" min="0" max="60" step="1"><output></output></label></div>
      <table aria-label="Merges learned, in order"><thead><tr><th>#</th><th>pair</th><th>new symbol</th><th>count</th><th>tied with</th></tr></thead>
        <tbody class="learned"></tbody></table>
      <div class="segmented" aria-label="The corpus words after training"></div>`;
  }

  setup() {
    this.wire({
      word: this.getAttribute("word") ?? "unbelievable",
      corpus: this.getAttribute("corpus") ?? CORPUS,
      num_merges: this.getAttribute("merges") ?? "10",
      space: this.field("space").checked,
    });
  }

  request() {
    const word = this.field("word").value;
    const corpus = this.field("corpus").value;
    if (word.trim() === "") throw new InputError("Type a word (or a few) to tokenize.", "word");
    if (corpus.trim() === "") throw new InputError("The training corpus is empty: type some text.", "corpus");
    const text = (this.field("space").checked && !word.startsWith(" ") ? " " : "") + word;
    return { text, corpus, num_merges: Number(this.field("num_merges").value) };
  }

  echo(request) {
    this.$('[name="num_merges"] + output').textContent = String(request.num_merges);
  }

  async compute(request) {
    if (!mergesText) this.showProgress("Loading GPT-2's merge list…");
    const merges = await loadMerges();
    return Promise.all([
      callDemo("bpe", "apply_merges", { text: request.text, merges }),
      callDemo("bpe", "train_bpe", { corpus: request.corpus, num_merges: request.num_merges }),
    ]);
  }

  draw([applied, trained]) {
    this.renderApplied(applied);
    this.renderTrained(trained);
  }

  renderApplied(result) {
    this.dataset.tokens = JSON.stringify(result.tokens);
    this.$(".applied").innerHTML = result.words
      .map(
        (w) => `
      <div class="word-head">${escapeHtml(w.word)}: ${w.steps.length} merge${w.steps.length === 1 ? "" : "s"},
        ${w.tokens.length} token${w.tokens.length === 1 ? "" : "s"}</div>
      <div class="steps">
        <span class="rank">start</span><span class="merge">bytes</span>${chips(w.initial)}
        ${w.steps
          .map(
            (s) => `<span class="rank" data-rank="${s.rank}" data-symbols="${escapeHtml(JSON.stringify(s.symbols))}">rank ${s.rank.toLocaleString("en")}</span>
          <span class="merge">${escapeHtml(s.pair[0])} + ${escapeHtml(s.pair[1])}</span>${chips(s.symbols, s.pair[0] + s.pair[1])}`,
          )
          .join("")}
      </div>`,
      )
      .join("");
  }

  renderTrained(result) {
    this.$(".learned").innerHTML = result.steps
      .map(
        (s, i) => `
      <tr data-pair="${escapeHtml(JSON.stringify(s.pair))}" data-count="${s.count}" data-ties="${s.ties}">
        <td class="num">${i + 1}</td><td>${chips(s.pair)}</td><td>${chips([s.token])}</td>
        <td class="num">${s.count}</td><td class="num">${s.ties ? `${s.ties} other${s.ties === 1 ? "" : "s"}` : "–"}</td></tr>`,
      )
      .join("");
    this.$(".segmented").innerHTML = result.words.map((w) => `<span title="${w.count}× in the corpus">${chips(w.tokens)}</span>`).join("");
  }
}

define("tx-bpe", TxBpe);
