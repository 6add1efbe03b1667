/**
 * What <tx-predict> does with a guess and an answer, apart from the page: read the reader's
 * number ("4,722,432", "4.7M"), find the answer in a demos result by its path, read the
 * tolerance and the choices attributes, and say a number the way the widget shows it.
 * @module widgets/guess
 */
import { InputError, parseNumber, readNumber } from "./inputs.js";

const SUFFIX = { k: 1e3, K: 1e3, M: 1e6, B: 1e9, G: 1e9 };

/** A number for the reader: 4,722,432; 0.1587; 3.8e-7 as "3.8 × 10⁻⁷". */
export function formatAnswer(x) {
  if (typeof x !== "number") return typeof x === "string" ? x : JSON.stringify(x);
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e21) return x.toLocaleString("en").replace(/^-/, "−");
  const abs = Math.abs(x);
  if (abs >= 1e-3 && abs < 1e15) return x.toLocaleString("en", { maximumSignificantDigits: 4 }).replace(/^-/, "−");
  const [mantissa, exponent] = x.toExponential(2).split("e");
  const sup = String(Number(exponent)).replace(/[-0-9]/g, (c) => "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"["-0123456789".indexOf(c)]);
  return `${Number(mantissa)} × 10${sup}`.replace(/^-/, "−");
}

/** The reader's typed number: "4,722,432", "4.7M", "1e6", "−3" (the minus sign too). */
export function readGuess(text) {
  let raw = String(text ?? "")
    .trim()
    .replace(/^[−–]/, "-");
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?(\s*[kKMBG])?$/.test(raw)) raw = raw.replace(/,/g, "");
  const suffix = raw.match(/^(.*\d)\s*([kKMBG])$/);
  if (suffix) return readNumber(suffix[1]) * SUFFIX[suffix[2]];
  return readNumber(raw);
}

/** `value` at `path` ("a.0.b", "-1" for the last item, "length" of a list); throws when missing. */
export function pick(value, path) {
  let here = value;
  for (const key of path ? path.split(".") : []) {
    if (Array.isArray(here) && key === "length") here = here.length;
    else if (Array.isArray(here) && /^-?\d+$/.test(key) && here.at(Number(key)) !== undefined) here = here.at(Number(key));
    else if (here && typeof here === "object" && !Array.isArray(here) && Object.hasOwn(here, key)) here = here[key];
    else {
      const has = Array.isArray(here)
        ? `a list of ${here.length}`
        : here && typeof here === "object"
          ? `the keys ${Object.keys(here).slice(0, 12).join(", ")}`
          : "no keys";
      throw new Error(`This exercise is set up wrongly: its answer “${path.slice(0, 60)}” is not in the result (at “${key.slice(0, 30)}” there is ${has}).`);
    }
  }
  return here;
}

/** "5%" → {relative: 0.05}; "0.01" → {absolute: 0.01}. */
export function parseTolerance(text) {
  const raw = String(text).trim();
  const percent = raw.endsWith("%");
  const value = parseNumber(percent ? raw.slice(0, -1) : raw, {
    label: "The tolerance",
    min: 0,
    max: percent ? 100 : Infinity,
    unit: percent ? "percent" : "",
  });
  return percent ? { relative: value / 100 } : { absolute: value };
}

export function within(guess, answer, tolerance) {
  if (tolerance.relative !== undefined) return Math.abs(guess - answer) <= tolerance.relative * Math.abs(answer) + 1e-12;
  return Math.abs(guess - answer) <= tolerance.absolute + 1e-12 * Math.abs(answer);
}

/** "1: All on token 0 | 0.25: evenly" → [{value, label}]. */
export function parseChoices(text) {
  const choices = String(text)
    .split("|")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const colon = part.indexOf(":");
      if (colon <= 0 || !part.slice(colon + 1).trim()) throw new InputError("Each of the choices must be written “value: label”, separated by |.");
      return { value: part.slice(0, colon).trim(), label: part.slice(colon + 1).trim() };
    });
  if (choices.length < 2) throw new InputError("The choices must be at least two, written “value: label | value: label”.");
  if (choices.length > 12) throw new InputError("The choices must be at most 12.");
  return choices;
}

/** Whether a choice's written value stands for the computed answer. */
export function matches(written, answer, tolerance) {
  if (typeof answer === "number") {
    const value = readNumber(written);
    return Number.isFinite(value) && within(value, answer, tolerance.relative !== undefined ? { relative: Math.max(tolerance.relative, 1e-9) } : tolerance);
  }
  const shown = typeof answer === "string" ? answer : JSON.stringify(answer);
  return written.replace(/\s+/g, "") === shown.replace(/\s+/g, "") || written === shown;
}
