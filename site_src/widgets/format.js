/**
 * How the labs show values that more than one of them shows: sizes and large numbers as
 * text, signed values as colour (formatBytes, escapeHtml and formatProb are in base.js;
 * formatNumber, for input messages, in inputs.js):
 *
 *   formatBinaryBytes(3 * 2 ** 20)  // "3.00 MiB": memory is sized in powers of two
 *   formatScientific(5.2e11)        // "5.20 × 10<sup>11</sup>" (HTML)
 *   divergingColour(-0.5)           // "rgb(148,173,228)": the heat maps' blue-white-orange scale
 * @module widgets/format
 */

/** Bytes in binary units (TiB, GiB, MiB, KiB, two decimals; whole bytes below 1 KiB). */
export function formatBinaryBytes(bytes) {
  const units = [
    [2 ** 40, "TiB"],
    [2 ** 30, "GiB"],
    [2 ** 20, "MiB"],
    [2 ** 10, "KiB"],
  ];
  const [scale, unit] = units.find(([s]) => bytes >= s) ?? [1, "B"];
  return `${(bytes / scale).toFixed(scale === 1 ? 0 : 2)} ${unit}`;
}

/** A positive number as "3.14 × 10<sup>23</sup>" (HTML, three significant digits); 0 as "0". */
export function formatScientific(x) {
  if (x === 0) return "0";
  const exp = Math.floor(Math.log10(x));
  return `${(x / 10 ** exp).toFixed(2)} × 10<sup>${exp}</sup>`;
}

/** Fill for v in [-1, 1] (clamped): orange above 0, blue below, white at 0. */
export function divergingColour(v) {
  const t = Math.max(-1, Math.min(1, v));
  const [r, g, b] = t >= 0 ? [230, 120, 20] : [40, 90, 200];
  const mix = (c) => Math.round(255 + (c - 255) * Math.abs(t));
  return `rgb(${mix(r)},${mix(g)},${mix(b)})`;
}
