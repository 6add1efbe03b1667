/**
 * <tx-exercise>: a "change the code" exercise. The reader completes or changes one NumPy
 * function; Run and check runs it in Python against the reference on several inputs and
 * shows, for each input, whether it passed and what was wrong.
 *
 * Attributes (all optional):
 *   exercise    id of the exercise (default: the first of the catalogue), e.g. causal_weights
 *   time-limit  seconds a check may run before it is stopped, 0.5 to 60, default 5
 *
 * The catalogue and the check are `demos.exercises.list_exercises` / `check` / `solution`,
 * run in the Pyodide worker with the sandbox of the spot-the-bug lab: the reader's code gets a
 * time limit and a Stop button, so an endless loop costs a few seconds, never the tab.
 *
 * State for tests and embedding pages: `data-exercise` (its id), `data-result` ("running",
 * "passed", "failed", "error", "stopped", "ended": its code ended Python), `data-cases` (passed/total after a check),
 * `data-checks` (finished checks) and `data-stopped-after` (seconds).
 */
import { callDemo, StoppedError } from "../runtime/python.js";
import { InputError, parseNumber } from "./inputs.js";
import { CODE_BOX_CSS, CODE_HELP, RESULT_LINE, codeBoxHTML, codeBoxKeys, showPythonEnded, showResultPanel } from "./code-box.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const LIMIT_RANGE = { label: "The time limit", min: 0.5, max: 60, unit: "seconds" };

const STYLE = `${CODE_BOX_CSS}
  .task { margin: 0.2em 0 0.5em; }
  .code-label { display: block; }
  .code { display: block; box-sizing: border-box; width: 100%; min-height: 10em; margin-top: 0.2em; }
  ol.cases { margin: 0.3em 0; padding-left: 1.6em; }
  ol.cases li.pass::marker { color: #2e7d32; }
  ol.cases li.fail::marker { color: #c62828; }
  .case-verdict { font-weight: 600; }
`;

