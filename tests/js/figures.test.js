// Tests for the pipeline figures' heatmap (site_src/widgets/pipeline/figures.js): every cell is
// drawn once, in the shade of its |value| and hatched when negative; cells with no finite value
// are outlined and named in data-non-finite; the values stay in data-values.
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { test } from "node:test";

const { heatmap } = await import("../../site_src/widgets/pipeline/figures.js");

const SHADES = 16;
const attr = (html, name) =>
  html
    .match(new RegExp(`${name}='([^']*)'|${name}="([^"]*)"`))
    .slice(1)
    .find((v) => v !== undefined);

/** Cell (row, col) -> {fill, opacity} of the path that draws it, from the figure's markup. */
function drawnCells(html) {
  const [left, top, w, h] = attr(html, "data-cells").split(" ").map(Number);
  const cells = new Map();
  for (const [, d, fill, opacity] of html.matchAll(/<path d="([^"]*)" fill="([^"]*)"(?: fill-opacity="([^"]*)")?/g)) {
    for (const [, x, y] of d.matchAll(/M([\d.]+) ([\d.]+)h/g)) {
      const key = `${(Number(y) - top) / h},${(Number(x) - left) / w}`;
      assert.ok(!cells.has(key), `cell ${key} drawn twice`);
      cells.set(key, { fill, opacity: opacity === undefined ? null : Number(opacity) });
    }
  }
  return cells;
}

test("each finite cell is drawn once, shaded by |value| and hatched when negative", () => {
  const rows = [
    [1, -0.5, 0, 0.26],
    [-0.1, 0.75, -1, 0.5],
  ];
  const html = heatmap(rows, { name: "qkv", caption: "Q", rowLabels: ["0 a", "1 b"] });
  const cells = drawnCells(html);
  assert.equal(cells.size, 8);
  rows.forEach((r, i) =>
    r.forEach((v, j) => {
      const cell = cells.get(`${i},${j}`);
      const shade = Math.round(Math.abs(v) * (SHADES - 1)); // the largest |value| is 1
      assert.equal(cell.opacity, Number((0.08 + (0.92 * shade) / (SHADES - 1)).toFixed(3)), `cell ${i},${j}`);
      assert.equal(cell.fill.startsWith("url(#neg-qkv-"), v < 0, `cell ${i},${j}: ${cell.fill}`);
    }),
  );
  assert.deepEqual(JSON.parse(attr(html, "data-values")), rows);
});

test("a 32 x 64 map is one path per shade and sign, not an element per cell", () => {
  const rows = Array.from({ length: 32 }, (_, i) => Array.from({ length: 64 }, (_, j) => Math.sin(i * 64 + j)));
  const html = heatmap(rows, { name: "big", caption: "big" });
  assert.equal(drawnCells(html).size, 32 * 64);
  assert.ok((html.match(/<path /g) || []).length <= 2 * SHADES);
  assert.ok(!html.includes("<title>"));
});

test("a cell with no finite value is outlined and named, its value null", () => {
  const rows = [
    [0.5, -Infinity],
    [NaN, -0.25],
  ];
  const html = heatmap(rows, { name: "masked", caption: "masked", numbers: true });
  const cells = drawnCells(html);
  assert.deepEqual(cells.get("0,1"), { fill: "none", opacity: null });
  assert.deepEqual(cells.get("1,0"), { fill: "none", opacity: null });
  assert.equal(cells.get("0,0").fill, "currentColor");
  assert.deepEqual(JSON.parse(attr(html, "data-non-finite")), [
    [0, 1, "−∞"],
    [1, 0, "NaN"],
  ]);
  assert.deepEqual(JSON.parse(attr(html, "data-values")), [
    [0.5, null],
    [null, -0.25],
  ]);
  assert.deepEqual(
    [...html.matchAll(/<text [^>]*text-anchor="middle"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]),
    ["0.50", "−∞", "−∞", "-0.25"],
  );
});
