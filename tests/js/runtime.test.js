// Tests for the pure parts of the GPT-2 runtime: the seeded generator (rng.js), the
// sampler (sampler.js) and the manifest reading (variants.js).
// Run with: node --test tests/js/
// The same generator and sampler are re-implemented in Python in
// tests/browser/test_generate_reference.py, which also runs this sampler under node
// on random logits and compares the tokens.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Rng, MAX_SEED, randomSeed } from "../../site_src/runtime/rng.js";
import { argmax, checkSampling, kthLargest, sampleToken, summarize, topIndices } from "../../site_src/runtime/sampler.js";
import { topK } from "../../site_src/runtime/probs.js";
import { outputsWithPrefix, rankVariants, variantFiles, variantOutputs } from "../../site_src/runtime/variants.js";

/** A deterministic pseudo-random logit vector (no dependence on the generator under test). */
function logitsOf(V, scale, salt = 0) {
  const out = new Float32Array(V);
  for (let i = 0; i < V; i++) out[i] = Math.sin((i + 1) * 12.9898 + salt * 78.233) * scale;
  return out;
}

test("the generator reproduces its published values", () => {
  const a = new Rng(42);
  assert.deepEqual([a.random(), a.random()], [0.6011037487409305, 0.8524657984803172]);
  const b = new Rng(0);
  assert.deepEqual([b.random(), b.random()], [0.26642920822150806, 0.22327202667446544]);
  const c = new Rng(MAX_SEED);
  assert.ok(c.random() < 1);
});

test("the generator draws uniformly from [0, 1)", () => {
  const rng = new Rng(7);
  const bins = new Array(10).fill(0);
  let sum = 0;
  for (let i = 0; i < 20000; i++) {
    const u = rng.random();
    assert.ok(u >= 0 && u < 1);
    bins[Math.floor(u * 10)]++;
    sum += u;
  }
  assert.ok(Math.abs(sum / 20000 - 0.5) < 0.01);
  assert.ok(Math.min(...bins) > 1800, String(bins));
});

test("seeds must be unsigned 32-bit integers", () => {
  for (const bad of [-1, 1.5, MAX_SEED + 1, NaN, "3"]) assert.throws(() => new Rng(bad), /seed/);
  const s = randomSeed();
  assert.ok(Number.isInteger(s) && s >= 0 && s <= MAX_SEED);
});

test("kthLargest agrees with a full sort", () => {
  const values = Float64Array.from(logitsOf(5001, 3, 1));
  values[17] = values[99] = values[4000]; // ties
  const sorted = Float64Array.from(values).sort();
  for (const k of [1, 2, 3, 50, 2500, 4999, 5001]) assert.equal(kthLargest(values, k), sorted[values.length - k]);
});

test("greedy takes the first of tied maxima and ignores the filters", () => {
  const logits = Float32Array.from([1, 3, 3, 2]);
  assert.equal(argmax(logits), 1);
  const rng = new Rng(1);
  assert.deepEqual(sampleToken(logits, { temperature: 0, topK: 3, topP: 0.1 }, rng), { id: 1, sampleProb: 1, candidates: 1 });
  assert.equal(rng.state, 1, "greedy draws no random number");
});

test("top-k and top-p keep ties at their boundary", () => {
  const logits = Float32Array.from([1, 3, 3, 2, -1]);
  const rng = new Rng(5);
  const seen = (options, n = 100) => new Set(Array.from({ length: n }, () => sampleToken(logits, options, rng).id));
  assert.deepEqual([...seen({ temperature: 1, topK: 1, topP: 1 })].sort(), [1, 2]);
  assert.deepEqual([...seen({ temperature: 1, topK: 0, topP: 1e-6 })].sort(), [1, 2]);
  assert.deepEqual([...seen({ temperature: 1, topK: 3, topP: 1 }, 300)].sort(), [1, 2, 3]);
  assert.deepEqual([...seen({ temperature: 1, topK: 0, topP: 0.8 }, 300)].sort(), [1, 2, 3]);
  assert.equal(sampleToken(logits, { temperature: 1, topK: 0, topP: 0.8 }, rng).candidates, 3);
});

