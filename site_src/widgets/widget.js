/**
 * The one way the textbook's widgets are written: a `Widget` (a plain object, not an element)
 * drives one custom element, defined by `define(tag, WidgetClass)`.
 *
 * The element (`WidgetElement`) only hosts: it owns an open shadow root (so the widget looks
 * the same inside any course page), a status line, and `widget`, its Widget. The hooks a widget
 * writes (`setup`, `request`, `compute`, `draw`, …) live on the Widget, never on the element,
 * so no hook can shadow a DOM member (an `after` or `title` method would on an HTMLElement).
 *
 *   class Thing extends Widget {
 *     template() { return `<input name="n" type="range" min="1" max="8"><output></output>`; }
 *     setup() { this.wire({ n: this.getAttribute("n") ?? "4" }); }    // starting values, listeners
 *     request() { return { n: parseInteger(this.field("n").value, { label: "n", min: 1, max: 8 }) }; }
 *     compute(request) { return callDemo("thing", "run", request); }  // a promise of the result
 *     draw(result, request) { this.$("output").textContent = result.text; }
 *   }
 *   define("tx-thing", Thing);
 *
 * Once connected: `template()` is drawn, then `mount()`, which runs `setup()` (an error it
 * throws, e.g. an attribute the widget cannot use, is shown) and `start()`: `prepare()` once
 * (what the inputs need first, e.g. a vocabulary; a failure is shown with Retry, which runs
 * `start()` again), then the first `update()`.
 *
 * The loop, `update(options)`:
 * 1. starts a new *generation*: an answer still on its way is for older inputs and is dropped
 *    (a hook that awaits takes `this.staleCheck()` first and returns once it says true);
 * 2. reads `request()`; an error it throws (an `InputError` naming the input, inputs.js) is
 *    shown in the widget, without Retry, and nothing is computed;
 * 3. `echo(request)` (optional: show the values read, e.g. next to sliders);
 * 4. awaits `compute(request, options)` (meanwhile `computing` is true);
 * 5. unless a newer update began: `data-request` = the request's JSON, awaits `draw(result,
 *    request, options)`, then the ready state (with the line `draw` returned, if any), or
 *    `notice`, a message to show once as an error in its place;
 * 6. a fault (a download, Python, the model, an error in Python) is shown by `showFault`: the
 *    message and, where trying again may help, Retry, which runs `rerun()` (`update()`); a
 *    cancelled run (an AbortError) ends ready, with its message.
 *
 * What it computes with: a lab (`TxLab`, lab.js) follows Python's start (`followPython`:
 * progress while Python loads; a Retry pressed in another widget re-runs this one's too);
 * `await this.useModel({needs, backend})` loads the site's model (runtime/model.js, imported
 * on first use, so pages without a model widget never load it)
 * with progress, shows where it runs in a `.badge` and its notices in a `.notices` box when the
 * template has them, and, should the model stop working (e.g. its WebGPU device lost), drops
 * the run, calls `modelLost()` and shows the error with Retry.
 *
 * `data-state` on the element says "loading", "ready" or "error" (tests and embedding pages
 * watch it). Messages go through `explain` (runtime/errors.js), so low-level errors read as
 * sentences. An error may also offer other ways forward: `showError(err, { retry, actions:
 * [{label, run}] })` draws one button per action; an error that carries `offers` ([{label,
 * accept}], e.g. the model runtime's "memory" error) gets them as actions by default, each
 * accepting its offer and then running `retry`.
 * @module widgets/widget
 */
import { explain, isRetryable } from "../runtime/errors.js";
import { formatBytes, modelBadge } from "./base.js";

const STYLESHEET = new URL("../styles/widgets.css", import.meta.url).href;

/**
 * The widgets' stylesheet, fetched once, before any widget is defined (this module waits for
 * it), and adopted by every widget's shadow root: no widget shows, or says it is ready, before
 * its styles apply. Null where the browser lacks constructable stylesheets or the fetch failed;
 * each shadow root then links the file itself.
 * @type {CSSStyleSheet | null}
 */
const SHEET = await loadSheet();

async function loadSheet() {
  if (typeof CSSStyleSheet !== "function" || !("adoptedStyleSheets" in Document.prototype)) return null;
  try {
    const response = await fetch(STYLESHEET);
    if (!response.ok) return null;
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(await response.text());
    return sheet;
  } catch {
    return null;
  }
}

export class Widget {
  /** @param {HTMLElement} host the element this widget draws in */
  constructor(host) {
    this.host = host;
    this.generation = 0;
    this.model = null;
    this.cleanups = [];
  }

  // ----- the element, as the hooks see it -----

  get shadowRoot() {
    return this.host.shadowRoot;
  }

  get dataset() {
    return this.host.dataset;
  }

  getAttribute(name) {
    return this.host.getAttribute(name);
  }

  hasAttribute(name) {
    return this.host.hasAttribute(name);
  }

