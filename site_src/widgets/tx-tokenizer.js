/**
 * <tx-tokenizer>: any text through GPT-2's tokenizer (its real vocabulary and merges, the
 * files the site's model ships), token by token, with the cost of each line: digits, spaces,
 * capitals, other scripts, glitch tokens and the special token.
 *
 * Attributes (all optional):
 *   preset   the starting text: prose, numbers, case, spaces, scripts, glitch or special
 *            (default prose)
 *   text     a starting text of your own (overrides preset)
 *
 * Every token chip carries `data-id`; every line of the table `data-line`, `data-chars`,
 * `data-bytes` and `data-tokens`. The element carries `data-ids` (JSON, all ids in order).
 */
import { modelsURL } from "../runtime/paths.js";
import { GPT2Tokenizer } from "../runtime/tokenizer.js";
import { escapeHtml } from "./base.js";
import { InputError, parseSelect } from "./inputs.js";
import { Widget, define } from "./widget.js";

const MAX_CHARS = 4000;
const PRESETS = {
  prose: ["English prose", "The cat sat on the mat. Transformers read text as tokens, not as words."],
  numbers: ["Digits and arithmetic", "1234567 + 7654321 = 8888888\n2024 2025 2026\n3.14159 and 100,000"],
  case: ["Capitals and spaces", "hello Hello HELLO\n hello  hello"],
  spaces: ["A trailing space", "The capital of France is\nThe capital of France is "],
  scripts: ["Other languages", "The dog barks loudly.\nDer Hund bellt laut.\nСобака громко лает.\n犬が大きな声で吠える。"],
  glitch: ["Glitch tokens", " SolidGoldMagikarp\n petertodd\n davidjl"],
  special: ["The special token", "end of one text<|endoftext|>start of the next"],
};
const STYLE = `
  textarea { font: inherit; font-family: var(--md-code-font-family, monospace); width: 100%; box-sizing: border-box; min-height: 5em; }
  .chips { display: flex; flex-wrap: wrap; gap: 0.25em; margin: 0.6em 0; }
  .chip { display: inline-flex; flex-direction: column; align-items: center; border: 1px solid var(--tx-border);
          border-radius: 4px; padding: 0.1em 0.35em; font-family: var(--md-code-font-family, monospace); max-width: 100%; }
  .chip:nth-child(odd) { background: color-mix(in srgb, var(--tx-accent) 12%, transparent); }
  .chip .piece { white-space: pre; overflow-wrap: anywhere; }
  .chip .id { font-size: 0.75em; color: var(--tx-muted); }
  .chip.special { border-color: var(--tx-accent); font-weight: 600; }
  .chip.newline .piece { color: var(--tx-muted); }
  table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: 0.4em; }
  th, td { padding: 0.15em 0.5em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  th:first-child, td:first-child { text-align: left; }
`;

/** How a token's text is shown: spaces as ␣, a newline as ⏎, stray bytes as <0xE7>. */
function visiblePiece(text) {
  return text.replace(/ /g, "␣").replace(/\n/g, "⏎").replace(/\t/g, "⇥");
}

/** A line as the table shows it: its first 24 characters, then an ellipsis. */
function shortLine(text) {
  const chars = [...text];
  return chars.length > 24 ? `${chars.slice(0, 24).join("")}…` : text;
}

class TxTokenizer extends Widget {
  template() {
    const options = Object.entries(PRESETS)
      .map(([value, [label]]) => `<option value="${value}">${label}</option>`)
      .join("");
    return `<style>${STYLE}</style>
      <div class="title">GPT-2's tokenizer, token by token</div>
      <div class="controls">
        <label>Example <select name="preset">${options}<option value="own">Your own text</option></select><span></span></label>
      </div>
      <label class="text-label">Text <textarea name="text" spellcheck="false" aria-label="Text to tokenize"></textarea></label>
      <div class="chips" aria-label="Tokens, each with its id"></div>
      <table class="scroll" aria-label="Characters, UTF-8 bytes and tokens per line of the text">
        <thead><tr><th>line</th><th>chars</th><th>bytes</th><th>tokens</th><th>chars per token</th></tr></thead>
        <tbody class="lines"></tbody></table>
      <p class="summary"></p>`;
  }