class TxExercise extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Change the code <span class="badge"></span></div>
      <p class="task">Loading the exercise…</p>
      <p>Complete <code class="signature"></code>, then press <b>Run and check</b>: it runs in your browser and is compared with a reference on several random inputs. ${CODE_HELP}</p>
      ${codeBoxHTML({
        rows: 10,
        check: "Run and check",
        buttons: [
          ["reset", "Reset the code"],
          ["solution", "Show a solution"],
        ],
      })}
      <div class="result" aria-live="polite" hidden>
        ${RESULT_LINE}
        <ol class="cases" aria-label="Result per input"></ol>
        <pre class="output" hidden aria-label="What your code printed"></pre>
        <pre class="reference" hidden aria-label="A solution"></pre>
      </div>`;
  }

  setup() {
    this.dataset.checks = "0";
    this.notices = [];
    this.limit = 5;
    const limit = this.getAttribute("time-limit");
    if (limit !== null) {
      try {
        this.limit = parseNumber(limit, LIMIT_RANGE);
      } catch (err) {
        this.notices.push(`${err.message} (time-limit="${limit.slice(0, 20)}"; using 5 s)`);
      }
    }
    this.$('button[name="check"]').addEventListener("click", () => this.check());
    this.$('button[name="stop"]').addEventListener("click", () => this.stopper?.abort());
    this.$('button[name="reset"]').addEventListener("click", () => {
      this.$(".code").value = this.exercise.code;
      this.$(".result").hidden = true;
      delete this.dataset.result;
    });
    this.$('button[name="solution"]').addEventListener("click", () => this.showSolution());
    this.$(".code").addEventListener("keydown", codeBoxKeys({ check: () => this.check(), busy: () => this.$('button[name="check"]').disabled }));
  }

  unmount() {
    this.stopper?.abort();
  }

  /** The catalogue, then the exercise the attribute names (checks run on demand). */
  async start() {
    let catalogue;
    try {
      catalogue = await callDemo("exercises", "list_exercises");
    } catch (err) {
      this.showError(err, { retry: () => this.start() });
      return;
    }
    const wanted = this.getAttribute("exercise");
    let exercise = catalogue.find((e) => e.id === wanted);
    if (wanted !== null && !exercise) {
      this.notices.push(
        `There is no exercise “${wanted.slice(0, 40)}” (the exercise attribute): showing the first one. The ids are ${catalogue.map((e) => e.id).join(", ")}.`,
      );
    }
    exercise ??= catalogue[0];
    this.exercise = exercise;
    this.dataset.exercise = exercise.id;
    this.$(".badge").textContent = exercise.title;
    this.$(".task").textContent = exercise.task;
    this.$(".signature").textContent = exercise.signature;
    this.$(".hint-text").textContent = exercise.hint;
    this.$(".code").value = exercise.code;
    this.setBusy(false);
    if (this.notices.length) this.showError(this.notices.join(" "));
    else this.showReady();
  }

  setBusy(busy) {
    this.$('button[name="check"]').disabled = busy;
    this.$('button[name="stop"]').disabled = !busy;
    this.$('button[name="reset"]').disabled = busy;
    this.$('button[name="solution"]').disabled = busy;
  }

  async check() {
    const code = this.$(".code").value;
    if (!code.trim()) {
      this.showError(new InputError(`The code is empty: write ${this.exercise.signature}, or press Reset the code.`));
      return;
    }
    this.stopper = new AbortController();
    this.setBusy(true);
    this.dataset.result = "running";
    delete this.dataset.stoppedAfter;
    this.showProgress(`Running your code (time limit ${this.limit} s)…`);
    try {
      const result = await callDemo(
        "exercises",
        "check",
        { exercise_id: this.exercise.id, code },
        { timeoutMs: this.limit * 1000, signal: this.stopper.signal },
      );
      this.showResult(result);
      this.showReady();
    } catch (err) {
      if (err instanceof StoppedError) {
        this.dataset.result = "stopped";
        this.dataset.stoppedAfter = String(err.seconds);
        this.panel("stopped", "■ Stopped.", `${err.message} Is there a loop that never ends? Edit the code and check again.`);
        this.showReady();
      } else if (showPythonEnded(this, err)) {
        this.showReady();
      } else {
        this.dataset.result = "error";
        this.showError(err, { retry: () => this.check() });
      }
    } finally {
      this.stopper = null;
      this.setBusy(false);
      this.dataset.checks = String(Number(this.dataset.checks) + 1);
    }
  }

  panel(kind, verdict, message) {
    const box = showResultPanel(this, kind, verdict, message);
    this.$(".cases").replaceChildren();
    this.$(".reference").hidden = true;
    return box;
  }

  showResult(result) {
    const kind = result.passed ? "passed" : result.error ? "error" : "failed";
    this.dataset.result = kind;
    this.dataset.cases = `${result.cases_passed}/${result.num_cases}`;
    this.panel(
      kind,
      result.passed ? "✓ Passed." : result.error ? "✗ Error." : "✗ Not yet.",
      result.passed ? result.message.replace(/^Passed: /, "") : result.message,
    );
    this.$(".cases").replaceChildren(
      ...result.cases.map((c) => {
        const li = document.createElement("li");
        li.className = c.passed ? "pass" : "fail";
        li.dataset.passed = String(c.passed);
        const verdict = document.createElement("span");
        verdict.className = "case-verdict";
        verdict.textContent = c.passed ? "✓ passed" : "✗ failed";
        li.append(verdict, ` (${c.inputs}): ${c.message.replace(/\.$/, "")}.`);
        return li;
      }),
    );
    const output = this.$(".output");
    output.hidden = !result.output;
    output.textContent = result.output;
    if (result.reference) this.showReference(result.reference);
  }

  showReference(code) {
    const pre = this.$(".reference");
    pre.hidden = false;
    pre.textContent = `A reference solution:\n\n${code}`;
  }

  async showSolution() {
    try {
      const { reference } = await callDemo("exercises", "solution", { exercise_id: this.exercise.id });
      if (this.$(".result").hidden) this.panel("revealed", "Solution:", "one way to write it (try it in the editor).");
      this.showReference(reference);
      this.dataset.revealed = this.exercise.id;
    } catch (err) {
      this.showError(err, { retry: () => this.showSolution() });
    }
  }
}

define("tx-exercise", TxExercise);
