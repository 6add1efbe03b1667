/**
 * <tx-train>: train a small Transformer in your browser and watch it learn: the loss on the
 * training batches and on held-out data, step by step, from `demos.training` in the page's
 * Python worker (NumPy, forward and backward pass written out, AdamW).
 *
 * Task "induction": random tokens with a stretch written twice; an attention-only model of two
 * layers, whose second-copy loss drops suddenly when an induction head forms (the table shows
 * each head's induction score at the last evaluation). Task "text": a character-level model of
 * a few paragraphs of this book, with a sample of what it writes at each evaluation.
 *
 * Attributes (all optional):
 *   task     "induction" (default) or "text"
 *   seed     seeds the weights and the data, default 0
 *   lr       peak learning rate, default the task's
 *   warmup   warm-up steps, default the task's
 *   steps    steps of the schedule, default the task's
 *   layers   blocks, default 2
 *   width    width of the residual stream, default 32
 *
 * The element exposes `data-state`, `data-settings` (JSON: the fields as typed), `data-running`
 * ("true", "paused" or "false"), `data-step`,
 * `data-losses` (JSON: the training loss of every step), `data-evals` (JSON: each held-out
 * evaluation {step, eval_loss, eval_first?, eval_second?, scores?}), `data-phase` (the step at
 * which the second copy's held-out loss first fell below half its start, or "") and
 * `data-steps-per-second`.
 */
import { callDemo } from "../runtime/python.js";
import { attributeValues, escapeHtml } from "./base.js";
import { parseInteger, parseNumber, parseSelect } from "./inputs.js";
import { TxLab } from "./lab.js";
import { define } from "./widget.js";

/** How long one call into Python should take, ms: short enough for Pause to answer at once. */
const CHUNK_MS = 250;
const EVAL_EVERY = 20;
/** The fields that hold a task's settings, and the key of each in `demos.training.defaults`. */
const SETTINGS = { lr: "lr", warmup: "warmup", steps: "steps", layers: "n_layer", width: "n_embd" };

const STYLE = `
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(10em, 1fr)); gap: 0.4em 1em; margin: 0.4em 0; }
  .grid label { display: grid; grid-template-columns: 6.5em 1fr; align-items: center; gap: 0.4em; }
  .grid input, .grid select { font: inherit; width: 100%; box-sizing: border-box; min-width: 0; }
  .grid label.task { grid-column: 1 / -1; grid-template-columns: 6.5em auto; justify-content: start; }
  .grid label.task select { width: auto; max-width: 100%; }
  .buttons button { font: inherit; padding: 0.25em 0.9em; }
  .rate { color: var(--tx-muted); font-variant-numeric: tabular-nums; }
  svg { width: 100%; max-width: 40em; height: auto; display: block; }
  svg text { font-size: 10px; fill: var(--tx-muted); }
  svg .axis { stroke: var(--tx-border); }
  svg .train { stroke: var(--tx-muted); fill: none; stroke-width: 1; opacity: 0.6; }
  svg .held-out { stroke: var(--tx-accent); fill: none; stroke-width: 2; }
  svg .second { stroke: #e65100; fill: none; stroke-width: 2; }
  svg .first { stroke: #e65100; fill: none; stroke-width: 1.5; stroke-dasharray: 4 3; }
  svg .phase { stroke: #e65100; stroke-dasharray: 2 2; }
  .legend { display: flex; flex-wrap: wrap; gap: 0.2em 1em; color: var(--tx-muted); font-size: 0.9em; }
  .legend span::before { content: ""; display: inline-block; width: 1.4em; height: 0; margin-right: 0.3em; vertical-align: middle; border-top: 2px solid; }
  .legend .train::before { border-color: var(--tx-muted); }
  .legend .held-out::before { border-color: var(--tx-accent); }
  .legend .second::before { border-color: #e65100; }
  .legend .first::before { border-top-style: dashed; border-color: #e65100; }
  table.scores { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.4em 0; }
  table.scores th, table.scores td { padding: 0.1em 0.6em; border-bottom: 1px solid var(--tx-border); text-align: right; }
  table.scores td.top { font-weight: 700; }
  .sample { white-space: pre-wrap; word-break: break-word; font-family: var(--md-code-font-family, monospace); font-size: 0.9em;
            padding: 0.4em 0.6em; border: 1px solid var(--tx-border); border-radius: 4px; min-height: 2.5em; }
  .sample .prompt { color: var(--tx-muted); }
`;

