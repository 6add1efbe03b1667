// Tests for beam search's bookkeeping (site_src/runtime/beam.js): each search of the golden
// file, run by model_export/beam.py (the CPython reference, equal to transformers'
// generate(num_beams=...)) on a 16-token bigram model, replayed step by step: the same
// candidates, the same kept beams, the same finished hypotheses and scores, the same last step.
// The whole search on the real model, with its key-value cache, is compared in Chromium
// (tests/browser/test_beam_search.py). Run with: node --test tests/js/

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { BEAM_LIMITS, BeamSearch, best, checkBeamOptions } from "../../site_src/runtime/beam.js";

// tests/js/make_beam_fixture.py
const CASES = JSON.parse(readFileSync(new URL("./fixtures/beam_cases.json", import.meta.url), "utf8"));
const MODEL = { contextLimit: 64, vocabSize: 16, eos: null };

/** Replay one case: the bigram row of each running beam's last token, step after step. */
function replay({ table, prompt, options }) {
  const rows = table.map((row) => Float32Array.from(row));
  const search = new BeamSearch(checkBeamOptions(options, { ...MODEL, promptTokens: prompt.length }));
  const steps = [];
  let last = [prompt[prompt.length - 1]]; // the prefill: one row, the prompt's
  for (;;) {
    const step = search.advance(last.map((token) => rows[token]));
    steps.push(step);
    if (step.done) break;
    last = step.kept.map((c) => step.tokens[c]);
  }
  return { search, steps };
}

for (const item of CASES) {
  test(`the reference's search, step for step: ${item.name}`, () => {
    const { search, steps } = replay(item);
    assert.equal(steps.length, item.steps.length, "the search ends at the same step");
    steps.forEach((step, i) => {
      const want = item.steps[i];
      assert.deepEqual(step.parents, want.parents, `step ${i} parents`);
      assert.deepEqual(step.tokens, want.tokens, `step ${i} tokens`);
      assert.deepEqual(step.logProbs, want.logProbs, `step ${i} log-probabilities (float32, exactly)`);
      assert.deepEqual(step.ended, want.ended, `step ${i} ended`);
      assert.deepEqual(step.kept, want.kept, `step ${i} kept`);
      assert.deepEqual(
        step.rows,
        want.kept.map((c) => want.parents[c]),
        `step ${i}: each new row continues its parent's cache`,
      );
    });
    const found = search.hypotheses();
    assert.deepEqual(
      found.map((h) => h.tokens),
      item.sequences,
    );
    assert.deepEqual(
      found.map((h) => h.score),
      item.scores,
    );
    for (const h of found) {
      const sum = h.logProb;
      assert.ok(Math.abs(sum / h.tokens.length ** item.options.lengthPenalty - h.score) < 1e-5, "score = log-probability / length ** penalty");
    }
  });
}

test("one beam is greedy decoding: the largest logit each step", () => {
  const item = CASES.find((c) => c.options.numBeams === 1);
  const { steps } = replay(item);
  let token = item.prompt[item.prompt.length - 1];
  for (const step of steps) {
    const row = item.table[token];
    const greedy = row.indexOf(Math.max(...row));
    assert.equal(step.tokens[step.kept[0] ?? 0], greedy);
    token = greedy;
  }
});

test("best() is a stable descending sort's first k, also merged across slices", () => {
  const values = [0.5, 2, -1, 2, 7, 0.5, 7, 3];
  const sorted = values.map((value, index) => ({ index, value })).sort((a, b) => b.value - a.value || a.index - b.index);
  for (let k = 1; k <= values.length; k++) assert.deepEqual(best(values, k), sorted.slice(0, k));
  const merged = best(values.slice(4), 5, 4, best(values.slice(0, 4), 5));
  assert.deepEqual(merged, sorted.slice(0, 5));
});

test("options out of range are refused with the range, named by field", () => {
  const model = { promptTokens: 10, contextLimit: 128, vocabSize: 100, eos: 99 };
  const refused = (options, field, pattern) =>
    assert.throws(
      () => checkBeamOptions(options, model),
      (err) => err instanceof RangeError && err.field === field && pattern.test(err.message),
    );
  refused({ numBeams: 0 }, "numBeams", new RegExp(`from 1 to ${BEAM_LIMITS.maxBeams}`));
  refused({ numBeams: 2.5 }, "numBeams", /whole number/);
  refused({ numBeams: BEAM_LIMITS.maxBeams + 1 }, "numBeams", /got 9/);
  refused({ maxNewTokens: BEAM_LIMITS.maxNewTokens + 1 }, "maxNewTokens", new RegExp(`from 1 to ${BEAM_LIMITS.maxNewTokens}`));
  refused({ lengthPenalty: Number.NaN }, "lengthPenalty", /from -5 to 5/);
  refused({ lengthPenalty: "1" }, "lengthPenalty", /number/);
  refused({ earlyStopping: "sometimes" }, "earlyStopping", /true, false or "never"/);
  refused({ eos: 100 }, "eos", /from 0 to 99/);
  // The last new token needs no position of its own: 65 + 64 - 1 = 128 fits 128 positions.
  assert.equal(checkBeamOptions({ numBeams: 1, maxNewTokens: 64 }, { ...model, promptTokens: 65 }).newTokens, 64);
  assert.throws(
    () => checkBeamOptions({ numBeams: 1, maxNewTokens: 64 }, { ...model, promptTokens: 66 }),
    (err) => err.field === "context" && /66 tokens and 64 new ones do not fit this model's 128 positions/.test(err.message),
  );
  const cacheModel = { ...model, contextLimit: 4096, promptTokens: 600 };
  assert.throws(
    () => checkBeamOptions({ numBeams: 8, maxNewTokens: 16 }, cacheModel),
    (err) => err.field === "context" && /8 beams × \(600 prompt \+ 16 new tokens\) = 4928/.test(err.message) && /at most 4096/.test(err.message),
  );
  const defaults = checkBeamOptions({}, model);
  assert.deepEqual(defaults, { numBeams: 4, newTokens: 16, lengthPenalty: 1, earlyStopping: false, eos: 99 });
  assert.equal(checkBeamOptions({ eos: null }, model).eos, null, "no end token: every beam runs to the limit");
});
