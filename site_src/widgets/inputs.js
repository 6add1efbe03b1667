/**
 * Reading numbers and choices from a widget's fields and attributes, with a message that
 * names the input and says what it takes:
 *
 *   parseInteger(field.value, { label: "The context", min: 1, max: 1_000_000, unit: "tokens" })
 *   // → 1024, or throws InputError("The context must be a whole number of tokens from 1 to 1,000,000.")
 *
 * A widget shows the error with `this.showError(err)` (widget.js) and computes nothing until
 * the reader fixes the field. Text is read as JavaScript's Number() reads it, after trimming
 * ("1e3" is 1000); "", "abc", "1,5", Infinity and NaN are refused; whole numbers stay within
 * Number.MAX_SAFE_INTEGER.
 * @module widgets/inputs
 */

/** A value the reader (or an embedding page) gave that the widget does not take. */
export class InputError extends Error {
  /**
   * @param {string} message what is wrong and what the input takes
   * @param {string|null} [input] the field's name (for aria-invalid), if any
   */
  constructor(message, input = null) {
    super(message);
    this.name = "InputError";
    this.input = input;
  }
}

/** 1000000 → "1,000,000"; -1 → "−1"; 0.25 → "0.25". */
export function formatNumber(n) {
  const text = n.toLocaleString("en", { maximumFractionDigits: 6 });
  return text.replace(/^-/, "−");
}

/**
 * What a range takes, in words: "a whole number of tokens from 1 to 1,000,000",
 * "a number of at least 0", "a whole number, 0 or more".
 * @param {{min?: number, max?: number, integer?: boolean, unit?: string}} spec
 */
export function describeRange({ min = -Infinity, max = Infinity, integer = false, unit = "" } = {}) {
  let text = integer ? "a whole number" : "a number";
  if (unit) text += ` of ${unit}`;
  if (Number.isFinite(min) && Number.isFinite(max)) return `${text} from ${formatNumber(min)} to ${formatNumber(max)}`;
  if (min === 0) return `${text}, 0 or more`;
  if (Number.isFinite(min)) return `${text} of at least ${formatNumber(min)}`;
  if (Number.isFinite(max)) return `${text} of at most ${formatNumber(max)}`;
  return text;
}

/**
 * The number written in `text`, checked against a range.
 * @param {string|number|null|undefined} text a field's value or an attribute
 * @param {{label: string, name?: string, min?: number, max?: number, integer?: boolean, unit?: string}} spec
 *   `label` names the input in the message ("The context", "Seed"); `name` goes on the error
 * @returns {number}
 * @throws {InputError}
 */
export function parseNumber(text, spec) {
  const value = readNumber(text);
  const { min = -Infinity, integer = false } = spec;
  const max = integer ? Math.min(spec.max ?? Infinity, Number.MAX_SAFE_INTEGER) : (spec.max ?? Infinity);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
    throw new InputError(`${spec.label} must be ${describeRange({ ...spec, max: spec.max ?? Infinity })}.`, spec.name ?? null);
  }
  return value;
}

/**
 * The number written in `text` as JavaScript's Number() reads it after trimming, with no
 * range and no message: NaN for "" or anything that is not a number (the caller says what
 * is wrong, e.g. about two fields together).
 * @param {string|number|null|undefined} text
 * @returns {number}
 */
export function readNumber(text) {
  const raw = String(text ?? "").trim();
  return raw === "" ? NaN : Number(raw);
}

/** parseNumber for whole numbers. */
export function parseInteger(text, spec) {
  return parseNumber(text, { ...spec, integer: true });
}

/** “a”, “b” or “c” */
function orList(names) {
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}` : names.join("");
}

/**
 * `value` if it is one of `choices`, else an InputError listing them.
 * @param {string|null|undefined} value
 * @param {Array<string | [string, string]>} choices values, or [value, label] pairs (the label is shown)
 * @param {{label: string, name?: string}} spec
 * @returns {string}
 * @throws {InputError}
 */
export function parseChoice(value, choices, spec) {
  const pairs = choices.map((c) => (Array.isArray(c) ? c : [c, c]));
  if (pairs.some(([v]) => v === value)) return value;
  const names = pairs.map(([v, label]) => (label === v ? `“${v}”` : `“${label}” (${v})`));
  throw new InputError(`${spec.label} must be one of ${orList(names)}.`, spec.name ?? null);
}

/**
 * The value of a `<select>` if it is one of its options (a script or an attribute can set
 * one that is not: the select then holds ""), else an InputError listing the options.
 * @param {HTMLSelectElement} select
 * @param {{label: string}} spec
 * @returns {string}
 */
export function parseSelect(select, spec) {
  const options = [...select.options].map((o) => [o.value, o.textContent.trim()]);
  if (select.selectedIndex >= 0 && options.some(([v]) => v === select.value)) return select.value;
  const names = options.map(([, label]) => `“${label}”`);
  throw new InputError(`${spec.label} must be one of ${orList(names)}.`, select.name || null);
}
