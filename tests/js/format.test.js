// Tests for the labs' shared formatters (site_src/widgets/format.js): sizes in binary units,
// large numbers in scientific notation, the heat maps' diverging colour.
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { test } from "node:test";

import { divergingColour, formatBinaryBytes, formatScientific } from "../../site_src/widgets/format.js";

test("memory sizes read in binary units, two decimals, whole bytes below 1 KiB", () => {
  assert.equal(formatBinaryBytes(0), "0 B");
  assert.equal(formatBinaryBytes(1023), "1023 B");
  assert.equal(formatBinaryBytes(1024), "1.00 KiB");
  assert.equal(formatBinaryBytes(3 * 2 ** 20), "3.00 MiB");
  assert.equal(formatBinaryBytes(2 ** 30), "1.00 GiB");
  assert.equal(formatBinaryBytes(1.5 * 2 ** 40), "1.50 TiB");
});

test("large numbers read as a mantissa with two decimals times a power of ten", () => {
  assert.equal(formatScientific(5.2e11), "5.20 × 10<sup>11</sup>");
  assert.equal(formatScientific(3.14159e23), "3.14 × 10<sup>23</sup>");
  assert.equal(formatScientific(7), "7.00 × 10<sup>0</sup>");
  assert.equal(formatScientific(0), "0");
});

test("the diverging colour is white at 0, orange at 1, blue at -1, clamped beyond", () => {
  assert.equal(divergingColour(0), "rgb(255,255,255)");
  assert.equal(divergingColour(1), "rgb(230,120,20)");
  assert.equal(divergingColour(-1), "rgb(40,90,200)");
  assert.equal(divergingColour(5), divergingColour(1));
  assert.equal(divergingColour(-0.5), "rgb(148,173,228)");
});
