/**
 * <tx-embeddings>: one-hot versus dense word vectors, and the analogy a − b + c.
 *
 * Attributes (all optional):
 *   words     comma-separated words ticked at the start, default "king,queen,man,woman,apple"
 *   analogy   three comma-separated words a,b,c, default "king,man,woman"
 *
 * Computed by `demos.embeddings.compare_representations` and `demos.embeddings.analogy`.
 * Every matrix cell carries its cosine in `data-value` (with `data-kind`, `data-row`,
 * `data-col`); every candidate of the analogy carries `data-word` and `data-cosine`.
 * `data-request` on the element holds the arguments of the last call.
 */
import { callDemo } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { divergingColour } from "./format.js";
import { InputError, parseSelect } from "./inputs.js";
import { FIGURE_CSS, TxLab } from "./lab.js";
import { define } from "./widget.js";

const STYLE = `
  .words { display: flex; flex-wrap: wrap; gap: 0.2em 0.9em; margin-bottom: 0.6em; border: 0; padding: 0; }
  .words legend { font-weight: 600; margin-bottom: 0.2em; }
  .maps { display: grid; grid-template-columns: repeat(auto-fit, minmax(15em, 1fr)); gap: 1em; }
${FIGURE_CSS}
  svg text { font-size: 9px; }
  svg text.axis { fill: var(--tx-muted); }
  .analogy { margin-top: 0.8em; display: flex; flex-wrap: wrap; gap: 0.4em; align-items: center; }
  table { border-collapse: collapse; margin-top: 0.4em; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 0.1em 0.6em; border-bottom: 1px solid var(--tx-border); }
  tr.best td { font-weight: 700; }
`;

/** An SVG matrix of cosines with the words on both axes and the value printed in each cell. */
function matrixSvg(words, matrix, kind) {
  const n = words.length;
  const cell = 34;
  const left = 52;
  const top = 44;
  const size = left + n * cell + 2;
  const cells = matrix
    .map((row, i) =>
      row
        .map(
          (v, j) => `
    <g><rect x="${left + j * cell}" y="${top + i * cell}" width="${cell}" height="${cell}" fill="${divergingColour(v)}"
      stroke="var(--tx-border)" data-kind="${kind}" data-row="${i}" data-col="${j}" data-value="${v}">
      <title>cos(${words[i]}, ${words[j]}) = ${v.toFixed(4)}</title></rect>
    <text x="${left + j * cell + cell / 2}" y="${top + i * cell + cell / 2 + 3}" text-anchor="middle"
      style="fill:${Math.abs(v) > 0.6 ? "#fff" : "#222"}">${v.toFixed(2)}</text></g>`,
        )
        .join(""),
    )
    .join("");
  const labels = words
    .map(
      (w, i) => `
    <text class="axis" x="${left - 4}" y="${top + i * cell + cell / 2 + 3}" text-anchor="end">${escapeHtml(w)}</text>
    <text class="axis" transform="translate(${left + i * cell + cell / 2 + 3} ${top - 4}) rotate(-60)">${escapeHtml(w)}</text>`,
    )
    .join("");
  return `<svg viewBox="0 0 ${size} ${top + n * cell + 2}" role="img"
    aria-label="Cosine similarity between the chosen words as ${kind === "one_hot" ? "one-hot" : "dense"} vectors">${labels}${cells}</svg>`;
}

class TxEmbeddings extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">One-hot versus dense word vectors</div>
      <fieldset class="words"><legend>Words to compare</legend></fieldset>
      <div class="maps">
        <figure><figcaption>One-hot: 12-dimensional, one 1 per word</figcaption><div class="map" data-kind="one_hot"></div></figure>
        <figure><figcaption>Dense: 5 named dimensions (royalty, gender, age, food, person)</figcaption><div class="map" data-kind="dense"></div></figure>
      </div>
      <div class="analogy">
        <strong>Analogy</strong>
        <select name="a" aria-label="a"></select> − <select name="b" aria-label="b"></select> +
        <select name="c" aria-label="c"></select> ≈ <output class="best"></output>
      </div>
      <table aria-label="Nearest words to a − b + c, excluding a, b and c"><thead>
        <tr><th>nearest words to a − b + c</th><th>cosine</th></tr></thead><tbody class="ranking"></tbody></table>`;
  }

  /** The vocabulary: one checkbox per word, and the analogy's selects. */
  async prepare() {
    const { words } = await callDemo("embeddings", "vocabulary");
    const ticked = (this.getAttribute("words") ?? "king,queen,man,woman,apple").split(",").map((w) => w.trim());
    const [a, b, c] = (this.getAttribute("analogy") ?? "king,man,woman").split(",").map((w) => w.trim());
    this.$(".words").insertAdjacentHTML(
      "beforeend",
      words
        .map(
          (w) => `
      <label><input type="checkbox" name="word" value="${escapeHtml(w)}"${ticked.includes(w) ? " checked" : ""}> ${escapeHtml(w)}</label>`,
        )
        .join(""),
    );
    for (const [name, value] of [
      ["a", a],
      ["b", b],
      ["c", c],
    ]) {
      const select = this.$(`select[name="${name}"]`);
      select.innerHTML = words.map((w) => `<option>${escapeHtml(w)}</option>`).join("");
      select.value = value ?? ""; // a word the vocabulary lacks leaves it empty: request() says so
    }
    for (const el of this.shadowRoot.querySelectorAll("input, select")) el.addEventListener("change", () => this.update());
  }

  request() {
    const words = [...this.shadowRoot.querySelectorAll('input[name="word"]:checked')].map((el) => el.value);
    const value = (name) => parseSelect(this.$(`select[name="${name}"]`), { label: `The word ${name} of the analogy` });
    const request = { words, a: value("a"), b: value("b"), c: value("c") };
    if (words.length === 0) throw new InputError("Tick at least one word to compare.", "word");
    return request;
  }

  compute(request) {
    return Promise.all([
      callDemo("embeddings", "compare_representations", { words: request.words }),
      callDemo("embeddings", "analogy", { a: request.a, b: request.b, c: request.c, top: 5 }),
    ]);
  }

  draw([reps, analogy]) {
    for (const kind of ["one_hot", "dense"]) {
      this.$(`.map[data-kind="${kind}"]`).innerHTML = matrixSvg(reps.words, reps[kind].matrix, kind);
    }
    this.$(".best").textContent = analogy.best;
    this.$(".best").dataset.word = analogy.best;
    this.$(".ranking").innerHTML = analogy.ranking
      .map(
        (r, i) => `
      <tr class="${i === 0 ? "best" : ""}" data-word="${escapeHtml(r.word)}" data-cosine="${r.cosine}">
        <td>${escapeHtml(r.word)}</td><td>${r.cosine.toFixed(4)}</td></tr>`,
      )
      .join("");
  }
}

define("tx-embeddings", TxEmbeddings);
