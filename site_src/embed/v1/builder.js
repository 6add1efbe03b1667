/**
 * <tx-embed-builder>: on the "Embed in your course" page, pick a widget, its attributes and
 * a theme; get both snippets (script tag and iframe) with this site's address filled in,
 * and a live preview of the iframe, sized by the same listener the snippet contains.
 *
 * Attributes (all optional):
 *   widget   tag of the widget chosen at the start, default "tx-sampling"
 *
 * For tests: `data-script` and `data-iframe` hold the current snippets, `data-src` the
 * preview's address, `data-preview-widget` and `data-preview-height` the last size message.
 * @module embed/builder
 */
import { RESERVED, VERSION, WIDGETS } from "./catalog.js";

/** The site's root URL, from this file's place in it (assets/tx/embed/v1/builder.js). */
export const SITE_ROOT = new URL("../../../../", import.meta.url).href;
export const WIDGETS_URL = new URL("widgets.js", import.meta.url).href;
const RESIZE_MESSAGE = "tx:resize";

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * The `<script>` + element snippet.
 * @param {string} tag
 * @param {[string, string|boolean][]} attributes name and value (true: a boolean attribute)
 */
export function scriptSnippet(tag, attributes) {
  const attrs = attributes.map(([name, value]) => (value === true ? ` ${name}` : ` ${name}="${escapeHtml(value)}"`)).join("");
  return `<script type="module" src="${WIDGETS_URL}"></script>\n<${tag}${attrs}></${tag}>`;
}

/** Address of the bare iframe page of a widget with these attributes and theme. */
export function frameUrl(tag, attributes, theme) {
  const params = new URLSearchParams();
  for (const [name, value] of attributes) params.append(name, value === true ? "" : value);
  if (theme && theme !== "auto") params.set("theme", theme);
  const query = params.toString().replace(/=(?=&|$)/g, ""); // ?causal rather than ?causal=
  return new URL(`embed/${WIDGETS[tag].name}/`, SITE_ROOT).href + (query ? `?${query}` : "");
}

/** The iframe snippet, with the few lines that size it to its content. */
export function iframeSnippet(tag, attributes, theme) {
  const title = `${WIDGETS[tag].summary.replace(/\.$/, "")} (interactive)`;
  const origin = new URL(SITE_ROOT).origin;
  return `<iframe src="${escapeHtml(frameUrl(tag, attributes, theme))}"
        title="${escapeHtml(title)}" loading="lazy"
        style="width: 100%; height: 480px; border: 0"></iframe>
<script>
  // Once per page: size the textbook's iframes to their content.
  addEventListener("message", (event) => {
    if (event.origin !== "${origin}" || event.data?.type !== "${RESIZE_MESSAGE}") return;
    for (const frame of document.querySelectorAll("iframe")) {
      if (frame.contentWindow === event.source) frame.style.height = event.data.height + "px";
    }
  });
</script>`;
}

/** How the page's static snippets write this site's address before the builder fills it in. */
const SITE_PLACEHOLDER = "https://SITE";

/** Put this site's address into the static snippets of the page (code elements under `root`). */
export function fillSiteAddress(root) {
  const origin = new URL(SITE_ROOT).origin;
  for (const code of root.querySelectorAll("code")) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.data.includes(SITE_PLACEHOLDER)) {
        node.data = node.data.replaceAll(`${SITE_PLACEHOLDER}/`, SITE_ROOT).replaceAll(SITE_PLACEHOLDER, origin);
      }
    }
  }
}