test("top-p over a full flat vocabulary matches a plain full sort", () => {
  // A nearly flat distribution makes the nucleus large, forcing the widest head.
  const logits = logitsOf(50257, 0.05, 2);
  const max = logits.reduce((m, x) => (x > m ? x : m), -Infinity);
  const scaled = Float64Array.from(logits, (x) => (x - max) / 1.1);
  for (const topP of [0.3, 0.9, 0.999]) {
    const values = Float64Array.from(scaled).sort().reverse();
    let total = 0;
    for (const s of scaled) total += Math.exp(s);
    let cumulative = 0;
    let kept = 0;
    for (const v of values) {
      if (cumulative >= topP * total) break;
      cumulative += Math.exp(v);
      kept++;
    }
    const threshold = values[kept - 1];
    const expected = scaled.reduce((n, s) => n + (s >= threshold ? 1 : 0), 0);
    const { candidates } = sampleToken(logits, { temperature: 1.1, topK: 0, topP }, new Rng(1));
    assert.equal(candidates, expected, `top-p ${topP}`);
  }
});

test("sampling frequencies follow the probabilities", () => {
  const logits = Float64Array.from([0.5, 0.3, 0.2], Math.log);
  const rng = new Rng(3);
  const counts = [0, 0, 0];
  for (let i = 0; i < 6000; i++) counts[sampleToken(logits, { temperature: 1, topK: 0, topP: 1 }, rng).id]++;
  counts.forEach((c, i) => assert.ok(Math.abs(c / 6000 - [0.5, 0.3, 0.2][i]) < 0.025, String(counts)));
});

test("a seed reproduces a sequence of draws", () => {
  const logits = logitsOf(1000, 2, 3);
  const options = { temperature: 0.9, topK: 50, topP: 0.95 };
  const draw = (seed) => {
    const rng = new Rng(seed);
    return Array.from({ length: 20 }, () => sampleToken(logits, options, rng).id);
  };
  assert.deepEqual(draw(11), draw(11));
  assert.notDeepEqual(draw(11), draw(12));
});

test("sampling settings are checked with readable messages", () => {
  assert.deepEqual(checkSampling({}, 10), { temperature: 1, topK: 0, topP: 1 });
  assert.throws(() => checkSampling({ temperature: -1 }), /Temperature/);
  assert.throws(() => checkSampling({ temperature: Infinity }), /Temperature/);
  assert.throws(() => checkSampling({ topK: 2.5 }), /Top-k/);
  assert.throws(() => checkSampling({ topK: 11 }, 10), /vocabulary size/);
  assert.throws(() => checkSampling({ topP: 0 }), /Top-p/);
  assert.throws(() => checkSampling({ topP: 1.5 }), /Top-p/);
});

test("summarize and topK give the most likely tokens with softmax probabilities", () => {
  const logits = logitsOf(50257, 4, 4);
  logits[5] = logits[9] = 10; // a tie at the top: lower id first
  const { top, prob } = summarize(logits, 10);
  const order = Array.from(logits.keys())
    .sort((a, b) => logits[b] - logits[a] || a - b)
    .slice(0, 10);
  assert.deepEqual(
    top.map((t) => t.id),
    order,
  );
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += prob(i);
  assert.ok(Math.abs(sum - 1) < 1e-9);
  assert.deepEqual(
    topK(logits, 3).map((t) => t.id),
    order.slice(0, 3),
  );
  assert.equal(topK(logits, 3)[0].logit, 10);
});

