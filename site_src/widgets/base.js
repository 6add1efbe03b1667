/**
 * Shared base for the textbook's custom elements.
 *
 * Each widget renders into an open shadow root (so it looks the same inside any course
 * page), gets a status line with an optional progress bar, and reports failures in the
 * widget itself instead of leaving it blank. `data-state` on the element says
 * "loading", "ready" or "error" (tests and embedding pages can watch it).
 * @module widgets/base
 */
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
        </div>
      </div>`;
    this.mount();
  }

  /** First element in the shadow root matching a selector. */
  $(selector) {
    return this.shadowRoot.querySelector(selector);
  }

  /**
   * Show what is happening; `loaded`/`total` (bytes or steps) draw a progress bar.
   * @param {string} message
   * @param {{loaded?: number, total?: number}} [amount]
   */
  showProgress(message, { loaded, total } = {}) {
    this.dataset.state = "loading";
    const bar = this.$(".status progress");
    this.$(".status").classList.remove("error");
    this.$(".status-text").textContent = message;
    bar.hidden = !(total > 0);
    if (total > 0) {
      bar.max = total;
      bar.value = loaded;
      this.$(".status-text").textContent = `${message}: ${formatBytes(loaded)} of ${formatBytes(total)}`;
    }
  }

  /** Show a short success line (or nothing) and mark the widget ready. */
  showReady(message = "") {
    this.dataset.state = "ready";
    this.$(".status").classList.remove("error");
    this.$(".status-text").textContent = message;
    this.$(".status progress").hidden = true;
  }

  /** Show an error in the widget; the reader can fix the input and try again. */
  showError(error) {
    this.dataset.state = "error";
    const status = this.$(".status");
    status.classList.add("error");
    this.$(".status progress").hidden = true;
    this.$(".status-text").textContent = `⚠ ${(error && error.message) || error}`;
  }
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

/** Percent with enough digits to tell small probabilities apart. */
export function formatProb(p) {
  if (p === 0) return "0";
  if (p >= 0.001) return `${(100 * p).toFixed(p >= 0.1 ? 1 : 2)}%`;
  return `${(100 * p).toExponential(1)}%`;
}
