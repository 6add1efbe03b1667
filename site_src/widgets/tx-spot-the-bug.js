/**
 * <tx-spot-the-bug>: short NumPy snippets with one real Transformer bug each. Edit the
 * code, Check it against the reference, or Reveal the diagnosis.
 *
 * Attributes (all optional):
 *   bug         id of the first snippet shown (default: the first of the catalogue)
 *   time-limit  seconds a check may run before it is stopped, 0.5 to 60, default 5
 *
 * The catalogue and the check are `demos.bugs.list_bugs` / `check` / `reveal`, run in the
 * Pyodide worker. The reader's code gets a time limit and a Stop button: the runtime
 * interrupts Python (or restarts the worker where the page is not cross-origin isolated),
 * so an endless loop costs a few seconds, never the tab.
 *
 * State for tests and embedding pages: `data-bug` (snippet id), `data-result`
 * ("running", "passed", "failed", "error", "stopped", "ended"), `data-checks` (finished checks),
 * `data-max-abs-error`, `data-stopped-after` (seconds), `data-time-limit` (the chosen limit,
 * seconds) and `data-interrupt` ("interrupt" or "restart": how a running check is stopped
 * on this page).
 */
import { callDemo, interruptMode, StoppedError } from "../runtime/python.js";
import { escapeHtml } from "./base.js";
import { parseChoice, parseNumber, parseSelect } from "./inputs.js";
import { CODE_BOX_CSS, CODE_HELP, RESULT_LINE, codeBoxHTML, codeBoxKeys, showPythonEnded, showResultPanel } from "./code-box.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

const LIMITS = [1, 2, 5, 10, 30];
const LIMIT_RANGE = { label: "The time limit", min: 0.5, max: 60, unit: "seconds" };

const STYLE = `${CODE_BOX_CSS}
  .row label { display: inline-flex; gap: 0.4em; align-items: center; max-width: 100%; min-width: 0; }
  .row label select { min-width: 0; flex: 1 1 auto; }
  .code { min-height: 14em; }
  .answer h4 { margin: 0.6em 0 0.2em; font-size: 1em; }
`;