  /** First element in the shadow root matching a selector. */
  $(selector) {
    return this.shadowRoot.querySelector(selector);
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

  // ----- hooks (a widget overrides those it needs) -----

  /** Markup of the widget body. */
  template() {
    return "";
  }

  /** Once the template is in place: `setup()`, then `start()`. */
  mount() {
    try {
      this.setup();
    } catch (err) {
      this.showError(err);
      return;
    }
    this.start();
  }

  /** Give the inputs their starting values and listeners (see `wire`); may throw to stop. */
  setup() {}

  /** What runs once `setup` is done: `prepare()`, then the first `update()`. */
  async start() {
    try {
      await this.prepare();
    } catch (err) {
      this.showError(err, { retry: () => this.start() });
      return;
    }
    this.update();
  }

  /** What the inputs need once, before the first update (e.g. a vocabulary); may return a promise. */
  prepare() {}

  /** The inputs, read and checked; throws an InputError naming the input. */
  request() {
    return {};
  }

  /** Show the values `request()` read, before the result comes. */
  echo() {}

  /**
   * The result for `request` (may return a promise).
   * @param {object} request what `request()` returned
   * @param {unknown} [options] what `update` was given
   */
  compute() {
    return null;
  }

  /** Draw `result` (computed for `request`); may return a line for the status (or a promise of it). */
  draw() {}

  /** What Retry after a fault runs. */
  rerun() {
    return this.update();
  }

  /** Show a fault of `compute` or `draw`: its message, and Retry where trying again may help. */
  showFault(err) {
    this.showError(err, { retry: () => this.rerun() });
  }

  /** The model stopped working: clear what showed its numbers (the error is shown after). */
  modelLost() {}

  /** The element left the page (e.g. instant navigation): stop what runs. */
  unmount() {}

  /** Run `cleanup` when the element leaves the page (after `unmount`). */
  onUnmount(cleanup) {
    this.cleanups.push(cleanup);
  }

  // ----- the loop -----

  /**
   * A function that says whether a newer update began since this call: take it first thing
   * in a hook that awaits.
   * @returns {() => boolean}
   */
  staleCheck() {
    const generation = this.generation;
    return () => generation !== this.generation;
  }

  /**
   * Read the inputs, compute, draw what is still wanted (see the module's comment).
   * @param {unknown} [options] passed on to `compute` and `draw` (e.g. "move the slider to the end")
   */
  async update(options) {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    const request = this.checkedRequest();
    if (!request) {
      this.computing = false; // an earlier computation, if any, is stale now
      return;
    }
    try {
      this.echo(request);
      this.computing = true; // followPython shows progress if Python (re)starts meanwhile
      let result;
      try {
        result = await this.compute(request, options);
      } finally {
        if (!stale()) this.computing = false;
      }
      if (stale()) return;
      this.dataset.request = JSON.stringify(request);
      const line = await this.draw(result, request, options);
      if (stale()) return;
      if (this.notice) this.showError(this.notice);
      else this.showReady(line ?? "");
      this.notice = null;
    } catch (err) {
      if (stale()) return;
      if (err?.name === "AbortError") this.showReady(err.message);
      else this.showFault(err);
    }
  }

  /**
   * The inputs (`request()`), or null once the error it threw (an `InputError` naming the
   * input) is shown in the widget.
   * @returns {object|null}
   */
  checkedRequest() {
    try {
      return this.request();
    } catch (err) {
      this.showError(err);
      return null;
    }
  }

  // ----- what it computes with -----

  /**
   * The site's model, loaded once per page (runtime/model.js), with progress; the widget's
   * `model` once loaded; null when a newer update began meanwhile.
   * @param {{needs?: string[], backend?: string}} [options] outputs the widget needs ("inspect",
   *   "attentions", "hiddenStates"); the backend ("auto", "webgpu", "wasm")
   * @returns {Promise<object|null>}
   */
  async useModel({ needs, backend = "auto" } = {}) {
    const stale = this.staleCheck();
    const { loadModel } = await import("../runtime/model.js");
    const model = await loadModel({
      model: this.getAttribute("model") || undefined,
      variant: this.getAttribute("variant") || undefined,
      backend,
      needs,
      onProgress: (event) => {
        if (!stale() && this.dataset.state !== "ready") this.showProgress(event.message, event);
      },
    });
    if (stale()) return null;
    if (this.model !== model) {
      this.model = model;
      model.lost.then((err) => {
        if (this.model !== model) return;
        this.model = null;
        this.generation++; // a run of the lost model must not draw over the message
        this.modelLost();
        this.showError(err, { retry: () => this.rerun() });
      });
    }
    this.showModel(model.info);
    return model;
  }

  /** Where the model runs, in the `.badge` and as data-backend / data-variant; its notices in `.notices`. */
  showModel(info) {
    this.dataset.variant = info.variant;
    this.dataset.backend = info.backend;
    const badge = this.$(".badge");
    if (badge) badge.textContent = modelBadge(info);
    const box = this.$(".notices");
    if (box) {
      box.textContent = info.notices.join(" ");
      box.hidden = info.notices.length === 0;
    }
  }

  // ----- the status line -----

  /**
   * Show what is happening; `loaded`/`total` (bytes, or counted in `unit`) draw a progress bar.
   * @param {string} message
   * @param {{loaded?: number, total?: number, unit?: string}} [amount] e.g. unit "runs":
   *   "Ablating each head: 12 of 144 runs"
   */
  showProgress(message, { loaded, total, unit } = {}) {
    this.dataset.state = "loading";
    const bar = this.$(".status progress");
    this.$(".status").classList.remove("error");
    this.$(".status .retry").hidden = true;
    this.showActions([]);
    this.$(".status-text").textContent = message;
    bar.hidden = !(total > 0);
    if (total > 0) {
      bar.max = total;
      bar.value = loaded;
      const amount = unit ? `${loaded} of ${total} ${unit}` : `${formatBytes(loaded)} of ${formatBytes(total)}`;
      // "Downloading the model: 1.2 MB of 3.7 MB"; "No data for 6 s — still waiting… (0 B of 3.7 MB)"
      this.$(".status-text").textContent = message.endsWith("…") ? `${message} (${amount})` : `${message}: ${amount}`;
    }
  }

  /** Show a short success line (or nothing) and mark the widget ready. */
  showReady(message = "") {
    this.dataset.state = "ready";
    this.$(".status").classList.remove("error");
    this.$(".status-text").textContent = message;
    this.$(".status progress").hidden = true;
    this.$(".status .retry").hidden = true;
    this.showActions([]);
    this.retryAction = null;
  }

  /**
   * Show an error in the widget, in words (see `explain`). The reader can fix the input and
   * try again; when `retry` is given and the error is one that trying again may fix
   * (`isRetryable`), a Retry button runs it.
   * @param {unknown} error an Error, or a message
   * @param {{retry?: () => unknown, actions?: {label: string, run: () => unknown}[]}} [options]
   *   what Retry does (e.g. load and run again); other buttons (default: the error's `offers`,
   *   each accepted and then retried, see `offeredActions`)
   */
  showError(error, { retry, actions = offeredActions(error, retry) } = {}) {
    this.dataset.state = "error";
    this.$(".status").classList.add("error");
    this.$(".status progress").hidden = true;
    this.$(".status-text").textContent = `⚠ ${explain(error)}`;
    /** What the Retry button runs, or null when it is hidden. */
    this.retryAction = retry && isRetryable(error) ? retry : null;
    this.$(".status .retry").hidden = !this.retryAction;
    this.showActions(actions);
  }

  /** One button per action after the status text (none: the buttons go). */
  showActions(actions) {
    const box = this.$(".status .actions");
    if (!box || (box.hidden && actions.length === 0)) return;
    box.replaceChildren(
      ...actions.map(({ label, run }) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "action";
        button.textContent = label;
        button.addEventListener("click", () => {
          this.showProgress("Starting…");
          run();
        });
        return button;
      }),
    );
    box.hidden = actions.length === 0;
  }

