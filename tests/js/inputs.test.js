// Tests for the widgets' shared input checks (site_src/widgets/inputs.js): numbers and
// choices read from fields and attributes, refused with a message that names the input and
// says what it takes. Run with: node --test tests/js/
// The widgets themselves, fed hostile values in a browser, are tests/browser/test_bad_input.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import { InputError, describeRange, formatNumber, parseChoice, parseInteger, parseNumber, parseSelect, readNumber } from "../../site_src/widgets/inputs.js";

const CONTEXT = { label: "The context", min: 1, max: 1_000_000, unit: "tokens" };

test("a whole number in range is read as JavaScript reads it, after trimming", () => {
  assert.equal(parseInteger("1024", CONTEXT), 1024);
  assert.equal(parseInteger("  7 \n", CONTEXT), 7);
  assert.equal(parseInteger("1e3", CONTEXT), 1000);
  assert.equal(parseInteger(16, CONTEXT), 16);
  assert.equal(parseNumber("0.25", { label: "p", min: 0, max: 1 }), 0.25);
  assert.equal(parseNumber("-3.5", { label: "x" }), -3.5);
});

test("anything else is refused with the input and its range named", () => {
  const message = "The context must be a whole number of tokens from 1 to 1,000,000.";
  for (const bad of [
    "",
    "   ",
    "abc",
    "1,5",
    "1.5",
    "0",
    "-1",
    "1e308",
    "1" + "0".repeat(400),
    "Infinity",
    "NaN",
    null,
    undefined,
    "123456789012345678901234567890",
    "naïve 東京",
    "🤖",
    "<img src=x onerror=alert(1)>",
  ]) {
    assert.throws(
      () => parseInteger(bad, CONTEXT),
      (err) => err instanceof InputError && err.message === message,
      String(bad),
    );
  }
  assert.throws(() => parseNumber("2", { label: "Top-p", min: 0, max: 1 }), { message: "Top-p must be a number from 0 to 1." });
});

test("whole numbers stay exact: no range without a top goes past 2^53", () => {
  assert.equal(parseInteger(String(2 ** 53 - 1), { label: "n", min: 0 }), 2 ** 53 - 1);
  assert.throws(() => parseInteger(String(2 ** 53 + 2), { label: "n", min: 0 }), { message: "n must be a whole number, 0 or more." });
});

test("ranges read as words", () => {
  assert.equal(describeRange({ min: 1, max: 32, integer: true }), "a whole number from 1 to 32");
  assert.equal(describeRange({ min: 0, integer: true }), "a whole number, 0 or more");
  assert.equal(describeRange({ min: 1 }), "a number of at least 1");
  assert.equal(describeRange({ max: 10, unit: "seconds" }), "a number of seconds of at most 10");
  assert.equal(describeRange({ min: -1_000_000, max: 1_000_000 }), "a number from −1,000,000 to 1,000,000");
  assert.equal(formatNumber(2 ** 31 - 1), "2,147,483,647");
});

test("a choice must be one of the list; the message lists them", () => {
  const presets = [
    ["gpt2-small", "GPT-2 small"],
    ["llama-7b-gqa", "LLaMA 7B"],
  ];
  assert.equal(parseChoice("gpt2-small", presets, { label: "The model" }), "gpt2-small");
  assert.throws(
    () => parseChoice("nope", presets, { label: "The model", name: "preset" }),
    (err) => err.message === "The model must be one of “GPT-2 small” (gpt2-small) or “LLaMA 7B” (llama-7b-gqa)." && err.input === "preset",
  );
  assert.throws(() => parseChoice("", ["ones", "random", "zeros"], { label: "q and k" }), { message: "q and k must be one of “ones”, “random” or “zeros”." });
});

test("a select that a script or an attribute set to no option is refused", () => {
  const options = [
    { value: "float32", textContent: "float32" },
    { value: "float16", textContent: "float16 " },
  ];
  const select = (value, selectedIndex) => ({ value, selectedIndex, options, name: "dtype" });
  assert.equal(parseSelect(select("float16", 1), { label: "The precision" }), "float16");
  assert.throws(
    () => parseSelect(select("", -1), { label: "The precision" }),
    (err) => err.message === "The precision must be one of “float32” or “float16”." && err.input === "dtype",
  );
});

test("readNumber reads as Number() does after trimming, and gives NaN for nothing", () => {
  assert.equal(readNumber(" -4 "), -4);
  assert.equal(readNumber("1e3"), 1000);
  assert.equal(readNumber(2.5), 2.5);
  assert.equal(readNumber("Infinity"), Infinity); // the caller decides: parseNumber refuses it
  for (const nothing of ["", "   ", null, undefined, "abc", "1,5"]) assert.ok(Number.isNaN(readNumber(nothing)), String(nothing));
});
