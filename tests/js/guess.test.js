// Tests for what <tx-predict> does with a guess and an answer (site_src/widgets/guess.js):
// the reader's number, the answer's path in a demos result, the tolerance and the choices.
// Run with: node --test tests/js/
// The widget itself, against the demos in a browser, is tests/browser/test_exercises.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import { formatAnswer, matches, parseChoices, parseTolerance, pick, readGuess, within } from "../../site_src/widgets/guess.js";

test("a guess may use thousands separators, a k/M/B suffix, exponents and a minus sign", () => {
  assert.equal(readGuess("4722432"), 4722432);
  assert.equal(readGuess(" 4,722,432 "), 4722432);
  assert.equal(readGuess("4.7M"), 4.7e6);
  assert.equal(readGuess("124 M"), 124e6);
  assert.equal(readGuess("1.5k"), 1500);
  assert.equal(readGuess("2B"), 2e9);
  assert.equal(readGuess("1e6"), 1e6);
  assert.equal(readGuess("−0.16"), -0.16);
  assert.equal(readGuess("-1,000"), -1000);
});

test("what is not a number reads as NaN", () => {
  for (const text of ["", "  ", "abc", "1,5", "12,34", "4.7X", "M", "1e400", null, undefined]) {
    assert.ok(!Number.isFinite(readGuess(text)), String(text));
  }
});

test("the answer is found by its path, lists by index, from the end and by length", () => {
  const result = {
    params: { total: 7 },
    rows: [
      [1, 2],
      [3, 4],
    ],
    probs: [0.5, 0.25],
  };
  assert.equal(pick(result, "params.total"), 7);
  assert.equal(pick(result, "rows.1.0"), 3);
  assert.equal(pick(result, "rows.-1.-1"), 4);
  assert.equal(pick(result, "probs.length"), 2);
  assert.equal(pick(0.73, ""), 0.73);
  assert.throws(() => pick(result, "params.nope"), /not in the result .*the keys total/);
  assert.throws(() => pick(result, "rows.5"), /a list of 2/);
});

test("a tolerance is relative with % and absolute without", () => {
  assert.deepEqual(parseTolerance("5%"), { relative: 0.05 });
  assert.deepEqual(parseTolerance("0.01"), { absolute: 0.01 });
  assert.throws(() => parseTolerance("abc"), /The tolerance must be a number/);
  assert.throws(() => parseTolerance("-1"), /0 or more/);
  assert.throws(() => parseTolerance("200%"), /from 0 to 100/);
  assert.ok(within(4.7e6, 4722432, { relative: 0.05 }));
  assert.ok(!within(4e6, 4722432, { relative: 0.05 }));
  assert.ok(within(-0.15, -0.1587, { absolute: 0.01 }));
  assert.ok(within(64, 64, { absolute: 0 }));
  assert.ok(!within(63, 64, { absolute: 0 }));
});

test("choices are value: label pairs; numbers match within the tolerance, lists and text as written", () => {
  const choices = parseChoices("1: All on token 0 | 0.25: Evenly: a quarter each");
  assert.deepEqual(choices, [
    { value: "1", label: "All on token 0" },
    { value: "0.25", label: "Evenly: a quarter each" },
  ]);
  assert.throws(() => parseChoices("only one: x"), /at least two/);
  assert.throws(() => parseChoices("a | b"), /value: label/);
  assert.ok(matches("1", 0.9999999, { relative: 0.05 }));
  assert.ok(!matches("0.25", 1, { relative: 0.05 }));
  assert.ok(matches("0", 4e-17, { absolute: 1e-6 }));
  assert.ok(matches("[6,768]", [6, 768], { relative: 0.05 }));
  assert.ok(matches("queen", "queen", { relative: 0.05 }));
  assert.ok(!matches("king", "queen", { relative: 0.05 }));
});

test("answers are shown with separators and four significant digits, never in e-notation", () => {
  assert.equal(formatAnswer(4722432), "4,722,432");
  assert.equal(formatAnswer(124.439808), "124.4");
  assert.equal(formatAnswer(-0.15865525), "−0.1587");
  assert.equal(formatAnswer(4.16e-17), "4.16 × 10⁻¹⁷");
  assert.equal(formatAnswer([6, 768]), "[6,768]");
  assert.equal(formatAnswer("queen"), "queen");
});