  /** Run the action offered with the last error; its button stays hidden while it runs. */
  runRetry() {
    const action = this.retryAction;
    if (!action) return;
    this.retryAction = null;
    this.showProgress("Trying again…");
    action();
  }
}

/**
 * The error's `offers` ([{label, accept}]) as `showError` actions: accept the offer, then run
 * `retry` (nothing without `retry`: an offer only takes effect at the next load).
 */
function offeredActions(error, retry) {
  if (!retry || !Array.isArray(error?.offers)) return [];
  return error.offers.map(({ label, accept }) => ({
    label,
    run: () => {
      accept();
      retry();
    },
  }));
}

/**
 * Define the custom element `tag`, driven by a new `WidgetClass` (a Widget) once connected.
 * The element's own members are the lifecycle callbacks and `widget`, nothing else.
 * @param {string} tag e.g. "tx-thing"
 * @param {typeof Widget} WidgetClass
 */
export function define(tag, WidgetClass) {
  if (customElements.get(tag)) return;
  customElements.define(
    tag,
    class WidgetElement extends HTMLElement {
      connectedCallback() {
        if (this.widget) return;
        this.attachShadow({ mode: "open" });
        const widget = (this.widget = new WidgetClass(this));
        if (SHEET) this.shadowRoot.adoptedStyleSheets = [SHEET];
        this.shadowRoot.innerHTML = `${SHEET ? "" : `<link rel="stylesheet" href="${STYLESHEET}">`}
          <div class="card" part="card">${widget.template()}
            <div class="status" role="status" aria-live="polite">
              <span class="status-text"></span><progress hidden></progress>
              <button type="button" class="retry" hidden>Retry</button>
              <span class="actions" hidden></span>
            </div>
          </div>`;
        this.shadowRoot.querySelector(".status .retry").addEventListener("click", () => widget.runRetry());
        widget.mount();
      }

      disconnectedCallback() {
        if (!this.widget) return;
        this.widget.unmount();
        this.widget.cleanups.splice(0).forEach((cleanup) => cleanup());
      }
    },
  );
}
