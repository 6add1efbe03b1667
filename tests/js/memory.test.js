// Tests for the memory guard's pure parts: the estimate (variants.js peakMemoryBytes,
// memoryFit), the device's figure and the budget (memory.js), the wording and the
// out-of-memory patterns (errors.js).
// Run with: node --test tests/js/
// The browser side (the guard before any download, the offers, a failed allocation) is
// tests/browser/test_memory_guard.py.

import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";

import { MEMORY_OFFERS, isOutOfMemory, memoryAmount, memoryMessage } from "../../site_src/runtime/errors.js";
import { TAB_SHARE, chooseForMemory, deviceMemoryGB, memoryBudgetBytes, memoryChoice, memoryProblem } from "../../site_src/runtime/memory.js";
import { MEMORY, memoryFit, parameterCount, peakMemoryBytes } from "../../site_src/runtime/variants.js";

const ROOT = new URL("../../", import.meta.url);
/** The exported manifests this checkout has (the book's model always after `make model`; any other built). */
const MODELS = new URL("build/models/", ROOT);
const MANIFESTS = (existsSync(MODELS) ? readdirSync(MODELS) : [])
  .map((name) => new URL(`${name}/manifest.json`, MODELS))
  .filter((url) => existsSync(url))
  .map((url) => JSON.parse(readFileSync(url, "utf8")));

const GPT2_SMALL = { n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, vocab_size: 50257, eos_token_id: 50256 };
const file = (path, role) => ({ path, bytes: 1, sha256: "x", ...(role ? { role } : {}) });
/** A manifest of GPT-2 small's shape with the site's four variants (the files do not matter to the estimate). */
const SMALL = {
  config: GPT2_SMALL,
  default_variants: { webgpu: "q4", wasm: "q8x" },
  variant_order: { webgpu: ["q4", "fp32"], wasm: ["q8x", "q4x", "q8", "fp32", "q4"] }, // model_export's VARIANT_ORDER
  variants: [
    { name: "q8x", dtype: "int8", backends: ["wasm"], files: [file("q8x/model.onnx", "graph"), file("q8x/expand.json", "index"), file("q4x/w.0", "packed")] },
    { name: "q4x", dtype: "int4", backends: ["wasm"], files: [file("q4x/model.onnx", "graph"), file("q4x/expand.json", "index"), file("q4x/w.0", "packed")] },
    { name: "q4", dtype: "int4", backends: ["webgpu", "wasm"], files: [file("q4/model.onnx", "graph")] },
    { name: "q8", dtype: "int8", backends: ["wasm"], files: [file("q8/model.onnx", "graph"), file("q8/model.onnx.data.0", "data")] },
    { name: "fp32", dtype: "float32", backends: ["webgpu", "wasm"], files: [file("fp32/model.onnx", "graph")] },
  ],
};
const byName = (manifest, name) => manifest.variants.find((v) => v.name === name);

test("the parameter count is GPT-2 small's published 124,439,808", () => {
  assert.equal(parameterCount(GPT2_SMALL), 124439808);
});

/** The site's own rows (2 threads) of the committed browser benchmarks, by variant: browser.json's
 * (prefill up to 512 tokens and long contexts) where it has the variant, else browser-variants.json's. */
const MEASURED = new Map(
  ["browser-variants", "browser"] // later files win
    .map((name) => new URL(`bench/results/${name}.json`, ROOT))
    .filter((url) => existsSync(url))
    .flatMap((url) => JSON.parse(readFileSync(url, "utf8")).summary)
    .filter((row) => row.tuning === "site" && row.threads === 2 && !row.error)
    .map((row) => [row.variant, row]),
);

