// Tests for the cache the worker holds between passes (kv-cache.js): after any sequence of
// passes and cuts, the positions it feeds hold the exact cache (the concatenation of every
// kept pass's keys and values, as present would be), the mask hides every free position, and
// an attention over what it feeds equals one over the exact cache. Whether onnxruntime agrees
// is the browser tests' question (tests/browser/test_generate*.py run the worker on it).
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { test } from "node:test";

import { HeldCache, KV_GROWTH, passesOf } from "../../site_src/runtime/kv-cache.js";

const CONFIG = { n_layer: 2, n_head: 3, n_embd: 12, n_positions: 40 }; // hd = 4

/** Deterministic pseudo-random floats (a linear congruential generator). */
function randomArray(length, seed) {
  let state = seed >>> 0;
  return Float32Array.from({ length }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  });
}

/** A pass's new keys and values: 2 * n_layer arrays, each (1, nh, count, hd). */
function freshPass(count, seed) {
  const hd = CONFIG.n_embd / CONFIG.n_head;
  return Array.from({ length: 2 * CONFIG.n_layer }, (_, k) => randomArray(CONFIG.n_head * count * hd, seed * 100 + k));
}

/** The exact cache as present would hold it: per tensor, each head's positions in order. */
function concatenate(passes) {
  const hd = CONFIG.n_embd / CONFIG.n_head;
  return Array.from({ length: 2 * CONFIG.n_layer }, (_, k) => {
    const heads = [];
    for (let h = 0; h < CONFIG.n_head; h++) {
      const rows = [];
      for (const { arrays, count } of passes) rows.push(...arrays[k].subarray(h * count * hd, (h + 1) * count * hd));
      heads.push(rows);
    }
    return heads; // [nh][P * hd]
  });
}

/** The cached positions of what the held cache feeds, in the shape `concatenate` returns. */
function fedPositions(cache) {
  const { past } = cache.inputs(1);
  return past.map(({ data, dims: [, nh, capacity, hd] }) =>
    Array.from({ length: nh }, (_, h) => [...data.subarray(h * capacity * hd, (h * capacity + cache.length) * hd)]),
  );
}

/** One query's attention output over keys/values (P, hd) with an additive mask, as the graph does it. */
function attend(query, keys, values, allowed) {
  const hd = query.length;
  const scores = allowed.map((ok, p) => {
    let dot = 0;
    for (let d = 0; d < hd; d++) dot += query[d] * keys[p * hd + d];
    return dot / Math.sqrt(hd) + (ok ? 0 : -3.4028234663852886e38);
  });
  const top = Math.max(...scores);
  const weights = scores.map((s) => Math.exp(s - top));
  const total = weights.reduce((a, b) => a + b, 0);
  return Array.from({ length: hd }, (_, d) => weights.reduce((sum, w, p) => sum + (w / total) * values[p * hd + d], 0));
}

const CASES = [
  { name: "a prompt, then single steps across a growth", passes: [5, 1, 1, 1], cuts: {} },
  { name: "a prompt longer than one growth", passes: [11, 1, 2], cuts: {} }, // the tests grow by 8
  { name: "speculative rounds: passes cut back before the next", passes: [6, 4, 3, 5], cuts: { 1: 8, 2: 9 } },
  { name: "a cut to nothing, then a fresh prompt", passes: [7, 4], cuts: { 0: 0 } },
];

for (const { name, passes, cuts } of CASES) {
  test(`held cache = the exact cache: ${name}`, () => {
    const cache = new HeldCache(CONFIG, 8);
    let kept = []; // the passes present would hold, each cut to what was kept
    passes.forEach((count, i) => {
      const arrays = freshPass(count, i + 1);
      cache.append(arrays, count);
      kept.push({ arrays, count });
      if (i in cuts) {
        const length = cuts[i];
        cache.crop(length);
        kept = cropPasses(kept, length);
      }
      assert.equal(
        cache.length,
        kept.reduce((n, p) => n + p.count, 0),
      );
      assert.ok(cache.capacity >= cache.length && cache.capacity % 8 === 0);
      assert.deepEqual(fedPositions(cache), concatenate(kept));
      const { mask } = cache.inputs(2);
      assert.equal(mask.length, cache.capacity + 2);
      assert.deepEqual([...mask], [...Array(cache.length).fill(1n), ...Array(cache.capacity - cache.length).fill(0n), 1n, 1n]);
    });
  });
}