/** The line chart of the run so far: training loss, held-out loss (and the copies' losses). */
function lossChart({ losses, evals, maxSteps, phase }) {
  const [W, H, L, R, T, B] = [420, 200, 34, 8, 8, 26];
  const top = Math.max(...losses.slice(0, 5), ...evals.map((e) => e.eval_loss), 1) * 1.05;
  const x = (step) => L + (step / maxSteps) * (W - L - R);
  const y = (v) => T + (1 - Math.min(v, top) / top) * (H - T - B);
  const line = (cls, points) =>
    points.length ? `<polyline class="${cls}" points="${points.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}"></polyline>` : "";
  const ticks = [0, top / 2, top]
    .map(
      (v) =>
        `<line class="axis" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"></line><text x="${L - 4}" y="${y(v) + 3}" text-anchor="end">${v.toFixed(1)}</text>`,
    )
    .join("");
  const steps = [0, Math.round(maxSteps / 2), maxSteps].map((s) => `<text x="${x(s)}" y="${H - B + 14}" text-anchor="middle">${s}</text>`).join("");
  const series = (key) => evals.filter((e) => e[key] !== undefined).map((e) => [e.step, e[key]]);
  const marker =
    phase === null
      ? ""
      : `<line class="phase" x1="${x(phase)}" x2="${x(phase)}" y1="${T}" y2="${H - B}"></line><text x="${x(phase) + 3}" y="${T + 10}">second copy below half</text>`;
  const last = evals[evals.length - 1];
  const label = `Loss in nats against training step: ${losses.length} steps so far; held-out loss ${last ? last.eval_loss.toFixed(2) : "not measured yet"}.`;
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(label)}">${ticks}${steps}
    <text x="${(L + W) / 2}" y="${H - 2}" text-anchor="middle">step</text>
    ${line(
      "train",
      losses.map((v, s) => [s, v]),
    )}${line("held-out", series("eval_loss"))}${line("second", series("eval_second"))}${line("first", series("eval_first"))}${marker}</svg>`;
}

/** Each head's induction score at the last evaluation, the highest in bold. */
function scoreTable(scores) {
  const best = Math.max(...scores.flat());
  const head = scores[0].map((_, h) => `<th scope="col">head ${h}</th>`).join("");
  const rows = scores
    .map(
      (row, l) =>
        `<tr><th scope="row">layer ${l}</th>${row.map((v) => `<td class="${v === best ? "top" : ""}" data-score="${v}">${v.toFixed(2)}</td>`).join("")}</tr>`,
    )
    .join("");
  return `<table class="scores" aria-label="Induction score of each head"><thead><tr><th></th>${head}</tr></thead><tbody>${rows}</tbody></table>`;
}

class TxTrain extends TxLab {
  template() {
    return `<style>${STYLE}</style>
      <div class="title">Train a Transformer in your browser</div>
      <div class="grid">
        <label class="task">Task <select name="task"><option value="induction">induction (copying)</option><option value="text">text (characters)</option></select></label>
        <label>Seed <input name="seed" type="number" min="0" step="1" inputmode="numeric"></label>
        <label>Learning rate <input name="lr" type="number" min="0" step="0.001" inputmode="decimal"></label>
        <label>Warm-up <input name="warmup" type="number" min="0" step="1" inputmode="numeric"></label>
        <label>Steps <input name="steps" type="number" min="1" step="1" inputmode="numeric"></label>
        <label>Layers <input name="layers" type="number" min="1" step="1" inputmode="numeric"></label>
        <label>Width <input name="width" type="number" min="2" step="2" inputmode="numeric"></label>
      </div>
      <div class="row buttons">
        <button type="button" class="go">Train</button>
        <button type="button" class="pause" disabled>Pause</button>
        <button type="button" class="stop" disabled>Stop</button>
        <span class="rate"></span>
      </div>
      <figure><div class="chart"></div>
        <figcaption class="legend"><span class="train">training batch</span><span class="held-out">held-out</span><span class="second">second copy (held-out)</span><span class="first">first copy (held-out)</span></figcaption></figure>
      <div class="heads"></div>
      <div class="sample" aria-live="off" hidden></div>`;
  }

  setup() {
    const given = attributeValues(this, { task: "induction", seed: "0", ...Object.fromEntries(Object.keys(SETTINGS).map((k) => [k, ""])) });
    for (const [name, value] of Object.entries(given)) this.field(name).value = value;
    this.given = given;
    this.dataset.running = "false";
    this.$(".go").addEventListener("click", () => this.train());
    this.$(".pause").addEventListener("click", () => this.togglePause());
    this.$(".stop").addEventListener("click", () => this.halt());
    this.field("task").addEventListener("change", () =>
      this.fillDefaults().then(
        () => this.settingsChanged(),
        (err) => this.showError(err),
      ),
    );
    for (const el of this.shadowRoot.querySelectorAll(".grid input")) el.addEventListener("input", () => this.settingsChanged());
    this.showTask();
  }

  /** A setting was edited: keep it in `data-settings`, and say at once what is wrong with it (or that all is well again). */
  settingsChanged() {
    this.dataset.settings = JSON.stringify(Object.fromEntries([...this.shadowRoot.querySelectorAll(".grid [name]")].map((el) => [el.name, el.value])));
    if (this.dataset.running !== "false") return;
    try {
      this.request();
    } catch (err) {
      this.showError(err);
      return;
    }
    if (this.dataset.state === "error") this.showReady("Press Train: the model starts from random weights.");
  }

  /** The task's defaults (from Python) in the empty fields; nothing runs until the reader presses Train. */
  async start() {
    this.$(".go").disabled = true;
    try {
      await this.fillDefaults();
    } catch (err) {
      this.showError(err, { retry: () => this.start() });
      return;
    }
    this.$(".go").disabled = false;
    this.settingsChanged();
    if (this.dataset.state !== "error") this.showReady("Press Train: the model starts from random weights.");
  }

  /** Fill the settings the page's attributes left empty with the task's defaults (the page's own hold for every task). */
  async fillDefaults() {
    this.showTask();
    const task = this.field("task").value;
    const defaults = await callDemo("training", "defaults", { task: task || "induction" });
    for (const [name, key] of Object.entries(SETTINGS)) if (!this.given[name]) this.field(name).value = String(defaults[key]);
  }

  unmount() {
    this.halt();
  }

  /** Show the parts of the figure the task has. */
  showTask() {
    const induction = this.field("task").value === "induction";
    for (const cls of ["second", "first"]) this.$(`.legend .${cls}`).hidden = !induction;
    this.$(".sample").hidden = induction;
    this.$(".heads").hidden = !induction;
  }

  request() {
    const whole = (name, label) => parseInteger(this.field(name).value, { label, name, min: 0 });
    return {
      task: parseSelect(this.field("task"), { label: "The task" }),
      seed: whole("seed", "The seed"),
      lr: parseNumber(this.field("lr").value, { label: "The learning rate", name: "lr", min: 0 }),
      warmup: whole("warmup", "The warm-up"),
      steps: whole("steps", "The number of steps"),
      n_layer: whole("layers", "The number of layers"),
      n_embd: whole("width", "The width"),
    };
  }

  /** The Train button: a run, unless one is running. */
  train() {
    if (this.dataset.running === "false") this.update();
  }

  togglePause() {
    if (this.dataset.running === "true") {
      this.dataset.running = "paused";
      this.$(".pause").textContent = "Resume";
      this.showReady(`Paused at step ${this.dataset.step}.`);
    } else if (this.dataset.running === "paused") {
      this.dataset.running = "true";
      this.$(".pause").textContent = "Pause";
      this.resume?.();
    }
  }

  /** Stop the run after the current chunk of steps. */
  halt() {
    if (this.dataset.running === "false") return;
    this.stopping = true;
    this.resume?.();
  }

  /** One run: start it in Python, then chunks of steps until the schedule ends or the reader stops it. */
  async compute(request) {
    this.setRunning("true");
    this.stopping = false;
    this.showProgress("Starting Python and building the model…");
    const run = { losses: [], evals: [], phase: null, maxSteps: request.steps, task: request.task };
    let session = null;
    try {
      const info = await callDemo("training", "start", request);
      session = info.session;
      run.evals.push(info.eval);
      this.draw(run);
      let count = 2;
      let busyMs = 0;
      for (;;) {
        if (this.dataset.running === "paused") await new Promise((resolve) => (this.resume = resolve));
        if (this.stopping) break;
        const started = performance.now();
        const out = await callDemo("training", "steps", { session, count, eval_every: EVAL_EVERY });
        const took = performance.now() - started;
        busyMs += took;
        run.losses.push(...out.records.map((r) => r.loss));
        run.evals.push(...out.evals);
        run.phase = out.phase ?? null; // Python None arrives as undefined
        run.rate = run.losses.length / (busyMs / 1000);
        if (request.task === "text" && out.evals.length) run.sample = await callDemo("training", "sample", { session, prompt: "The ", length: 80 });
        this.draw(run);
        if (this.dataset.running === "true") this.showReady(`Training… step ${run.losses.length} of ${run.maxSteps}.`);
        else if (this.dataset.running === "paused") this.showReady(`Paused at step ${run.losses.length}.`);
        if (out.done) break;
        count = Math.max(1, Math.min(200, Math.round((CHUNK_MS * out.records.length) / Math.max(took, 1))));
      }
      run.stopped = this.stopping;
      return run;
    } finally {
      if (session !== null) callDemo("training", "stop", { session }).catch(() => {});
      this.setRunning("false");
    }
  }

  setRunning(state) {
    this.dataset.running = state;
    this.$(".go").disabled = state !== "false";
    this.$(".pause").disabled = state === "false";
    this.$(".pause").textContent = "Pause";
    this.$(".stop").disabled = state === "false";
    for (const el of this.shadowRoot.querySelectorAll(".grid input, .grid select")) el.disabled = state !== "false";
  }

  /** Draw the run so far; at its end, return the line that sums it up. */
  draw(run) {
    this.dataset.step = String(run.losses.length);
    this.dataset.losses = JSON.stringify(run.losses);
    this.dataset.evals = JSON.stringify(run.evals);
    this.dataset.phase = run.phase === null ? "" : String(run.phase);
    this.$(".chart").innerHTML = lossChart(run);
    const last = run.evals[run.evals.length - 1];
    if (last?.scores) this.$(".heads").innerHTML = `<p class="legend">Induction score of each head at step ${last.step}:</p>${scoreTable(last.scores)}`;
    if (run.sample) {
      const { text, prompt_length: n } = run.sample;
      this.$(".sample").innerHTML = `<span class="prompt">${escapeHtml(text.slice(0, n))}</span>${escapeHtml(text.slice(n))}`;
    }
    if (run.rate) {
      this.dataset.stepsPerSecond = String(run.rate);
      this.$(".rate").textContent = `${run.rate.toFixed(1)} steps/s`;
    }
    if (this.dataset.running !== "false") return undefined;
    const where = run.phase === null ? "" : ` The second copy's loss fell below half at step ${run.phase}.`;
    return `${run.stopped ? "Stopped" : "Done"} after ${run.losses.length} steps: held-out loss ${last.eval_loss.toFixed(3)} nats.${where}`;
  }
}

define("tx-train", TxTrain);
