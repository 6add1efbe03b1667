// Tests for the pure parts of the "Looking inside" runtime: the probe inputs' shapes and neutral
// values (site_src/runtime/probe-feeds.js) and the helpers of site_src/runtime/interpret.js,
// checked against direct computations (sorting, sums of logs). The recipes that need a model are
// tested in Chromium against PyTorch hooks (tests/browser/test_inspect_parity.py).
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { checkPair, klDivergence, rankOf, repeatedTokens, restored, softmax, topProbs } from "../../site_src/runtime/interpret.js";
import { argmax } from "../../site_src/runtime/sampler.js";
import { probeFeeds, probeShapes } from "../../site_src/runtime/probe-feeds.js";
import { Rng } from "../../site_src/runtime/rng.js";

const CONFIG = { n_layer: 2, n_head: 4, n_embd: 64 };
// The exporter's probe contract, as every manifest carries it (tests/js/make_probe_fixture.py).
const PROBES = JSON.parse(readFileSync(new URL("./fixtures/probe_contract.json", import.meta.url), "utf8"));
const tensor = (data, dims) => ({ data, dims });

test("left out, every probe is neutral: scales of 1, adds of 0, no rows", () => {
  const feeds = probeFeeds(PROBES, CONFIG, 5, {}, tensor);
  assert.deepEqual(feeds.head_scale.dims, [2, 4, 5]);
  assert.ok(feeds.head_scale.data.every((v) => v === 1));
  assert.deepEqual(feeds.head_add.dims, [2, 4, 5, 16]);
  assert.ok(feeds.head_add.data.every((v) => v === 0));
  assert.deepEqual(feeds.resid_scale.dims, [2, 5]);
  assert.ok(feeds.resid_scale.data.every((v) => v === 1));
  assert.deepEqual(feeds.resid_add.dims, [2, 5, 64]);
  assert.deepEqual(feeds.lens_hidden.dims, [0, 64]);
  assert.deepEqual(feeds.unembed_rows.dims, [0, 64]);
  assert.deepEqual(feeds.head_rows.dims, [2, 0, 64]);
  assert.equal(feeds.head_rows.data.length, 0);
  assert.deepEqual(Object.keys(feeds).sort(), Object.keys(probeShapes(PROBES, CONFIG, 5)).sort());
});

test("row probes take any number of rows; the others exactly their shape", () => {
  const feeds = probeFeeds(PROBES, CONFIG, 3, { lens_hidden: new Float32Array(7 * 64), head_rows: new Float32Array(2 * 5 * 64) }, tensor);
  assert.deepEqual(feeds.lens_hidden.dims, [7, 64]);
  assert.deepEqual(feeds.head_rows.dims, [2, 5, 64]);
  assert.throws(() => probeFeeds(PROBES, CONFIG, 3, { head_scale: new Float32Array(5) }, tensor), {
    message: "The probe head_scale must hold 2 × 4 × 3 numbers for this 3-token prompt, not 5.",
  });
  assert.throws(() => probeFeeds(PROBES, CONFIG, 3, { lens_hidden: new Float32Array(100) }, tensor), /must hold rows × 64 numbers/);
  assert.throws(() => probeFeeds(PROBES, CONFIG, 3, { head_scales: new Float32Array(24) }, tensor), /There is no probe “head_scales”/);
  assert.throws(() => probeFeeds(PROBES, CONFIG, 3, { head_scale: [1, 2] }, tensor), /must be a Float32Array/);
});

test("softmax, KL, top-k and rank agree with direct computations", () => {
  const logits = Float32Array.from([2, -1, 0.5, 3, 3, -7]);
  const p = softmax(logits);
  const exp = Array.from(logits, (v) => Math.exp(v));
  const sum = exp.reduce((s, v) => s + v, 0);
  p.forEach((v, i) => assert.ok(Math.abs(v - exp[i] / sum) < 1e-12));
  const q = softmax(Float32Array.from([1, 1, 1, 1, 1, 1]));
  const direct = p.reduce((s, v, i) => s + v * Math.log(v / q[i]), 0);
  assert.ok(Math.abs(klDivergence(p, q) - direct) < 1e-12);
  assert.equal(klDivergence(p, p), 0);
  const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b);
  assert.deepEqual(
    topProbs(p, 3).map((t) => t.id),
    order.slice(0, 3),
  );
  assert.equal(argmax(p), order[0]);
  for (let id = 0; id < p.length; id++) assert.equal(rankOf(p, id), 1 + Array.from(p).filter((v) => v > p[id]).length);
  assert.equal(rankOf(p, 3), 1); // tied for the top: both rank 1
  assert.equal(rankOf(p, 4), 1);
  assert.deepEqual(Array.from(softmax(logits, 2, 3)), Array.from(softmax(Float32Array.from([0.5, 3, 3]))));
});

test("restored share of the logit difference: 0 none, 1 all, not capped", () => {
  assert.equal(restored(-2, 4, -2), 0);
  assert.equal(restored(4, 4, -2), 1);
  assert.equal(restored(1, 4, -2), 0.5);
  assert.ok(restored(5, 4, -2) > 1);
  assert.equal(restored(3, 1, 1), 0); // no gap to restore
});

test("patching pairs must have the same token length", () => {
  assert.doesNotThrow(() => checkPair([1, 2, 3], [1, 5, 3]));
  assert.throws(() => checkPair([1, 2, 3], [1, 2]), { message: /The clean prompt has 3 tokens and the corrupted one 2/ });
  assert.throws(() => checkPair([], [1]), { message: "Both prompts need some text." });
});

test("the induction sequence: <|endoftext|>, then the same random half twice, from the seed", () => {
  const ids = repeatedTokens(10, 50257, 7, 50256);
  assert.equal(ids.length, 21);
  assert.equal(ids[0], 50256);
  assert.deepEqual(ids.slice(1, 11), ids.slice(11));
  const rng = new Rng(7);
  assert.deepEqual(
    ids.slice(1, 11),
    Array.from({ length: 10 }, () => Math.floor(rng.random() * 50257)),
  );
  assert.notDeepEqual(repeatedTokens(10, 50257, 8, 50256), ids);
});
