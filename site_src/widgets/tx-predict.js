/**
 * <tx-predict>: a "predict, then check" exercise. The reader commits to a guess (a number,
 * or one of several choices) before seeing the answer; Check computes the answer with a
 * demos function in Python and says whether the guess was right, by how much, and why.
 *
 * Attributes (all optional):
 *   question   the question, as plain text
 *   module     the demos module to call, e.g. ffn
 *   function   the public function of that module, e.g. mlp_shapes
 *   kwargs     its keyword arguments, a JSON object, e.g. {"d_model": 768}
 *   answer     where the answer is in the result: a path of keys and list indexes
 *              separated by dots ("params.total", "weights.0.-1"; "length" counts a list);
 *              empty: the whole result
 *   choices    for a multiple-choice question: "value: label | value: label | …"; the
 *              right choice is the one whose value equals the computed answer (numbers
 *              within the tolerance, lists and text as written). Without it the reader
 *              types a number
 *   tolerance  how close a number must be to count as right: "5%" (relative, the default)
 *              or a plain number (absolute, e.g. 0.01)
 *   scale      divide the computed answer by this before comparing and showing it, e.g.
 *              1e6 to ask in millions (default 1)
 *   unit       what the number counts, shown after the field and the answer, e.g. MB
 *   explain    the one-line explanation shown once the reader has checked; {answer} in
 *              it is replaced by the computed answer
 *
 * Without a module attribute the widget asks its own question: how many parameters one
 * GPT-2 small MLP block has (demos.ffn.mlp_shapes). A typed number may use thousands separators (4,722,432) and a k, M or B suffix (4.7M).
 * State for tests and embedding pages: `data-verdict` ("right" or "wrong", after a check),
 * `data-answer` (the computed answer, after scale), `data-checks` (checks done).
 */
import { callDemo } from "../runtime/python.js";
import { formatAnswer, matches, parseChoices, parseTolerance, pick, readGuess, within } from "./guess.js";
import { InputError, parseNumber } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const NAME = /^[a-z_][a-z0-9_]*$/;
const DEFAULT = {
  question: "How many parameters (weights and biases) does one MLP block of GPT-2 small (d = 768, hidden width 4d) have?",
  module: "ffn",
  function: "mlp_shapes",
  kwargs: '{"d_model": 768}',
  answer: "params.total",
  explain: "{answer}: the expansion W_fc is 768 × 3,072 plus 3,072 biases, the projection 3,072 × 768 plus 768, about 8d² in all.",
};

const STYLE = `
  .question { font-weight: 600; margin: 0.2em 0 0.5em; }
  .row label { display: inline-flex; gap: 0.4em; align-items: center; flex-wrap: wrap; max-width: 100%; min-width: 0; }
  .row label select, .row label input { min-width: 0; max-width: 100%; }
  input.guess { width: 12em; }
  select.guess { flex: 1 1 auto; }
  button { font: inherit; padding: 0.25em 0.9em; border-radius: 4px; border: 1px solid var(--tx-border);
           background: var(--tx-accent); border-color: var(--tx-accent); color: #fff; cursor: pointer; }
  button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--tx-fg); outline-offset: 1px; }
  .result { margin-top: 0.6em; padding: 0.5em 0.7em; border-radius: 4px; border: 1px solid var(--tx-border); overflow-wrap: anywhere; }
  .result[hidden] { display: none; }
  .result.right { border-left: 4px solid #2e7d32; }
  .result.wrong { border-left: 4px solid #c62828; }
  .verdict { font-weight: 700; margin-right: 0.3em; }
  .explain { margin: 0.3em 0 0; }
  .hint { margin: 0.4em 0 0; font-size: 0.85em; color: var(--tx-muted); overflow-wrap: anywhere; }
`;

