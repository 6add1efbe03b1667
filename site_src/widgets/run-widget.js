/**
 * A widget whose reader starts each run of the model with its Go button and may end it with
 * Stop or Esc: a generation, a beam search, a guided generation. It adds to `Widget`
 * (widget.js) what these share, so that they behave alike:
 *
 * - the template has `.go` and `.stop` buttons and a `<select name="backend">`; `start()` loads
 *   the model for that backend (Go waits for it; a failed load offers Retry), a new backend
 *   loads again;
 * - `fieldValues(readers)` reads the settings, marks each field valid or not (`aria-invalid`)
 *   and throws the first `InputError`, which disables Go until a field is fixed;
 *   `settingsChanged()` shows that error, or `describe(options)`'s plan and Go enabled again;
 * - `whileRunning(fn)` runs one run with Go disabled, Stop enabled and the backend fixed, and
 *   counts it in `data-runs` (`data-running` is "true" meanwhile); `this.run` is the streamed
 *   run, which Stop, Esc and leaving the page end.
 *
 * A subclass writes `template()`, `setup()` (which calls `wireRuns`), `options()` (the run's
 * options, through `fieldValues`), `request()`, `compute()` (through `whileRunning`), `draw()`,
 * and may write `describe(options)`, `prepare(model)` (e.g. limits from the model's config) and
 * `modelNeeds()` (what the variant must have).
 * @module widgets/run-widget
 */
import { InputError } from "./inputs.js";
import { Widget } from "./widget.js";

export class RunWidget extends Widget {
  /**
   * Wire the buttons, Ctrl+Enter in the prompt, Esc, the backend select and the settings fields.
   * @param {{settings: string[], readyLine: string}} spec the names of the fields whose edits are
   *   checked at once; the ready line (e.g. "Ready: press Generate.")
   */
  wireRuns({ settings, readyLine }) {
    this.readyLine = readyLine;
    this.dataset.runs = "0";
    this.dataset.running = "false";
    this.$(".go").addEventListener("click", () => this.go());
    this.$(".stop").addEventListener("click", () => this.run?.stop());
    this.field("backend").addEventListener("change", () => this.load());
    this.field("prompt")?.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.go();
      }
    });
    this.host.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.run) this.run.stop();
    });
    for (const name of settings) {
      const field = this.field(name);
      field.addEventListener(field.tagName === "SELECT" ? "change" : "input", () => this.settingsChanged());
    }
  }

  /** Load the model; the reader starts each run. */
  start() {
    this.load();
  }

  unmount() {
    this.run?.stop();
  }

  /**
   * Load (or reuse) the model for the chosen backend, with Go disabled meanwhile; then
   * `prepare(model)` and the settings' check, Go enabled and the ready line. A failed load is
   * shown with Retry, which loads again.
   */
  async load() {
    this.generation++; // a load for another backend still on its way is dropped
    const stale = this.staleCheck();
    const go = this.$(".go");
    go.disabled = true;
    try {
      const model = await this.useModel({ backend: this.field("backend").value, needs: this.modelNeeds() });
      if (!model || this.dataset.running === "true") return;
      this.prepare(model);
      this.describe(this.options());
      go.disabled = false;
      const where = model.info.backendNote ? `${model.info.backendNote} ` : "";
      this.showReady(`${where}${this.readyLine}`);
    } catch (err) {
      if (stale()) return;
      if (err instanceof InputError) return this.showError(err);
      this.model = null;
      this.showError(err, { retry: () => this.load() });
    }
  }

  /** What the widget needs of the model's variant (variants.js `needs`); nothing by default. */
  modelNeeds() {
    return [];
  }

  /** What the loaded model changes in the fields (e.g. their limits); nothing by default. */
  prepare() {}

  /** The plan of a run, shown as the settings change; nothing by default. */
  describe() {}

  /** The Go button (and Ctrl+Enter in the prompt): a run, unless one is running. */
  go() {
    if (this.dataset.running !== "true") this.update();
  }

  /** After a fault: run again when the model is there, else load it. */
  rerun() {
    return this.model ? this.update() : this.load();
  }

  modelLost() {
    this.$(".go").disabled = true;
  }

  /**
   * Read the settings: each reader returns its field's value or throws an `InputError`.
   * @param {Object<string, () => unknown>} readers by field name
   * @returns {Object<string, unknown>} the values by field name
   * @throws {InputError} the first field's error (Go is then disabled), every bad field marked
   */
  fieldValues(readers) {
    const values = {};
    let problem = null;
    for (const [name, read] of Object.entries(readers)) {
      try {
        values[name] = read();
        this.field(name).setAttribute("aria-invalid", "false");
      } catch (err) {
        this.field(name).setAttribute("aria-invalid", "true");
        problem ??= err;
      }
    }
    if (problem) {
      this.$(".go").disabled = true;
      throw problem;
    }
    return values;
  }

  /** A setting was edited: say what is wrong with it, or show the plan and let Go run again. */
  settingsChanged() {
    try {
      this.describe(this.options());
    } catch (err) {
      if (this.dataset.state !== "loading") this.showError(err);
      return;
    }
    if (!this.model || this.dataset.running === "true") return;
    if (this.dataset.state === "error") this.showReady(this.readyLine);
    this.$(".go").disabled = false;
  }

  /**
   * One run: Go disabled, Stop enabled and the backend fixed while `fn` runs; counted in
   * `data-runs` at the end, whatever happened. A failure sets `data-reason` "error".
   * @template T
   * @param {() => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async whileRunning(fn) {
    this.dataset.running = "true";
    this.$(".go").disabled = true;
    this.$(".stop").disabled = false;
    this.field("backend").disabled = true;
    try {
      return await fn();
    } catch (err) {
      this.dataset.reason = "error";
      throw err;
    } finally {
      this.run = null;
      this.dataset.running = "false";
      this.dataset.runs = String(Number(this.dataset.runs) + 1);
      this.$(".stop").disabled = true;
      this.field("backend").disabled = false;
      this.$(".go").disabled = !this.model;
    }
  }
}
