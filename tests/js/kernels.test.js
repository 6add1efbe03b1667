// Tests for site_src/widgets/pipeline/kernels.js against NumPy.
// Run with: node --test tests/js/
// The fixture is written by tests/js/make_kernel_fixture.py (tests/js/test_kernel_fixture.py
// checks that it is what that script computes now).
//
// Tolerance: |got - want| <= RTOL * |want| + ATOL, with RTOL = 1e-5 (float32 carries about
// 7 digits; the kernels round to float32 at the same points as the reference, so they agree
// to an ulp or two) and ATOL = 1e-6 for values that cancel to near zero (the data are O(1)).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as kernels from "../../site_src/widgets/pipeline/kernels.js";

const RTOL = 1e-5;
const ATOL = 1e-6;

const here = (relative) => new URL(relative, import.meta.url);
const { cases } = JSON.parse(readFileSync(here("./fixtures/pipeline_kernels.json"), "utf8"));

/** Fixture arguments as the kernels take them: every list a flat Float32Array, by role in objects. */
function argument(value) {
  if (Array.isArray(value)) return Float32Array.from(value.flat(Infinity));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, argument(v)]));
  }
  return value;
}

/** How each kernel is called with a case's arguments (the one table the cases run through). */
const CALLS = {
  layerNorm: (a) => kernels.layerNorm(a.x, a.T, a.C, a.weight, a.bias, a.eps),
  rowStats: (a) => kernels.rowStats(a.x, a.T, a.C),
  linear: (a) => kernels.linear(a.x, a.T, a.W, a.b),
  gelu: (a) => kernels.gelu(a.x),
  add: (a) => kernels.add(a.a, a.b),
  maxAbsDiff: (a) => kernels.maxAbsDiff(a.a, a.b),
  slice2d: (a) => kernels.slice2d(a.x, a.T, a.C, a.c0, a.c1),
  traceBlock: (a) => kernels.traceBlock(a.x, a.w, a.probs, a),
};

/**
 * Compare `got` with `want` (nested by shape; a typed array against its flattened values;
 * null meaning -Infinity), pushing "path: got vs want" for each mismatch.
 * @returns {number} the largest |got - want| / (|want| + ATOL / RTOL) seen, a relative error
 */
function compare(got, want, path, mismatches) {
  if (want === null) {
    if (got !== -Infinity) mismatches.push(`${path}: ${got} vs -Infinity`);
    return 0;
  }
  if (typeof want === "number") {
    const err = Math.abs(got - want);
    if (!(err <= RTOL * Math.abs(want) + ATOL)) mismatches.push(`${path}: ${got} vs ${want}`);
    return err / (Math.abs(want) + ATOL / RTOL);
  }
  if (Array.isArray(want)) {
    const flat = ArrayBuffer.isView(got);
    const expected = flat ? want.flat(Infinity) : want;
    if (!flat && !Array.isArray(got)) {
      mismatches.push(`${path}: ${typeof got} vs an array`);
      return 0;
    }
    if (got.length !== expected.length) {
      mismatches.push(`${path}: length ${got.length} vs ${expected.length}`);
      return 0;
    }
    let worst = 0;
    for (let i = 0; i < expected.length; i++) worst = Math.max(worst, compare(got[i], expected[i], `${path}[${i}]`, mismatches));
    return worst;
  }
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), `${path}: keys`);
  let worst = 0;
  for (const key of Object.keys(want)) worst = Math.max(worst, compare(got[key], want[key], `${path}.${key}`, mismatches));
  return worst;
}

test("the fixture covers every kernel, and every case names one", () => {
  assert.deepEqual(Object.keys(CALLS).sort(), Object.keys(kernels).sort());
  const covered = new Set(cases.map((c) => c.kernel));
  for (const name of Object.keys(CALLS)) assert.ok(covered.has(name), `no case for ${name}`);
  for (const c of cases) assert.ok(CALLS[c.kernel], `${c.name}: unknown kernel ${c.kernel}`);
});

test("kernels.js imports nothing (it runs under plain node, without the DOM or fetch)", () => {
  const source = readFileSync(here("../../site_src/widgets/pipeline/kernels.js"), "utf8");
  assert.doesNotMatch(source, /^\s*import\b|\bimport\(/m);
});

for (const c of cases) {
  test(`${c.kernel}: ${c.name}`, (t) => {
    const mismatches = [];
    const worst = compare(CALLS[c.kernel](argument(c.args)), c.expected, c.kernel, mismatches);
    const shown = mismatches
      .slice(0, 5)
      .map((m) => `  ${m}`)
      .join("\n");
    assert.equal(mismatches.length, 0, `${mismatches.length} values off by more than ${RTOL} relative + ${ATOL}; first ones:\n${shown}`);
    t.diagnostic(`largest relative error ${worst.toExponential(2)}`);
  });
}

test("a mismatch is caught (the comparison is not vacuous)", () => {
  const c = cases.find((k) => k.kernel === "linear");
  const args = argument(c.args);
  args.b = args.b.map((v) => v + 1e-3);
  const mismatches = [];
  compare(CALLS.linear(args), c.expected, "linear", mismatches);
  assert.ok(mismatches.length > 0);
});