  setup() {
    const own = this.getAttribute("text");
    const preset = own !== null ? "own" : (this.getAttribute("preset") ?? "prose");
    const select = this.field("preset");
    select.value = preset in PRESETS || preset === "own" ? preset : "prose";
    this.field("text").value = own ?? PRESETS[select.value][1];
    select.addEventListener("input", () => {
      if (select.value in PRESETS) this.field("text").value = PRESETS[select.value][1];
      this.update();
    });
    this.field("text").addEventListener("input", () => {
      select.value = "own";
      this.updateSoon(250);
    });
  }

  /** GPT-2's vocabulary and merges, from the directory of the site's default model. */
  async prepare() {
    const { defaultModelName } = await import("../runtime/model.js");
    const base = new URL(`${await defaultModelName()}/`, modelsURL);
    this.tokenizer = await GPT2Tokenizer.load(new URL("vocab.json", base), new URL("merges.txt", base));
  }

  request() {
    parseSelect(this.field("preset"), { label: "The example" });
    const text = this.field("text").value;
    if (text.length === 0) throw new InputError("Type some text to tokenize.", "text");
    if (text.length > MAX_CHARS)
      throw new InputError(`The text is ${text.length.toLocaleString("en")} characters long; use at most ${MAX_CHARS.toLocaleString("en")}.`, "text");
    return { text };
  }

  compute({ text }) {
    const tok = this.tokenizer;
    const ids = tok.encode(text);
    const utf8 = new TextEncoder();
    // Each line on its own (what it would cost as a prompt of its own); the chips show the whole text.
    const lines = text
      .split("\n")
      .map((line, i) => ({ line: i, text: line, chars: [...line].length, bytes: utf8.encode(line).length, tokens: tok.encode(line).length }));
    return { ids, pieces: ids.map((id) => tok.tokenToString(id)), special: tok.eosTokenId, lines };
  }

  draw({ ids, pieces, special, lines }, { text }) {
    this.dataset.ids = JSON.stringify(ids);
    this.$(".chips").innerHTML = ids
      .map((id, i) => {
        const cls = id === special ? "chip special" : pieces[i] === "\n" ? "chip newline" : "chip";
        return `<span class="${cls}" data-id="${id}"><span class="piece">${escapeHtml(visiblePiece(pieces[i]))}</span><span class="id">${id}</span></span>`;
      })
      .join("");
    this.$(".lines").innerHTML = lines
      .map(
        (l) =>
          `<tr data-line="${l.line}" data-chars="${l.chars}" data-bytes="${l.bytes}" data-tokens="${l.tokens}">` +
          `<td title="${escapeHtml(shortLine(l.text))}">${l.line + 1}</td><td>${l.chars}</td><td>${l.bytes}</td><td>${l.tokens}</td>` +
          `<td>${l.tokens ? (l.chars / l.tokens).toFixed(2) : "–"}</td></tr>`,
      )
      .join("");
    const words = text.split(/\s+/).filter(Boolean).length;
    this.$(".summary").textContent =
      `${[...text].length} characters, ${words} ${words === 1 ? "word" : "words"}, ${ids.length} ${ids.length === 1 ? "token" : "tokens"}` +
      (words ? ` (${(ids.length / words).toFixed(2)} per word).` : ".") +
      " Each chip is one token: ␣ marks a space, ⏎ a newline, <0xE7> a byte that is only part of a character." +
      " The table counts each line of the text: characters, UTF-8 bytes and tokens.";
  }
}

define("tx-tokenizer", TxTokenizer);
