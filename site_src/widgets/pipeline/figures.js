/**
 * The SVG and markup the pipeline figures are drawn with: a heatmap of a matrix (values kept
 * in `data-values` for the tests), row labels for tokens, and <option> lists.
 * @module widgets/pipeline/figures
 */
import { escapeHtml } from "../base.js";
import { visible } from "./text.js";

/** Heatmaps draw at most this many columns (the first ones). */
export const MAX_COLS = 64;

const LABEL_ROW = 12; // px: the height a row needs for its label (the figures' 10 px text)

/**
 * An SVG heatmap of `rows` (nested arrays), with the full-precision values in `data-values`.
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
  let cells = "";
  rows.forEach((r, i) => {
    r.forEach((v, j) => {
      const x = left + j * size;
      const y = top + i * rowH;
      const label = Number.isFinite(v) ? v.toPrecision(4) : v < 0 ? "−∞" : String(v);
      if (!Number.isFinite(v)) {
        cells += `<rect x="${x}" y="${y}" width="${size}" height="${rowH}" fill="none" stroke="currentColor" stroke-opacity="0.25"><title>row ${i}, col ${j}: ${label}</title></rect>`;
        if (numbers) cells += `<text x="${x + size / 2}" y="${y + rowH / 2 + 3}" text-anchor="middle">−∞</text>`;
        return;
      }
      const a = max > 0 ? Math.abs(v) / max : 0;
      const fill = v < 0 ? `url(#${id})` : "currentColor";
      cells += `<rect x="${x}" y="${y}" width="${size}" height="${rowH}" fill="${fill}" fill-opacity="${(0.08 + 0.92 * a).toFixed(3)}"><title>row ${i}, col ${j}: ${label}</title></rect>`;
      if (numbers) {
        const text = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
        cells += `<text x="${x + size / 2}" y="${y + rowH / 2 + 3}" text-anchor="middle" paint-order="stroke" stroke="var(--tx-bg, #fff)" stroke-width="2.5">${text}</text>`;
      }
    });
  });
  const labels = rowLabels
    .map((l, i) => `<text x="${left - 4}" y="${top + i * rowH + rowH / 2 + 3}" text-anchor="end">${escapeHtml(l.slice(0, 14))}</text>`)
    .join("");
  const [width, height] = [left + C * size + 4, top + R * rowH + 4];
  const json = JSON.stringify(rows.map((r) => r.map((v) => (Number.isFinite(v) ? v : null))));
  return `<figure class="pl-fig scroll" data-name="${escapeHtml(name)}" data-rows="${R}" data-cols="${C}" data-values='${json}'>
    <figcaption>${caption}</figcaption>
    <svg class="pl-heat" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img"
      aria-label="${escapeHtml(`${caption.replace(/<[^>]+>/g, "")}: ${R} rows by ${C} columns, largest magnitude ${max.toPrecision(3)}; hover a cell for its value`)}">
      <defs><pattern id="${id}" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
        <rect width="4" height="4" fill="currentColor" fill-opacity="0.25"/><line x1="0" y1="0" x2="0" y2="4" stroke="currentColor" stroke-width="2.5"/></pattern></defs>
      <text x="${left}" y="10">${escapeHtml(colLabel)}</text>${labels}${cells}
    </svg></figure>`;
}

/** Labels "0 Data", "1 ␣visual" ... for the rows of a figure. */
export function tokenLabels(model, ids) {
  return ids.map((id, i) => `${i} ${visible(model.tokenizer.tokenToString(id))}`);
}

/** <option>s 0..n-1 with a prefix. */
export function options(n, prefix, selected = 0) {
  return Array.from({ length: n }, (_, i) => `<option value="${i}"${i === selected ? " selected" : ""}>${prefix} ${i}</option>`).join("");
}
