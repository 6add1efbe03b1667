// The keyboard moves of the widgets' grids (site_src/widgets/grid.js gridStep).
import assert from "node:assert/strict";
import test from "node:test";

const { gridStep } = await import("../../site_src/widgets/grid.js");

test("gridStep: arrows move one cell and stop at the edges, Home and End go to the row's ends", () => {
  assert.deepEqual(gridStep("ArrowDown", 1, 2, 4, 5), [2, 2]);
  assert.deepEqual(gridStep("ArrowUp", 0, 2, 4, 5), [0, 2], "the top row stays");
  assert.deepEqual(gridStep("ArrowRight", 3, 4, 4, 5), [3, 4], "the last column stays");
  assert.deepEqual(gridStep("ArrowLeft", 3, 4, 4, 5), [3, 3]);
  assert.deepEqual(gridStep("Home", 2, 3, 4, 5), [2, 0]);
  assert.deepEqual(gridStep("End", 2, 0, 4, 5), [2, 4]);
  assert.equal(gridStep("a", 2, 3, 4, 5), null);
  assert.equal(gridStep("Enter", 2, 3, 4, 5), null);
});