test("the estimate reproduces the peaks bench/browser.py measured on GPT-2 small's shape", () => {
  for (const name of ["q8x", "q4x"]) assert.ok(MEASURED.has(name), `bench/results/browser.json has no ${name} row`);
  const kv = 2 * 12 * 1024 * 768;
  for (const [name, row] of MEASURED) {
    if (!byName(SMALL, name)) continue;
    // Load and short generations: the estimate without the full-context KV cache.
    const short = peakMemoryBytes(SMALL, byName(SMALL, name)) - kv * MEMORY.kvBytesPerValue;
    const measured = row.peak_browser_memory_mb.median * 1e6;
    assert.ok(Math.abs(short - measured) < 0.1 * measured, `${name}: estimate ${short}, measured ${measured}`);
    // Decoding after 1,000 cached positions: the full estimate covers it.
    if (row.peak_browser_memory_long_contexts_mb?.median) {
      assert.ok(peakMemoryBytes(SMALL, byName(SMALL, name)) >= 0.95 * row.peak_browser_memory_long_contexts_mb.median * 1e6, name);
    }
  }
});

test("the estimate is weights x bytes per weight + the full KV cache + the runtime, for every exported manifest", () => {
  assert.ok(MANIFESTS.length > 0, "no exported manifest under build/models/ (run make model)");
  for (const manifest of [SMALL, ...MANIFESTS]) {
    const { n_layer: L, n_embd: d, n_positions: P, vocab_size: V } = manifest.config;
    const weights = V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d;
    const kv = 2 * L * P * d * MEMORY.kvBytesPerValue;
    for (const v of manifest.variants) {
      const held = v.files.some((f) => f.role === "index") ? (v.dtype === "int8" ? "int8FromInt4" : "float32") : v.dtype;
      const expected = weights * MEMORY.peakBytesPerParameter[held] + kv + MEMORY.runtimeBytes;
      assert.equal(peakMemoryBytes(manifest, v), expected, `${manifest.name || "small"} ${v.name}`);
    }
  }
});

test("the estimate scales with the model: a 64-wide one needs less than GPT-2 small, q4x more than q8", () => {
  const tiny = MANIFESTS.find((m) => m.config.n_embd === 64);
  if (!tiny) return;
  assert.ok(peakMemoryBytes(tiny, byName(tiny, "q4x")) < peakMemoryBytes(SMALL, byName(SMALL, "q4x")) / 4);
  assert.ok(peakMemoryBytes(tiny, byName(tiny, "q4x")) > peakMemoryBytes(tiny, byName(tiny, "q8")));
});

test("memoryFit offers the best-ranked variant below both the estimate and the budget", () => {
  const [q8x, q4x, q8, q4] = ["q8x", "q4x", "q8", "q4"].map((name) => peakMemoryBytes(SMALL, byName(SMALL, name)));
  assert.ok(q4x > q8x && q8x > q8 && q8 > q4, "float32 > int8 built from 4 bits > int8 > 4-bit");
  const between = memoryFit(SMALL, "wasm", (q8x + q8) / 2);
  assert.equal(between.variant.name, "q8x");
  assert.equal(between.need, q8x);
  assert.equal(between.fit.variant.name, "q8"); // q4x ranks second but needs more
  assert.equal(memoryFit(SMALL, "wasm", q8 - 1).fit.variant.name, "q4");
  assert.equal(memoryFit(SMALL, "wasm", q4 - 1).fit, null);
  assert.equal(memoryFit(SMALL, "wasm", Infinity, { variant: "q4x" }).fit.variant.name, "q8x"); // same download, less memory
  assert.equal(memoryFit(SMALL, "wasm", Infinity, { variant: "q8" }).fit?.variant.name, "q4"); // 4-bit weights: smaller still
  assert.equal(memoryFit(SMALL, "wasm", Infinity, { variant: "fp32" }).fit.variant.name, "q8x");
  assert.equal(memoryFit(SMALL, "webgpu", Infinity, { variant: "fp32" }).fit.variant.name, "q4");
});