class TxEmbedBuilder extends HTMLElement {
  connectedCallback() {
    if (this.mounted) return;
    this.mounted = true;
    fillSiteAddress(this.closest("article") || document.body);
    const start = WIDGETS[this.getAttribute("widget")] ? this.getAttribute("widget") : "tx-sampling";
    const options = Object.entries(WIDGETS)
      .map(([tag, w]) => `<option value="${tag}"${tag === start ? " selected" : ""}>&lt;${tag}&gt;: ${escapeHtml(w.summary)}</option>`)
      .join("");
    this.innerHTML = `
      <form class="tx-builder" onsubmit="return false">
        <p><label>Widget <select name="widget">${options}</select></label></p>
        <p><label>Theme of the iframe <select name="theme">
          <option value="auto">auto: follows the reader's system</option>
          <option value="light">light</option><option value="dark">dark</option>
        </select></label></p>
        <fieldset><legend>Attributes (leave empty for the default)</legend><div class="tx-attrs"></div></fieldset>
      </form>
      <p><strong>By script tag</strong> (version ${VERSION} of the interface)</p>
      <pre class="tx-snippet"><code class="tx-script"></code></pre>
      <p><strong>By iframe</strong></p>
      <pre class="tx-snippet"><code class="tx-iframe"></code></pre>
      <p><strong>Live preview of the iframe</strong> <span class="tx-height"></span></p>
      <iframe class="tx-preview" title="Preview of the embedded widget" style="width: 100%; height: 480px; border: 1px solid var(--md-default-fg-color--lightest)"></iframe>
      <style>
        .tx-builder select, .tx-builder input[type=text] {
          font: inherit; max-width: 100%; color: var(--md-default-fg-color);
          background: var(--md-default-bg-color); border: 1px solid var(--md-default-fg-color--lighter);
          border-radius: 3px; padding: 0.15em 0.4em;
        }
        .tx-builder input[type=checkbox] { accent-color: var(--md-primary-fg-color); }
        .tx-builder fieldset { border: 1px solid var(--md-default-fg-color--lightest); padding: 0.4em 0.8em; }
        .tx-attrs label { display: block; margin: 0.4em 0; }
        .tx-attrs input[type=text] { width: 16em; margin-left: 0.5em; }
        .tx-attrs small { display: block; color: var(--md-default-fg-color); }
        pre.tx-snippet code { white-space: pre-wrap; word-break: break-all; }
      </style>`;
    this.form = this.querySelector("form");
    this.preview = this.querySelector(".tx-preview");
    // A choice (a select, a checkbox) updates at once, typing after a pause.
    this.form.addEventListener("input", (event) => {
      if (event.target.name === "widget") this.renderAttributes();
      if (event.target.type === "text") this.schedule();
      else this.updateNow();
    });
    this.onMessage = (event) => {
      if (event.source !== this.preview.contentWindow || event.data?.type !== RESIZE_MESSAGE) return;
      this.preview.style.height = `${event.data.height}px`;
      this.querySelector(".tx-height").textContent = `(sized to ${event.data.height} px by the snippet's listener)`;
      this.dataset.previewHeight = String(event.data.height);
      this.dataset.previewWidget = String(event.data.widget);
    };
    window.addEventListener("message", this.onMessage);
    this.renderAttributes();
    this.update();
  }

  disconnectedCallback() {
    window.removeEventListener("message", this.onMessage);
  }

  /** The chosen widget; a value that is none of them (set by a script) goes back to the last one. */
  chosenTag() {
    const select = this.form.widget;
    if (Object.hasOwn(WIDGETS, select.value)) this.tag = select.value;
    else select.value = this.tag ?? "tx-sampling";
    return select.value;
  }

  renderAttributes() {
    const tag = this.chosenTag();
    this.querySelector(".tx-attrs").innerHTML =
      WIDGETS[tag].attributes
        .filter((a) => !RESERVED.includes(a.name))
        .map((a) =>
          a.boolean
            ? `<label><input type="checkbox" data-attr="${a.name}"> <code>${a.name}</code><small>${escapeHtml(a.description)}</small></label>`
            : `<label><code>${a.name}</code><input type="text" data-attr="${a.name}" spellcheck="false"><small>${escapeHtml(a.description)}</small></label>`,
        )
        .join("") || "<p>This widget has no attributes.</p>";
  }

  chosenAttributes() {
    const out = [];
    for (const input of this.querySelectorAll("[data-attr]")) {
      if (input.type === "checkbox") {
        if (input.checked) out.push([input.dataset.attr, true]);
      } else if (input.value.trim() !== "") {
        out.push([input.dataset.attr, input.value.trim()]);
      }
    }
    return out;
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.update(), 400);
  }

  updateNow() {
    clearTimeout(this.timer);
    this.update();
  }

  update() {
    const tag = this.chosenTag();
    const theme = this.form.theme.value;
    const attributes = this.chosenAttributes();
    const script = scriptSnippet(tag, attributes);
    const iframe = iframeSnippet(tag, attributes, theme);
    this.querySelector(".tx-script").textContent = script;
    this.querySelector(".tx-iframe").textContent = iframe;
    this.dataset.script = script;
    this.dataset.iframe = iframe;
    this.dataset.state = "ready"; // snippets are written; the preview iframe loads on its own
    const src = frameUrl(tag, attributes, theme);
    if (this.dataset.src !== src) {
      this.dataset.src = src;
      this.preview.src = src;
    }
  }
}

if (!customElements.get("tx-embed-builder")) customElements.define("tx-embed-builder", TxEmbedBuilder);