class TxSpotTheBug extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Spot the bug <span class="badge"></span></div>
      <div class="row">
        <label>Snippet <select name="bug" disabled><option>loading…</option></select></label>
        <label>Time limit <select name="limit">${LIMITS.map((s) => `<option value="${s}">${s} s</option>`).join("")}</select></label>
      </div>
      <p>Make <code class="signature"></code> correct, then press <b>Check</b>. ${CODE_HELP}</p>
      ${codeBoxHTML({
        rows: 16,
        check: "Check",
        buttons: [
          ["reveal", "Reveal the answer"],
          ["reset", "Reset the code"],
        ],
      })}
      <div class="result" aria-live="polite" hidden>
        ${RESULT_LINE}
        <pre class="output" hidden aria-label="What your code printed"></pre>
        <div class="answer" hidden>
          <h4>Diagnosis</h4><p class="diagnosis"></p>
          <h4>Corrected code</h4><pre class="reference"></pre>
          <button name="use">Put the corrected code in the editor</button>
        </div>
      </div>`;
  }

  setup() {
    this.dataset.interrupt = interruptMode();
    this.dataset.checks = "0";
    this.edits = new Map(); // bug id -> the reader's code, kept while switching snippets
    this.attributeErrors = []; // shown once the catalogue is in
    let limit = 5;
    try {
      limit = parseNumber(this.getAttribute("time-limit") ?? "5", LIMIT_RANGE);
    } catch (err) {
      this.attributeErrors.push(`${err.message} (time-limit="${this.getAttribute("time-limit").slice(0, 20)}"; using 5 s)`);
    }
    const select = this.$('select[name="limit"]');
    if (!LIMITS.includes(limit)) select.insertAdjacentHTML("afterbegin", `<option value="${limit}">${limit} s</option>`);
    select.value = String(limit);
    this.dataset.timeLimit = select.value;
    select.addEventListener("change", () => {
      this.dataset.timeLimit = select.value;
    });
    this.$('select[name="bug"]').addEventListener("change", (e) => this.showBug(e.target.value));
    this.$('button[name="check"]').addEventListener("click", () => this.check());
    this.$('button[name="stop"]').addEventListener("click", () => this.stopper?.abort());
    this.$('button[name="reveal"]').addEventListener("click", () => this.reveal());
    this.$('button[name="reset"]').addEventListener("click", () => this.resetCode());
    this.$('button[name="use"]').addEventListener("click", () => {
      this.setCode(this.$(".reference").textContent);
      this.$(".code").focus();
    });
    const code = this.$(".code");
    const busy = () => this.$('button[name="check"]').disabled; // a check is running
    code.addEventListener("keydown", codeBoxKeys({ check: () => this.check(), busy, edited: (value) => this.edits.set(this.bug.id, value) }));
    code.addEventListener("input", () => this.edits.set(this.bug.id, code.value));
  }

  unmount() {
    this.stopper?.abort();
  }

  /** The catalogue of snippets, then the one the bug attribute names (no update loop: checks run on demand). */
  async start() {
    try {
      this.catalogue = await callDemo("bugs", "list_bugs");
    } catch (err) {
      this.showError(err, { retry: () => this.start() });
      return;
    }
    const select = this.$('select[name="bug"]');
    select.innerHTML = this.catalogue.map((b, i) => `<option value="${b.id}">${i + 1}. ${escapeHtml(b.title)}</option>`).join("");
    select.disabled = false;
    const wanted = this.getAttribute("bug");
    const known = this.catalogue.some((b) => b.id === wanted);
    if (wanted !== null && !known) {
      this.attributeErrors.push(
        `There is no snippet “${wanted.slice(0, 40)}” (the bug attribute): showing the first one.` +
          ` The ids are ${this.catalogue.map((b) => b.id).join(", ")}.`,
      );
    }
    this.showBug(known ? wanted : this.catalogue[0].id);
    if (this.attributeErrors.length) this.showError(this.attributeErrors.join(" "));
    else this.showReady();
  }

  showBug(id) {
    try {
      parseChoice(
        id,
        this.catalogue.map((b, i) => [b.id, `${i + 1}. ${b.title}`]),
        { label: "The snippet" },
      );
    } catch (err) {
      if (this.bug) this.$('select[name="bug"]').value = this.bug.id; // keep showing the one on screen
      this.showError(err);
      return;
    }
    if (this.dataset.state === "error") this.showReady();
    this.stopper?.abort();
    this.bug = this.catalogue.find((b) => b.id === id);
    this.dataset.bug = id;
    this.$('select[name="bug"]').value = id;
    this.$(".signature").textContent = this.bug.signature;
    this.$(".hint-text").textContent = this.bug.hint;
    this.$("details.hint").open = false;
    this.$(".code").value = this.edits.get(id) ?? this.bug.code;
    this.$(".result").hidden = true;
    delete this.dataset.result;
    this.setBusy(false);
  }

  setCode(text) {
    this.$(".code").value = text;
    this.edits.set(this.bug.id, text);
  }

  resetCode() {
    this.setCode(this.bug.code);
    this.$(".result").hidden = true;
    delete this.dataset.result;
  }

  setBusy(busy) {
    this.$('button[name="check"]').disabled = busy;
    this.$('button[name="stop"]').disabled = !busy;
    this.$('button[name="reveal"]').disabled = busy;
    this.$('button[name="reset"]').disabled = busy;
    this.$('select[name="bug"]').disabled = busy;
  }

  async check() {
    let limit;
    try {
      limit = parseNumber(parseSelect(this.$('select[name="limit"]'), { label: "The time limit" }), LIMIT_RANGE);
    } catch (err) {
      this.showError(err);
      return;
    }
    const request = { bug_id: this.bug.id, code: this.$(".code").value };
    this.stopper = new AbortController();
    this.setBusy(true);
    this.dataset.result = "running";
    delete this.dataset.stoppedAfter;
    this.showProgress(`Checking (time limit ${limit} s)…`);
    try {
      const result = await callDemo("bugs", "check", request, { timeoutMs: limit * 1000, signal: this.stopper.signal });
      this.showResult(result);
      this.showReady();
    } catch (err) {
      if (err instanceof StoppedError) {
        this.showStopped(err);
        this.showReady();
      } else if (showPythonEnded(this, err)) {
        this.showReady();
      } else {
        this.showError(err, { retry: () => this.check() });
        this.dataset.result = "error";
      }
    } finally {
      this.stopper = null;
      this.setBusy(false);
      this.dataset.checks = String(Number(this.dataset.checks) + 1);
    }
  }

  showResult(result) {
    const kind = result.passed ? "passed" : result.error ? "error" : "failed";
    this.dataset.result = kind;
    if (result.max_abs_error === null) delete this.dataset.maxAbsError;
    else this.dataset.maxAbsError = String(result.max_abs_error);
    const box = this.panel(
      kind,
      result.passed ? "✓ Passed." : result.error ? "✗ Error." : "✗ Not yet.",
      result.passed ? result.message.replace(/^Passed: /, "") : result.message,
    );
    const output = this.$(".output");
    output.hidden = !result.output;
    output.textContent = result.output;
    if (result.diagnosis) this.showAnswer(result.diagnosis, result.reference);
    box.dataset.cases = `${result.cases_passed}/${result.num_cases}`;
  }

  showStopped(err) {
    this.dataset.result = "stopped";
    this.dataset.stoppedAfter = String(err.seconds);
    const how =
      this.dataset.interrupt === "interrupt"
        ? "Python was interrupted"
        : "Python was restarted (this page cannot interrupt it), so the next check takes a few seconds longer";
    this.panel("stopped", "■ Stopped.", `${err.message} ${how}. Is there a loop that never ends? Edit the code and check again.`);
  }

  panel(kind, verdict, message) {
    const box = showResultPanel(this, kind, verdict, message);
    this.$(".answer").hidden = true;
    return box;
  }

  showAnswer(diagnosis, reference) {
    this.$(".answer").hidden = false;
    this.$(".diagnosis").textContent = diagnosis;
    this.$(".reference").textContent = reference;
  }

  async reveal() {
    try {
      const answer = await callDemo("bugs", "reveal", { bug_id: this.bug.id });
      if (this.$(".result").hidden) this.panel("revealed", "Answer:", this.bug.title);
      this.showAnswer(answer.diagnosis, answer.reference);
      this.dataset.revealed = this.bug.id;
    } catch (err) {
      this.showError(err, { retry: () => this.reveal() });
    }
  }
}

define("tx-spot-the-bug", TxSpotTheBug);