test("the budget is TAB_SHARE of what the device reports; the page may stand in for the device", () => {
  assert.equal(memoryBudgetBytes(null), Infinity);
  assert.equal(memoryBudgetBytes(2), 2e9 * TAB_SHARE);
  const before = globalThis.TX_DEVICE_MEMORY_GB;
  try {
    globalThis.TX_DEVICE_MEMORY_GB = 0.25;
    assert.equal(deviceMemoryGB(), 0.25);
    globalThis.TX_DEVICE_MEMORY_GB = "a lot";
    assert.equal(deviceMemoryGB(), globalThis.navigator?.deviceMemory ?? null);
  } finally {
    globalThis.TX_DEVICE_MEMORY_GB = before;
  }
});

test("memoryProblem: null when it fits, else the figures and the offer in words", () => {
  const q8x = peakMemoryBytes(SMALL, byName(SMALL, "q8x"));
  const q8 = peakMemoryBytes(SMALL, byName(SMALL, "q8"));
  assert.equal(memoryProblem({ manifest: SMALL, backend: "wasm", deviceGB: 8 }), null);
  const deviceGB = (q8x + q8) / 2 / 1e9 / TAB_SHARE;
  const problem = memoryProblem({ manifest: SMALL, backend: "wasm", deviceGB });
  assert.equal(problem.fit, "q8");
  for (const words of [`reports ${deviceGB} GB`, memoryAmount(q8x), memoryAmount(q8), "the q8x model", "smaller q8 model", "do not need the model"]) {
    assert.ok(problem.message.includes(words), `${words} in ${problem.message}`);
  }
  const none = memoryProblem({ manifest: SMALL, backend: "wasm", deviceGB: 1 });
  assert.equal(none.fit, null);
  assert.match(none.message, /No variant of this model fits; Try anyway may work/);
  const failed = memoryProblem({ manifest: SMALL, backend: "wasm", deviceGB: null, failure: "Array buffer allocation failed" });
  assert.equal(failed.fit, "q8");
  const need = memoryAmount(q8x).replace(".", "\\.");
  assert.match(
    failed.message,
    new RegExp(`^The browser ran out of memory while loading the q8x model \\(Array buffer allocation failed\\); it needs about ${need}\\. The smaller q8`),
  );
});

test("allocation failures are recognised by their words; other errors are not", () => {
  for (const message of [
    "Array buffer allocation failed",
    "WebAssembly.Memory(): could not allocate memory",
    "onnxruntime-web could not create the q4x session on WASM: failed to allocate a buffer of size 9437184",
    "Out of memory",
    "Cannot enlarge memory arrays to size 2147483648 bytes (OOM)",
    "Aborted(OOM)",
    "std::bad_alloc",
  ]) {
    assert.ok(isOutOfMemory(new RangeError(message)), message);
  }
  for (const message of ["Failed to fetch", "HTTP 404 for x", "The prompt is empty: type some text.", "Room for one more token"]) {
    assert.ok(!isOutOfMemory(new Error(message)), message);
  }
});

test("the wording: sizes, offers, the message without a device figure", () => {
  assert.equal(memoryAmount(315e6), "315 MB");
  assert.equal(memoryAmount(1.6e9), "1.6 GB");
  assert.equal(MEMORY_OFFERS.smaller("q8"), "Load the smaller q8 model instead");
  const text = memoryMessage({ cause: "allocation", deviceGB: null, budget: Infinity, variant: "q8", need: 1.1e9, fit: null, detail: "Out of memory." });
  assert.equal(
    text,
    "The browser ran out of memory while loading the q8 model (Out of memory); it needs about 1.1 GB. " +
      "No smaller variant of this model fits; Try anyway may work, or may stop this tab. The text and figures of this page do not need the model.",
  );
});

test("a choice is kept per load request", () => {
  const request = { name: "tiny", backend: "wasm", needs: ["hiddenStates", "attentions"] };
  assert.equal(memoryChoice(request), undefined);
  chooseForMemory(request, { variant: "q8" });
  assert.deepEqual(memoryChoice({ ...request, needs: ["attentions", "hiddenStates"] }), { variant: "q8" });
  assert.equal(memoryChoice({ ...request, needs: [] }), undefined);
});
