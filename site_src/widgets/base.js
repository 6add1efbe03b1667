/**
 * Shared base for the textbook's custom elements.
 *
 * Each widget renders into an open shadow root (so it looks the same inside any course
 * page), gets a status line with an optional progress bar, and reports failures in the
 * widget itself instead of leaving it blank. `data-state` on the element says
 * "loading", "ready" or "error" (tests and embedding pages can watch it).
 *
 * An error that trying again may fix (a download, a runtime that did not start) gets a
 * Retry button in the status line: `this.showError(err, { retry: () => this.update() })`.
 * The button is hidden while anything runs (progress, ready, the retry itself). Messages
 * go through `explain` (runtime/errors.js), so low-level errors read as sentences.
 *
 * An error may also offer other ways forward: `showError(err, { retry, actions: [{label, run}] })`
 * draws one button per action. An error that carries `offers` ([{label, accept}], e.g. the
 * model runtime's "memory" error: "Load the smaller q8 model instead", "Try anyway") gets
 * them as actions by default: each button accepts its offer, then runs `retry`.
 * @module widgets/base
 */
import { explain, isRetryable } from "../runtime/errors.js";

const STYLESHEET = new URL("../styles/widgets.css", import.meta.url).href;

export class TxElement extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
  }

  /** Markup of the widget body; subclasses override. */
  template() {
    return "";
  }

  /** Called once after the template is in place; subclasses wire events here. */
  mount() {}

  connectedCallback() {
    if (this.mounted) return;
    this.mounted = true;
    this.shadowRoot.innerHTML = `<link rel="stylesheet" href="${STYLESHEET}">
      <div class="card" part="card">${this.template()}
        <div class="status" role="status" aria-live="polite">
          <span class="status-text"></span><progress hidden></progress>
          <button type="button" class="retry" hidden>Retry</button>
          <span class="actions" hidden></span>
        </div>
      </div>`;
    this.$(".status .retry").addEventListener("click", () => this.runRetry());
    this.mount();
  }

  /** First element in the shadow root matching a selector. */
  $(selector) {
    return this.shadowRoot.querySelector(selector);
  }

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
   * The widget's `request()` (its inputs read and checked), or null once the error it threw
   * (an `InputError` naming the input) is shown in the widget.
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
    const status = this.$(".status");
    status.classList.add("error");
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

/** The text box of the widgets that read a prompt (the inspect widgets and next-token). */
export const PROMPT_FIELD = `<label class="prompt">Your text <textarea rows="2" spellcheck="false"></textarea></label>`;

/**
 * A control's starting values from the element's attributes: each key of `defaults` read from
 * the attribute of that name with dashes for underscores (`beam_width` from `beam-width`), else
 * its default.
 * @param {Element} el
 * @param {Object<string, string>} defaults
 * @returns {Object<string, string>}
 */
export function attributeValues(el, defaults) {
  return Object.fromEntries(Object.entries(defaults).map(([key, value]) => [key, el.getAttribute(key.replaceAll("_", "-")) ?? value]));
}

/**
 * The line that says where a model runs: "WebGPU · q4 · gpt2", "WASM · 4 threads · q8x · gpt2".
 * @param {{backend: string, variant: string, threads: number|null, name: string}} info the model's info
 */
export function modelBadge({ backend, variant, threads, name }) {
  return backend === "webgpu" ? `WebGPU · ${variant} · ${name}` : `WASM · ${threads} thread${threads === 1 ? "" : "s"} · ${variant} · ${name}`;
}

/**
 * Make `model` the widget's model (`widget.model`) and call `onLost(err)` when it stops working
 * (e.g. the WebGPU device is lost) while it still is; the widget's model is then null.
 * @param {{model: object|null}} widget
 * @param {{lost: Promise<Error>}} model from `loadModel`
 * @param {(err: Error) => void} onLost shows the error, with Retry
 */
export function watchModel(widget, model, onLost) {
  if (widget.model === model) return;
  widget.model = model;
  model.lost.then((err) => {
    if (widget.model !== model) return;
    widget.model = null;
    onLost(err);
  });
}

/** "12.3 MB"-style size. */
export function formatBytes(n) {
  if (n < 1e3) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}

/** Escape text for insertion into HTML. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * A probability as a percentage a reader can compare: "42.1%", "4.21%", "0.42%", "0.0042%"
 * (two significant digits below 1%), "<0.0001%" below that, never exponent notation.
 * @param {number} p probability in [0, 1]
 * @returns {string}
 */
export function formatProb(p) {
  if (!Number.isFinite(p)) return "–";
  if (p === 0) return "0%";
  const percent = 100 * p;
  if (percent >= 10) return `${percent.toFixed(1)}%`;
  if (percent >= 1) return `${percent.toFixed(2)}%`;
  if (percent < 1e-4) return "<0.0001%";
  // Two significant digits: 0.42, 0.042, 0.0042 (toFixed, not toPrecision, which may give "4.2e-5").
  const decimals = 1 - Math.floor(Math.log10(percent));
  return `${percent.toFixed(decimals)}%`;
}
