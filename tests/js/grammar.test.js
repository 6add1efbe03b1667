// Tests for guided decoding's grammar and mask (site_src/runtime/grammar.js, token-mask.js).
// The automaton of each schema of the golden file must accept, and keep alive, exactly the texts
// that Outlines' regular expression for the schema matches fully or as a prefix
// (tests/js/make_grammar_fixture.py labels them with `regex`); the mask over a vocabulary must
// be the brute-force walk of every token's bytes. Run with: node --test tests/js/

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { SchemaError, compileSchema } from "../../site_src/runtime/grammar.js";
import { TokenMask, VocabularyTrie } from "../../site_src/runtime/token-mask.js";

const CASES = JSON.parse(readFileSync(new URL("./fixtures/grammar_cases.json", import.meta.url), "utf8"));
const utf8 = new TextEncoder();

/** The state after `bytes` (-1 once the text has left the language). */
function run(grammar, bytes) {
  let state = grammar.start;
  for (const byte of bytes) {
    state = grammar.next(state, byte);
    if (state < 0) return -1;
  }
  return state;
}

for (const { name, schema, regex, texts } of CASES) {
  test(`the automaton is Outlines' expression: ${name}`, () => {
    const grammar = compileSchema(schema);
    for (const [text, want] of texts) {
      const state = run(grammar, utf8.encode(text));
      const got = state < 0 ? "no" : grammar.accepts(state) ? "full" : "prefix";
      assert.equal(got, want, `${JSON.stringify(text)} against ${regex}`);
    }
  });

  test(`the shortest completion has bytesToEnd bytes: ${name}`, () => {
    const grammar = compileSchema(schema);
    // Follow, byte by byte, a transition that brings the end one byte closer.
    let state = grammar.start;
    const bytes = [];
    while (!grammar.accepts(state)) {
      const byte = [...Array(256).keys()].find((b) => {
        const to = grammar.next(state, b);
        return to >= 0 && grammar.bytesToEnd[to] === grammar.bytesToEnd[state] - 1;
      });
      bytes.push(byte);
      state = grammar.next(state, byte);
    }
    assert.equal(bytes.length, grammar.bytesToEnd[grammar.start]);
    const text = new TextDecoder().decode(Uint8Array.from(bytes));
    assert.deepEqual(texts.find(([t]) => t === text)?.[1] ?? "full", "full", text);
    JSON.parse(text); // the shortest text is JSON
  });
}

test("the mask over a vocabulary is the walk of each token's bytes", () => {
  const tokens = [
    '{"',
    "{",
    '"',
    "name",
    '":',
    ' "',
    "Ada",
    '",',
    " 3",
    "3",
    "}",
    "},",
    "é",
    "\u00e9t",
    "東京",
    ' "a',
    "a",
    "]",
    "[",
    ', "',
    "null",
    "\\",
    '\\"',
    " ",
    "",
  ];
  const bytes = tokens.map((t) => utf8.encode(t));
  // a token of one lone byte, as GPT-2's byte-level vocabulary has: the first byte of "東"
  bytes.push(Uint8Array.of(0xe6));
  const trie = new VocabularyTrie((id) => bytes[id], bytes.length, [3]);
  for (const { schema, texts } of CASES.slice(0, 3)) {
    const grammar = compileSchema(schema);
    const mask = new TokenMask(grammar, trie);
    const states = new Set([grammar.start, ...texts.map(([t]) => run(grammar, utf8.encode(t))).filter((s) => s >= 0)]);
    for (const state of states) {
      const { ids, next } = mask.allowed(state);
      const want = bytes.map((b, id) => [id, b.length && id !== 3 ? run({ ...grammar, start: state }, b) : -1]).filter(([, s]) => s >= 0);
      assert.deepEqual(
        [...ids].map((id, i) => [id, next[i]]).sort((a, b) => a[0] - b[0]),
        want,
        `state ${state}`,
      );
      // Within a budget: only the tokens after which the text can still end in time.
      for (const left of [0, 1, 5]) {
        const within = mask.allowedWithin(state, left);
        assert.deepEqual(
          within.ids.slice().sort((a, b) => a - b),
          want.filter(([, s]) => grammar.bytesToEnd[s] <= left).map(([id]) => id),
        );
      }
    }
  }
});

test("what the compiler does not support is refused, by name and place", () => {
  const refused = (schema, pattern) =>
    assert.throws(
      () => compileSchema(schema),
      (err) => err instanceof SchemaError && pattern.test(err.message),
      JSON.stringify(schema),
    );
  refused({ type: "object", properties: { a: { type: "string", pattern: "x+" } } }, /properties\.a: “pattern” is not supported/);
  refused({ anyOf: [{ type: "string" }] }, /“type” must be one of object, array, string, integer, number, boolean, null/);
  refused({ type: ["string", "null"] }, /“type” must be one of/);
  refused({ type: "integer", minimum: 0 }, /“minimum” is not supported here \(a integer takes no other keyword\)/);
  refused({ type: "object" }, /an object needs “properties”/);
  refused({ type: "array" }, /an array needs “items”/);
  refused({ type: "array", items: { type: "string", format: "date" } }, /items: “format” is not supported/);
  refused({ type: "string", minLength: 3, maxLength: 2 }, /maxLength 2 is below minLength 3/);
  refused({ type: "string", maxLength: -1 }, /“maxLength” must be a whole number from 0 to 256/);
  refused({ type: "array", items: { type: "integer" }, maxItems: 1000 }, /“maxItems” must be a whole number from 0 to 256, got 1000/);
  refused({ enum: [] }, /“enum” must be a non-empty list/);
  refused({ enum: [{ a: 1 }] }, /enum and const values must be strings, numbers, booleans or null/);
  refused("string", /the schema must be a JSON object such as \{"type": "string"\}, not a string/);
  refused(1e308, /not a number\.$/);
  refused({ type: "array", items: [1] }, /items must be a JSON object .* not a list/);
  const nested = (depth) => (depth === 0 ? { type: "string", maxLength: 256 } : { type: "array", items: nested(depth - 1), maxItems: 256 });
  refused(nested(2), /too large/);
});