class TxPredict extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Predict, then check</div>
      <p class="question"></p>
      <div class="row">
        <label class="guess-label">Your guess <span class="field"></span><span class="unit"></span></label>
        <button type="button" name="check">Check</button>
      </div>
      <p class="hint"></p>
      <div class="result" aria-live="polite" hidden>
        <p><span class="verdict"></span><span class="message"></span></p>
        <p class="explain"></p>
      </div>`;
  }

  setup() {
    this.dataset.checks = "0";
    const attr = (name) => this.getAttribute(name) ?? (this.hasDefault() ? DEFAULT[name] : null);
    this.spec = {
      question: attr("question") ?? "",
      module: attr("module") ?? "",
      fn: attr("function") ?? "",
      answer: (attr("answer") ?? "").trim(),
      explain: attr("explain") ?? "",
      unit: (this.getAttribute("unit") ?? "").slice(0, 40),
    };
    this.$(".question").textContent = this.spec.question.slice(0, 1000) || "Predict the answer, then press Check.";
    this.$(".unit").textContent = this.spec.unit;
    const source = this.spec.module && this.spec.fn ? `demos.${this.spec.module}.${this.spec.fn}` : "the book's tested NumPy code";
    this.$(".hint").textContent = `Commit to a guess before you press Check: ${source} then computes the answer in your browser.`;
    const choices = this.getAttribute("choices");
    this.choices = choices === null ? null : parseChoices(choices);
    const field = this.$(".field");
    if (this.choices) {
      const select = document.createElement("select");
      select.name = "guess";
      select.className = "guess";
      select.add(new Option("— choose one —", ""));
      this.choices.forEach((c, i) => select.add(new Option(c.label, String(i))));
      field.replaceWith(select);
    } else {
      const input = document.createElement("input");
      input.name = "guess";
      input.className = "guess";
      input.type = "text";
      input.inputMode = "decimal";
      input.autocomplete = "off";
      input.placeholder = "a number";
      field.replaceWith(input);
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") this.check();
      });
    }
    this.field("guess").addEventListener("input", () => this.clearVerdict());
    this.$('button[name="check"]').addEventListener("click", () => this.check());
    // The attributes are checked now, so that a page's mistake shows before the reader guesses.
    if (!NAME.test(this.spec.module)) throw new InputError(`The module must be the name of a demos module (e.g. ffn), not “${this.spec.module.slice(0, 40)}”.`);
    if (!NAME.test(this.spec.fn) || this.spec.fn.startsWith("_")) {
      throw new InputError(`The function must be the name of a public demos function (e.g. mlp_shapes), not “${this.spec.fn.slice(0, 40)}”.`);
    }
    if (this.spec.answer && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(this.spec.answer)) {
      throw new InputError("The answer must be a path of keys and list indexes separated by dots, e.g. params.total.");
    }
    const kwargs = attr("kwargs") ?? "{}";
    try {
      this.kwargs = JSON.parse(kwargs);
    } catch {
      this.kwargs = null;
    }
    if (!this.kwargs || typeof this.kwargs !== "object" || Array.isArray(this.kwargs)) {
      throw new InputError(`The kwargs must be a JSON object, e.g. {"d_model": 768}, not “${kwargs.slice(0, 40)}”.`);
    }
    this.tolerance = parseTolerance(this.getAttribute("tolerance") ?? "5%");
    this.scale = parseNumber(this.getAttribute("scale") ?? "1", { label: "The scale", min: 0 });
    if (this.scale === 0) throw new InputError("The scale must be a number above 0, such as 1e6.");
  }

  /** The default question applies only to a bare widget (no module attribute). */
  hasDefault() {
    return !this.hasAttribute("module");
  }

  /** Nothing to compute before the reader guesses. */
  start() {
    this.showReady();
  }

  clearVerdict() {
    this.$(".result").hidden = true;
    delete this.dataset.verdict;
  }

  check() {
    this.dataset.checks = String(Number(this.dataset.checks) + 1);
    this.clearVerdict();
    return this.update();
  }

  request() {
    const field = this.field("guess");
    const raw = field.value;
    if (this.choices) {
      const index = this.choices.findIndex((_, i) => String(i) === raw);
      if (raw === "" || index < 0) throw new InputError("Choose an answer first: commit to a guess, then press Check.", "guess");
      return { choice: index };
    }
    if (!String(raw).trim()) throw new InputError("Type your guess first (a number): commit to it, then press Check.", "guess");
    const guess = readGuess(raw);
    if (!Number.isFinite(guess)) {
      throw new InputError("Your guess must be a number, such as 4722432, 4,722,432, 4.7M or 0.25.", "guess");
    }
    return { guess };
  }

  compute() {
    this.showProgress("Computing the answer…");
    return callDemo(this.spec.module, this.spec.fn, this.kwargs);
  }

  draw(result, request) {
    let answer = pick(result, this.spec.answer);
    if (typeof answer === "number" && this.scale !== 1) answer /= this.scale;
    this.dataset.answer = typeof answer === "string" ? answer : JSON.stringify(answer);
    const unit = this.spec.unit ? ` ${this.spec.unit}` : "";
    let right;
    let message;
    if (this.choices) {
      const correct = this.choices.findIndex((c) => matches(c.value, answer, this.tolerance));
      if (correct < 0) throw new Error(`This exercise is set up wrongly: the computed answer ${formatAnswer(answer).slice(0, 60)} is none of the choices.`);
      right = correct === request.choice;
      message = right
        ? `“${this.choices[correct].label}” is right.`
        : `The answer is “${this.choices[correct].label}”, not “${this.choices[request.choice].label}”.`;
    } else {
      if (typeof answer !== "number" || !Number.isFinite(answer)) {
        throw new Error(`This exercise is set up wrongly: its answer is ${formatAnswer(answer).slice(0, 60)}, not a number.`);
      }
      const guess = request.guess;
      right = within(guess, answer, this.tolerance);
      const off = Math.abs(guess - answer);
      const side = guess > answer ? "high" : "low";
      const ratio = answer !== 0 && guess / answer > 0 ? Math.max(guess / answer, answer / guess) : null;
      const percent = answer !== 0 ? ((100 * off) / Math.abs(answer)).toLocaleString("en", { maximumSignificantDigits: 2 }) : null;
      const by =
        off === 0
          ? "exactly right"
          : ratio !== null && ratio >= 2
            ? `${formatAnswer(ratio)} times too ${side}`
            : `${formatAnswer(off)}${unit} ${right ? "" : "too "}${side}${percent ? ` (${percent}% off)` : ""}`;
      const allowed =
        this.tolerance.relative !== undefined
          ? `within ${formatAnswer(100 * this.tolerance.relative)}%`
          : `within ${formatAnswer(this.tolerance.absolute)}${unit}`;
      message = `The answer is ${formatAnswer(answer)}${unit}; your guess ${formatAnswer(guess)}${unit} is ${by}${right && off ? `: close enough (${allowed} counts)` : ""}.`;
    }
    this.dataset.verdict = right ? "right" : "wrong";
    const box = this.$(".result");
    box.hidden = false;
    box.className = `result ${right ? "right" : "wrong"}`;
    this.$(".verdict").textContent = right ? "✓ Right." : "✗ Not quite.";
    this.$(".message").textContent = message;
    const explain = this.spec.explain.slice(0, 2000).replaceAll("{answer}", `${formatAnswer(answer)}${unit}`);
    this.$(".explain").textContent = explain;
    this.$(".explain").hidden = !explain;
    return "";
  }
}

define("tx-predict", TxPredict);