/** The passes cut to their first `length` positions in all. */
function cropPasses(passes, length) {
  const hd = CONFIG.n_embd / CONFIG.n_head;
  const out = [];
  let left = length;
  for (const { arrays, count } of passes) {
    if (left === 0) break;
    const keep = Math.min(count, left);
    const cut = arrays.map((a) => {
      const rows = new Float32Array(CONFIG.n_head * keep * hd);
      for (let h = 0; h < CONFIG.n_head; h++) rows.set(a.subarray(h * count * hd, h * count * hd + keep * hd), h * keep * hd);
      return rows;
    });
    out.push({ arrays: cut, count: keep });
    left -= keep;
  }
  return out;
}

test("attention over the fed capacity, free positions masked, equals attention over the exact cache", () => {
  const cache = new HeldCache(CONFIG, 16);
  const passes = [9, 1, 1].map((count, i) => ({ arrays: freshPass(count, 7 + i), count }));
  for (const { arrays, count } of passes) cache.append(arrays, count);
  cache.crop(10); // free positions now hold the refused pass's keys: the mask must hide them
  const exact = concatenate(cropPasses(passes, 10));
  const { past, mask } = cache.inputs(1);
  const hd = CONFIG.n_embd / CONFIG.n_head;
  const query = randomArray(hd, 99);
  for (let layer = 0; layer < CONFIG.n_layer; layer++) {
    for (let h = 0; h < CONFIG.n_head; h++) {
      const [keys, values] = [past[2 * layer], past[2 * layer + 1]].map(({ data, dims: [, , capacity] }) =>
        data.subarray(h * capacity * hd, (h + 1) * capacity * hd),
      );
      const held = attend(
        query,
        keys,
        values,
        [...mask.subarray(0, cache.capacity)].map((m) => m === 1n),
      );
      const reference = attend(query, Float32Array.from(exact[2 * layer][h]), Float32Array.from(exact[2 * layer + 1][h]), Array(10).fill(true));
      held.forEach((x, d) => assert.ok(Math.abs(x - reference[d]) < 1e-6, `layer ${layer} head ${h}: ${x} vs ${reference[d]}`));
    }
  }
});

test("the cache refuses more positions than the context and a bad cut", () => {
  const cache = new HeldCache(CONFIG);
  cache.append(freshPass(40, 1), 40);
  assert.equal(cache.capacity, Math.min(40, Math.ceil(40 / KV_GROWTH) * KV_GROWTH)); // the growth stops at the context
  assert.throws(() => cache.append(freshPass(1, 2), 1), /at most 40 positions; 41 asked/);
  assert.throws(() => cache.crop(-1), /Cannot cut the cache to -1/);
  assert.throws(() => cache.append(freshPass(1, 2).slice(1), 1), /Expected 4 new key\/value arrays, got 3/);
});

const PASSES = [
  { count: 100, keep: 1, chunk: 0, parts: [[0, 100]] },
  { count: 100, keep: 1, chunk: 100, parts: [[0, 100]] },
  {
    count: 300,
    keep: 1,
    chunk: 128,
    parts: [
      [0, 128],
      [128, 256],
      [256, 300],
    ],
  },
  {
    count: 257,
    keep: 3,
    chunk: 128,
    parts: [
      [0, 128],
      [128, 257],
    ],
  }, // a last pass of 1 < keep joins the one before
  {
    count: 256,
    keep: 1,
    chunk: 128,
    parts: [
      [0, 128],
      [128, 256],
    ],
  },
];

for (const { count, keep, chunk, parts } of PASSES) {
  test(`passesOf(${count}, ${keep}, ${chunk})`, () => assert.deepEqual(passesOf(count, keep, chunk), parts));
}
