/**
 * The SVG and markup the pipeline figures are drawn with: a heatmap of a matrix (values kept
 * in `data-values` for the tests), row labels for tokens, and <option> lists.
 * @module widgets/pipeline/figures
 */
import { escapeHtml, visible } from "../base.js";

/** Heatmaps draw at most this many columns (the first ones). */
export const MAX_COLS = 64;

const LABEL_ROW = 12; // px: the height a row needs for its label (the figures' 10 px text)

/**
 * Shades of |value| a heatmap draws: one SVG path per shade and sign instead of one element per
 * cell, so a 32 × 64 map is about 30 elements, not 4,000 (which took the browser half a second
 * to lay out at each keystroke in the prompt).
 */
const SHADES = 16;

/** A closed box path (SVG path data) for one cell. */
const box = (x, y, w, h) => `M${x} ${y}h${w}v${h}h${-w}z`;

/** How a cell that holds no finite number reads (masked attention scores are −∞). */
const nonFiniteLabel = (v) => (v < 0 ? "−∞" : String(v));

/**
 * An SVG heatmap of `rows` (nested arrays), with the full-precision values in `data-values`
 * and, under it, a line that shows the value of the cell under the pointer or finger
 * (`showCellValues` wires it up once per shadow root).
 * Shade: darker = larger |value|; negative cells are hatched, so sign reads without colour.
 * @param {number[][]} rows
 * @param {{name: string, caption: string, rowLabels?: string[], colLabel?: string, cell?: number, numbers?: boolean}} options
 */
