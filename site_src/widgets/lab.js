/**
 * Base of the lab widgets (<tx-attention>, <tx-ffn>, …): read the inputs, ask Python, draw
 * the answer. TxLab owns the loop around that, so a lab writes only its own parts:
 *
 *   class TxThing extends TxLab {
 *     template() { return `<input name="n" type="range" min="1" max="8"><output></output>`; }
 *     setup() { this.wire({ n: this.getAttribute("n") ?? "4" }); }    // starting values, listeners
 *     request() { return { n: parseInteger(this.field("n").value, { label: "n", min: 1, max: 8 }) }; }
 *     echo(request) { this.field("n").nextElementSibling.textContent = String(request.n); }
 *     compute(request) { return callDemo("thing", "run", request); }  // a promise of the result
 *     draw(result, request) { this.$(".out").textContent = result.text; }
 *   }
 *
 * The loop, `update(options)`:
 * 1. starts a new *generation*: an answer still on its way is for older inputs and is dropped;
 * 2. reads `request()`; an error it throws (an `InputError` naming the input, inputs.js) is
 *    shown in the widget, without Retry, and nothing is computed;
 * 3. `echo(request)` (optional: show the values read, e.g. next to sliders);
 * 4. awaits `compute(request, options)` (meanwhile `computing` is true: should Python start
 *    again, e.g. after the reader's code ended it, the widget shows that progress);
 * 5. unless a newer update began: `data-request` = the request's JSON, `draw(result, request,
 *    options)`, then the ready state (with the line `draw` returned, if any), or `notice`, a
 *    message to show once as an error in its place (e.g. an attribute that was not understood);
 * 6. a fault (Python not starting, a download, an error in Python) is shown by `showFault`:
 *    the message and, where trying again may help, Retry, which runs `rerun()` (`update()`).
 *
 * Once mounted: `setup()`, then `start()`, which by default awaits `prepare()` (optional: what
 * the inputs need first, e.g. a vocabulary to fill a select; a failure is shown with Retry,
 * which runs `start()` again) and then runs `update()`. While connected the widget follows
 * Python's start (`followPython`): progress while Python loads, and a Retry pressed in
 * another widget re-runs this one's too.
 *
 * Hook names (`setup`, `prepare`, `start`, `request`, `echo`, `compute`, `draw`, `rerun`,
 * `showFault`) are no methods of HTMLElement. Helpers: `field(name)`, `wire(values)`,
 * `updateSoon(ms)`.
 * @module widgets/lab
 */
import { followPython } from "../runtime/python.js";
import { TxElement } from "./base.js";

/** CSS of a lab's figures, inside its STYLE: captioned SVG charts as wide as the card. */
export const FIGURE_CSS = `
  figure { margin: 0; }
  figcaption { color: var(--tx-muted); margin-bottom: 0.3em; }
  svg { width: 100%; height: auto; display: block; }`;

export class TxLab extends TxElement {
  mount() {
    this.generation = 0;
    this.unsubscribe = followPython(this);
    try {
      this.setup();
    } catch (err) {
      // e.g. an attribute the widget cannot work with
      this.showError(err);
      return;
    }
    this.start();
  }

  disconnectedCallback() {
    this.unsubscribe?.();
  }

  /** Give the inputs their starting values and listeners (see `wire`); may throw to stop. */
  setup() {}

  /** What runs once `setup` is done: by default `prepare()`, then the first `update()`. */
  async start() {
    try {
      await this.prepare();
    } catch (err) {
      this.showError(err, { retry: () => this.start() });
      return;
    }
    this.update();
  }

  /** What the inputs need before the first update (e.g. a vocabulary); may return a promise. */
  prepare() {}

  /** The inputs, read and checked; throws an InputError naming the input. */
  request() {
    return {};
  }

  /** Show the values `request()` read, before the result comes. */
  echo() {}

  /**
   * The result for `request` (a promise).
   * @param {object} request what `request()` returned
   * @param {unknown} [options] what `update` was given
   */
  compute() {
    return Promise.resolve(null);
  }

  /** Draw `result` (computed for `request`); may return a line for the status. */
  draw() {}

  /** What Retry after a fault runs. */
  rerun() {
    return this.update();
  }

  /** Show a fault of `compute` or `draw`: its message, and Retry where trying again may help. */
  showFault(err) {
    this.showError(err, { retry: () => this.rerun() });
  }

  /**
   * Read the inputs, compute, draw what is still wanted (see the module's comment).
   * @param {unknown} [options] passed on to `compute` and `draw` (e.g. "move the slider to the end")
   */
  async update(options) {
    const generation = ++this.generation;
    const request = this.checkedRequest();
    if (!request) return;
    try {
      this.echo(request);
      this.computing = true; // followPython shows progress if Python (re)starts meanwhile
      const result = await this.compute(request, options).finally(() => {
        if (generation === this.generation) this.computing = false;
      });
      if (generation !== this.generation) return; // a newer request is on its way
      this.dataset.request = JSON.stringify(request);
      const line = this.draw(result, request, options);
      if (this.notice) this.showError(this.notice);
      else this.showReady(line ?? "");
      this.notice = null;
    } catch (err) {
      if (generation === this.generation) this.showFault(err);
    }
  }

  /** The control named `name` in the shadow root. */
  field(name) {
    return this.$(`[name="${name}"]`);
  }

  /**
   * Give the named controls their starting values (a boolean ticks a checkbox) and run
   * `run` (default: `update()`) on `on` (default "input"; a function of the control may choose).
   * @param {Record<string, string|boolean>} values
   * @param {{on?: string|((el: HTMLElement) => string), run?: () => unknown}} [options]
   */
  wire(values, { on = "input", run = () => this.update() } = {}) {
    for (const [name, value] of Object.entries(values)) {
      const el = this.field(name);
      if (typeof value === "boolean") el.checked = value;
      else el.value = value;
      el.addEventListener(typeof on === "function" ? on(el) : on, run);
    }
  }

  /** Update after `ms` of quiet (typing): a later call restarts the wait. */
  updateSoon(ms) {
    clearTimeout(this.soonTimer);
    this.soonTimer = setTimeout(() => this.update(), ms);
  }
}