const MANIFEST = {
  outputs: [{ name: "logits" }, { name: "present.0.key" }],
  variants: [
    { name: "fp32", backends: ["webgpu", "wasm"], files: [{ path: "model.onnx", bytes: 1, sha256: "a", role: "graph" }] },
    { name: "fp16", backends: ["webgpu"], gpu_features: ["shader-f16"], files: [{ path: "fp16/model.onnx", bytes: 1, sha256: "b", role: "graph" }] },
    {
      name: "q4",
      backends: ["webgpu", "wasm"],
      outputs: ["logits", "attentions.10", "attentions.2", "hidden_states.0"],
      files: [
        { path: "q4/model.onnx", bytes: 1, sha256: "c", role: "graph" },
        { path: "q4/model.onnx.data.0", bytes: 1, sha256: "d", role: "data" },
        { path: "q4/model.onnx.data.1", bytes: 1, sha256: "e", role: "data" },
      ],
    },
    { name: "q8", backends: ["wasm"], files: [{ path: "q8/model.onnx", bytes: 1, sha256: "f", role: "graph" }] },
  ],
  variant_order: { webgpu: ["q4", "fp16", "fp32"], wasm: ["q8", "fp32", "q4"] }, // what model_export writes
};

test("variant choice: the manifest's order (WebGPU q4, WASM q8), and its default wins", () => {
  assert.equal(rankVariants(MANIFEST, "webgpu")[0].name, "q4");
  assert.equal(rankVariants(MANIFEST, "wasm")[0].name, "q8");
  const withDefaults = { ...MANIFEST, default_variants: { webgpu: "fp16", wasm: "fp32" } };
  assert.equal(rankVariants(withDefaults, "wasm")[0].name, "fp32");
  assert.equal(rankVariants(withDefaults, "webgpu", { gpuFeatures: ["shader-f16", "timestamp-query"] })[0].name, "fp16");
  assert.equal(rankVariants(withDefaults, "webgpu", { gpuFeatures: ["timestamp-query"] })[0].name, "q4", "fp16 needs shader-f16");
  assert.equal(rankVariants(MANIFEST, "wasm", { variant: "fp32" })[0].name, "fp32");
  assert.throws(() => rankVariants(MANIFEST, "wasm", { variant: "fp16" }), /does not run on WASM/);
  assert.throws(() => rankVariants(MANIFEST, "wasm", { variant: "int2" }), /no variant "int2"/);
});

test("variants are ranked for fallback: default, the manifest's order, then manifest order", () => {
  const names = (list) => list.map((v) => v.name);
  const { variant_order: _, ...unordered } = MANIFEST;
  assert.deepEqual(names(rankVariants(unordered, "wasm")), ["fp32", "q4", "q8"], "no variant_order: manifest order");
  assert.deepEqual(names(rankVariants({ ...MANIFEST, variant_order: { wasm: ["q4"] } }, "wasm")), ["q4", "fp32", "q8"]);
  assert.deepEqual(names(rankVariants(MANIFEST, "wasm")), ["q8", "fp32", "q4"]);
  assert.deepEqual(names(rankVariants(MANIFEST, "webgpu")), ["q4", "fp32"], "fp16 needs shader-f16");
  assert.deepEqual(names(rankVariants(MANIFEST, "webgpu", { gpuFeatures: ["shader-f16", "timestamp-query"] })), ["q4", "fp16", "fp32"]);
  const withDefaults = { ...MANIFEST, default_variants: { wasm: "q4" } };
  assert.deepEqual(names(rankVariants(withDefaults, "wasm")), ["q4", "q8", "fp32"]);
  assert.deepEqual(names(rankVariants(MANIFEST, "wasm", { variant: "fp32" })), ["fp32"]);
});