export function heatmap(rows, { name, caption, rowLabels = [], colLabel = "", cell = 0, numbers = false }) {
  const R = rows.length;
  const C = R ? rows[0].length : 0;
  const size = cell || (numbers ? 34 : Math.max(4, Math.min(14, Math.floor(560 / Math.max(C, 1)))));
  // Rows are never shorter than a row label's line, so labels cannot overlap (narrow cells stay narrow).
  const rowH = rowLabels.length ? Math.max(size, LABEL_ROW) : size;
  const left = rowLabels.length ? 86 : 4;
  const top = 14;
  let max = 0;
  for (const r of rows) for (const v of r) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  const id = `neg-${name.replace(/[^a-z0-9]/gi, "")}-${Math.random().toString(36).slice(2, 7)}`;
  const shades = new Map(); // "+3" / "-3" (sign, shade) -> path data of its cells
  const nonFinite = []; // [row, col, label] of the cells with no finite value
  let outlines = "";
  let numbersText = "";
  rows.forEach((r, i) => {
    r.forEach((v, j) => {
      const x = left + j * size;
      const y = top + i * rowH;
      const finite = Number.isFinite(v);
      if (finite) {
        const key = `${v < 0 ? "-" : "+"}${max > 0 ? Math.round((Math.abs(v) / max) * (SHADES - 1)) : 0}`;
        shades.set(key, (shades.get(key) || "") + box(x, y, size, rowH));
      } else {
        outlines += box(x, y, size, rowH);
        nonFinite.push([i, j, nonFiniteLabel(v)]);
      }
      if (numbers) {
        const text = !finite ? "−∞" : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
        const halo = finite ? ` paint-order="stroke" stroke="var(--tx-bg, #fff)" stroke-width="2.5"` : "";
        numbersText += `<text x="${x + size / 2}" y="${y + rowH / 2 + 3}" text-anchor="middle"${halo}>${text}</text>`;
      }
    });
  });
  const cells = [...shades]
    .map(([key, d]) => {
      const opacity = (0.08 + (0.92 * Number(key.slice(1))) / (SHADES - 1)).toFixed(3);
      return `<path d="${d}" fill="${key[0] === "-" ? `url(#${id})` : "currentColor"}" fill-opacity="${opacity}"/>`;
    })
    .join("");
  const outlined = outlines ? `<path d="${outlines}" fill="none" stroke="currentColor" stroke-opacity="0.25"/>` : "";
  const labels = rowLabels
    .map((l, i) => `<text x="${left - 4}" y="${top + i * rowH + rowH / 2 + 3}" text-anchor="end">${escapeHtml(l.slice(0, 14))}</text>`)
    .join("");
  const [width, height] = [left + C * size + 4, top + R * rowH + 4];
  const json = JSON.stringify(rows.map((r) => r.map((v) => (Number.isFinite(v) ? v : null))));
  return `<figure class="pl-fig scroll" data-name="${escapeHtml(name)}" data-rows="${R}" data-cols="${C}" data-values='${json}'${
    nonFinite.length ? ` data-non-finite='${JSON.stringify(nonFinite)}'` : ""
  }>
    <figcaption>${caption}</figcaption>
    <svg class="pl-heat" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" data-cells="${left} ${top} ${size} ${rowH}"
      aria-label="${escapeHtml(`${caption.replace(/<[^>]+>/g, "")}: ${R} rows by ${C} columns, largest magnitude ${max.toPrecision(3)}; point at or tap a cell for its value`)}">
      <defs><pattern id="${id}" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
        <rect width="4" height="4" fill="currentColor" fill-opacity="0.25"/><line x1="0" y1="0" x2="0" y2="4" stroke="currentColor" stroke-width="2.5"/></pattern></defs>
      <text x="${left}" y="10">${escapeHtml(colLabel)}</text>${labels}${cells}${outlined}${numbersText}
    </svg><p class="pl-readout">Point at or tap a cell to read its value.</p></figure>`;
}

const parsed = new WeakMap(); // figure -> its values and non-finite labels, read once (pointermove is frequent)

/** The readout line of a heatmap cell: "row 2, col 5: 0.1234" (−∞ for a masked score). */
function cellReading(figure, row, col) {
  if (!parsed.has(figure)) {
    const nonFinite = JSON.parse(figure.dataset.nonFinite || "[]");
    parsed.set(figure, { values: JSON.parse(figure.dataset.values), nonFinite: new Map(nonFinite.map(([i, j, label]) => [`${i},${j}`, label])) });
  }
  const { values, nonFinite } = parsed.get(figure);
  const value = values[row][col];
  return `row ${row}, col ${col}: ${value !== null ? value.toPrecision(4) : (nonFinite.get(`${row},${col}`) ?? "not a number")}`;
}

const wired = new WeakSet();

/**
 * Show the value of the heatmap cell under the pointer (or where a finger taps) in the line
 * under that heatmap, for every heatmap drawn now or later in `root` (once per root).
 * @param {ShadowRoot} root
 */
export function showCellValues(root) {
  if (wired.has(root)) return;
  wired.add(root);
  const show = (event) => {
    const svg = event.target.closest?.("svg.pl-heat");
    const figure = svg?.closest("figure.pl-fig");
    const readout = figure?.querySelector(".pl-readout");
    if (!readout) return;
    const [left, top, w, h] = svg.dataset.cells.split(" ").map(Number);
    const bounds = svg.getBoundingClientRect();
    const x = (event.clientX - bounds.left) * (Number(svg.getAttribute("width")) / bounds.width);
    const y = (event.clientY - bounds.top) * (Number(svg.getAttribute("height")) / bounds.height);
    const [row, col] = [Math.floor((y - top) / h), Math.floor((x - left) / w)];
    if (row < 0 || col < 0 || row >= Number(figure.dataset.rows) || col >= Number(figure.dataset.cols)) return;
    const reading = cellReading(figure, row, col);
    if (readout.textContent !== reading) readout.textContent = reading;
  };
  root.addEventListener("pointermove", show);
  root.addEventListener("pointerdown", show);
}

/** Labels "0 Data", "1 ␣visual" ... for the rows of a figure. */
export function tokenLabels(model, ids) {
  return ids.map((id, i) => `${i} ${visible(model.tokenizer.tokenToString(id))}`);
}

/** <option>s 0..n-1 with a prefix. */
export function options(n, prefix, selected = 0) {
  return Array.from({ length: n }, (_, i) => `<option value="${i}"${i === selected ? " selected" : ""}>${prefix} ${i}</option>`).join("");
}
