/**
 * The clickable heat maps of the "Looking inside" widgets: an HTML table whose cells are
 * buttons (so a reader can pick one by mouse, touch or keyboard), shaded with the labs' blue-
 * white-orange scale (format.js divergingColour), inside a box that scrolls sideways on a
 * narrow screen instead of widening the page. Each cell keeps its value in `data-value`.
 * @module widgets/grid
 */
import { divergingColour } from "./format.js";
import { escapeHtml } from "./base.js";

/**
 * @param {{name: string, caption: string, rows: number, cols: number,
 *   rowLabel: (r: number) => string, colLabel: (c: number) => string,
 *   cell: (r: number, c: number) => {value: number, shade: number, html: string, title: string, id?: number},
 *   corner?: string}} spec `shade` in [-1, 1] sets the colour; `html` is the cell's text (escaped by the
 *   caller); `id`, a token id, goes into `data-id`
 * @returns {string} HTML
 */
export function gridHTML({ name, caption, rows, cols, rowLabel, colLabel, cell, corner = "" }) {
  const head = Array.from({ length: cols }, (_, c) => `<th scope="col">${escapeHtml(colLabel(c))}</th>`).join("");
  const body = Array.from({ length: rows }, (_, r) => {
    const cells = Array.from({ length: cols }, (_, c) => {
      const { value, shade, html, title, id } = cell(r, c);
      return `<td data-r="${r}" data-c="${c}" data-value="${value}"${id === undefined ? "" : ` data-id="${id}"`} style="background:${divergingColour(shade)}"><button type="button" title="${escapeHtml(title)}">${html}</button></td>`;
    }).join("");
    return `<tr><th scope="row">${escapeHtml(rowLabel(r))}</th>${cells}</tr>`;
  }).join("");
  return `<figure class="grid-figure" data-name="${escapeHtml(name)}" data-rows="${rows}" data-cols="${cols}">
    <figcaption class="legend">${caption}</figcaption>
    <div class="scroll"><table class="grid"><thead><tr><th>${escapeHtml(corner)}</th>${head}</tr></thead><tbody>${body}</tbody></table></div>
  </figure>`;
}

/**
 * A (layer, head) heat map of `values` (L × nh, row-major), the rows and columns numbered.
 * @param {{name: string, caption: string, values: ArrayLike<number>, L: number, nh: number,
 *   shade?: (v: number) => number, text?: (v: number) => string, title: (l: number, h: number, v: number) => string}} spec
 *   `shade` defaults to the value over the largest |value|, `text` to two decimals
 */
export function headGridHTML({ name, caption, values, L, nh, shade, text = (v) => v.toFixed(2), title }) {
  const scale = maxAbs(values);
  shade ??= (v) => v / scale; // the largest |value| is the darkest
  return gridHTML({
    name,
    caption,
    rows: L,
    cols: nh,
    corner: "layer \\ head",
    rowLabel: String,
    colLabel: String,
    cell: (l, h) => {
      const v = values[l * nh + h];
      return { value: v, shade: shade(v), html: `<span class="cell-value">${text(v)}</span>`, title: title(l, h, v) };
    },
  });
}

/** Call `onPick(r, c)` when a cell of the grid named `name` inside `root` is clicked. */
export function onCellPick(root, name, onPick) {
  root.addEventListener("click", (event) => {
    const td = event.target.closest?.("td[data-r]");
    if (!td || td.closest("figure")?.dataset.name !== name) return;
    root.querySelectorAll(`figure[data-name="${name}"] td.picked`).forEach((el) => el.classList.remove("picked"));
    td.classList.add("picked");
    onPick(Number(td.dataset.r), Number(td.dataset.c));
  });
}

/** The largest |value| (at least a tiny number, so shades never divide by zero). */
export function maxAbs(values) {
  let max = 1e-12;
  for (const v of values) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  return max;
}

/**
 * Where a grid's focus goes on a key: the arrow keys move one cell (stopping at the edges),
 * Home and End go to the first and last column of the row.
 * @param {string} key `KeyboardEvent.key`
 * @param {number} row
 * @param {number} col
 * @param {number} rows
 * @param {number} cols
 * @returns {[number, number]|null} the new [row, col], or null for a key that does not move it
 */
export function gridStep(key, row, col, rows, cols) {
  const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  if (key in moves) return [Math.min(rows - 1, Math.max(0, row + moves[key][0])), Math.min(cols - 1, Math.max(0, col + moves[key][1]))];
  if (key === "Home") return [row, 0];
  if (key === "End") return [row, cols - 1];
  return null;
}