test("variant choice honours the outputs a widget needs", () => {
  assert.equal(rankVariants(MANIFEST, "wasm", { needs: ["attentions"] })[0].name, "q4");
  assert.throws(
    () => rankVariants({ ...MANIFEST, variants: MANIFEST.variants.slice(0, 2) }, "wasm", { needs: ["attentions"] }),
    /no variant with attentions outputs for WASM/,
  );
  assert.deepEqual(variantOutputs(MANIFEST, MANIFEST.variants[0]), ["logits", "present.0.key"]);
  assert.deepEqual(outputsWithPrefix(variantOutputs(MANIFEST, MANIFEST.variants[2]), "attentions."), ["attentions.2", "attentions.10"]);
});

test("variant files: one graph, data pieces named relative to it", () => {
  const single = variantFiles(MANIFEST.variants[0]);
  assert.equal(single.graph.path, "model.onnx");
  assert.deepEqual(single.data, []);
  const pieces = variantFiles(MANIFEST.variants[2]);
  assert.equal(pieces.graph.path, "q4/model.onnx");
  assert.deepEqual(
    pieces.data.map((d) => d.location),
    ["model.onnx.data.0", "model.onnx.data.1"],
  );
  assert.throws(() => variantFiles({ name: "x", files: [{ path: "a", role: "data" }] }), /exactly one/);
});

test("variant files: a compact variant lists its index and packed files, no data pieces", () => {
  const compact = {
    name: "q4x",
    backends: ["wasm"],
    files: [
      { path: "q4x/model.onnx", bytes: 1, sha256: "a", role: "graph" },
      { path: "q4x/expand.json", bytes: 1, sha256: "b", role: "index" },
      { path: "q4x/packed.0", bytes: 1, sha256: "c", role: "packed" },
      { path: "q4x/packed.1", bytes: 1, sha256: "d", role: "packed" },
    ],
  };
  const files = variantFiles(compact);
  assert.equal(files.graph.path, "q4x/model.onnx");
  assert.equal(files.index.path, "q4x/expand.json");
  assert.deepEqual(
    files.packed.map((f) => f.path),
    ["q4x/packed.0", "q4x/packed.1"],
  );
  assert.deepEqual(files.data, []);
  assert.equal(variantFiles(MANIFEST.variants[2]).index, null);
  const twice = { ...compact, files: [...compact.files, { path: "q4x/other.json", role: "index" }] };
  assert.throws(() => variantFiles(twice), /2 weight indexes/);
  // A compact variant is ranked like any other: by the manifest's order
  const withCompact = {
    ...MANIFEST,
    variants: [...MANIFEST.variants, { ...compact, outputs: ["logits"] }],
    variant_order: { ...MANIFEST.variant_order, wasm: ["q4x", ...MANIFEST.variant_order.wasm] },
  };
  assert.equal(rankVariants(withCompact, "wasm")[0].name, "q4x");
  assert.equal(rankVariants({ ...withCompact, variant_order: MANIFEST.variant_order }, "wasm")[0].name, "q8");
  assert.equal(rankVariants(withCompact, "webgpu")[0].name, "q4");
});

test("topIndices and argmax: the largest first, the lowest index among ties, one row of a matrix", () => {
  assert.deepEqual(topIndices([1, 3, 3, 2, 3], 2), [1, 2]);
  assert.deepEqual(topIndices(Float32Array.from([0.5, -1, 7]), 5), [2, 0, 1]);
  assert.deepEqual(topIndices([], 3), []);
  let seed = 7;
  const next = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let trial = 0; trial < 20; trial++) {
    const values = Array.from({ length: 50 }, () => Math.round(next() * 8)); // many ties
    const sorted = values.map((v, i) => i).sort((a, b) => values[b] - values[a] || a - b);
    assert.deepEqual(topIndices(values, 10), sorted.slice(0, 10));
    assert.equal(argmax(values), sorted[0]);
  }
  assert.equal(argmax([9, 1, 5, 5, 2, 0], 2, 3), 0, "row [5, 5, 2]: its first 5");
  assert.equal(argmax([9, 1, 5, 5, 2, 7], 3, 3), 2, "row [5, 2, 7]");
});
