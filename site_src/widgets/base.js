/**
 * What several widgets show the same way: the prompt box, starting values from attributes,
 * the line that says where a model runs, sizes, escaped text and probabilities. (The widgets
 * themselves are written on `Widget`, widget.js.)
 * @module widgets/base
 */

/** The text box of the widgets that read a prompt (the inspect widgets and next-token). */
export const PROMPT_FIELD = `<label class="prompt">Your text <textarea name="prompt" rows="2" spellcheck="false"></textarea></label>`;

/** The select that chooses where a model widget runs (`name="backend"`). */
export const BACKEND_FIELD = `<label>Run on <select name="backend">
  <option value="auto">best available</option><option value="webgpu">WebGPU</option><option value="wasm">WASM (CPU)</option>
</select></label>`;

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

/** "12.3 MB"-style size. */
export function formatBytes(n) {
  if (n < 1e3) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}

/** Make spaces, line breaks and tabs in a token visible: "␣", "↵", "⇥". */
export function visible(text) {
  return text.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥");
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

/** A number with a true minus sign and `digits` decimals: −3.21 (a log-probability, a score). */
export function signed(x, digits = 2) {
  return x.toFixed(digits).replace(/^-/, "−");
}
