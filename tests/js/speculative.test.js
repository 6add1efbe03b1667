// Tests for speculative decoding's rule (site_src/runtime/speculative.js):
// - greedy: each run of the golden file, made by model_export/speculative.py (the CPython
//   reference) with a bigram target and draft, replayed round by round: the same proposals kept,
//   the same tokens, which are the target's own greedy tokens;
// - sampling: 3-token continuations of 20,000 runs follow the target's exact distribution
//   (Pearson's chi-square), and the same test rejects continuations drawn from the draft alone.
// The whole run on the real model and its draft, with both caches, is compared in Chromium
// (tests/browser/test_speculative_decoding_widget.py). Run with: node --test tests/js/

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Rng } from "../../site_src/runtime/rng.js";
import { Distribution, SPECULATIVE_LIMITS, checkSpeculativeOptions, speculativeRounds } from "../../site_src/runtime/speculative.js";

// tests/js/make_speculative_fixture.py
const CASES = JSON.parse(readFileSync(new URL("./fixtures/speculative_cases.json", import.meta.url), "utf8"));

/** A bigram model as speculativeRounds calls it: the rows of the last tokens. */
function bigram(table) {
  const rows = table.map((row) => Float32Array.from(row));
  return {
    draft: async (tokens) => rows[tokens[tokens.length - 1]],
    target: async (tokens, n) => tokens.slice(-n).map((token) => rows[token]),
  };
}

async function run(prompt, options, { target, draft, rng = null }) {
  const rounds = [];
  for await (const round of speculativeRounds(prompt, options, { draft: bigram(draft).draft, target: bigram(target).target, rng })) rounds.push(round);
  return rounds;
}

for (const item of CASES) {
  test(`the reference's greedy run, round for round: ${item.name}`, async () => {
    const rounds = await run(item.prompt, item.options, item);
    assert.deepEqual(
      rounds.map((r) => r.proposals.length),
      item.proposed,
      "proposals per round",
    );
    assert.deepEqual(
      rounds.map((r) => r.kept),
      item.accepted,
      "proposals kept per round",
    );
    assert.deepEqual(rounds.at(-1).tokens, item.tokens, "the tokens: the target's greedy ones");
    for (const r of rounds) assert.equal(r.fromResidual, r.kept < r.proposals.length, "a refusal is replaced from the residual");
  });
}

// ---------------------------------------------------------------- sampling

const V = 5;
const LENGTH = 3;
const RUNS = 20_000;

/** A (V, V) table of logits from a seeded generator, like the CPython test's. */
function table(seed) {
  const rng = new Rng(seed);
  return Array.from({ length: V }, () => Array.from({ length: V }, () => (rng.random() - 0.5) * 6));
}

/** Probability of every LENGTH-token continuation of `last` under a bigram table, in base-V order. */
function exact(target, last) {
  const rows = target.map((row) => Distribution.of(Float32Array.from(row), 1));
  const out = new Float64Array(V ** LENGTH);
  for (let code = 0; code < out.length; code++) {
    let p = 1;
    let prev = last;
    for (let i = LENGTH - 1; i >= 0; i--) {
      const token = Math.floor(code / V ** i) % V;
      p *= rows[prev].prob(token);
      prev = token;
    }
    out[code] = p;
  }
  return out;
}

const code = (tokens) => tokens.reduce((c, t) => c * V + t, 0);

/** Pearson's chi-square p-value (cells expected below 5 pooled; Wilson–Hilferty approximation). */
function chiSquareP(observed, expected) {
  let statistic = 0;
  let cells = 0;
  let poolObs = 0;
  let poolExp = 0;
  expected.forEach((e, i) => {
    if (e < 5) {
      poolObs += observed[i];
      poolExp += e;
    } else {
      statistic += (observed[i] - e) ** 2 / e;
      cells++;
    }
  });
  if (poolExp > 0) {
    statistic += (poolObs - poolExp) ** 2 / poolExp;
    cells++;
  }
  const k = cells - 1;
  const z = ((statistic / k) ** (1 / 3) - (1 - 2 / (9 * k))) / Math.sqrt(2 / (9 * k));
  return 0.5 * erfc(z / Math.SQRT2);
}

/** erfc(x) (Numerical Recipes' Chebyshev fit, relative error below 1.2e-7). */
function erfc(x) {
  const t = 1 / (1 + 0.5 * Math.abs(x));
  const y =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? y : 2 - y;
}

test("sampled runs follow the target's distribution, not the draft's", async () => {
  const target = table(1);
  const draft = table(2);
  const rng = new Rng(7);
  const counts = new Float64Array(V ** LENGTH);
  let kept = 0;
  let proposed = 0;
  for (let n = 0; n < RUNS; n++) {
    const rounds = await run([0], { gamma: 2, maxNewTokens: LENGTH, temperature: 1 }, { target, draft, rng });
    counts[code(rounds.at(-1).tokens)]++;
    for (const r of rounds) ((kept += r.kept), (proposed += r.proposals.length));
  }
  const expected = exact(target, 0).map((p) => p * RUNS);
  assert.ok(chiSquareP(counts, expected) > 1e-3, "speculative samples fit the target's distribution");
  assert.ok(kept / proposed > 0.2 && kept / proposed < 0.95, `refusals matter: ${kept} of ${proposed} kept`);

  const fromDraft = new Float64Array(V ** LENGTH); // the same test tells the draft's own samples apart
  const draftRows = draft.map((row) => Distribution.of(Float32Array.from(row), 1));
  for (let n = 0; n < RUNS; n++) {
    const tokens = [];
    let prev = 0;
    for (let i = 0; i < LENGTH; i++) {
      let u = rng.random();
      let t = 0;
      while (t < V - 1 && u >= draftRows[prev].prob(t)) u -= draftRows[prev].prob(t++);
      tokens.push(t);
      prev = t;
    }
    fromDraft[code(tokens)]++;
  }
  assert.ok(chiSquareP(fromDraft, expected) < 1e-6, "the draft's own samples do not fit");
});

test("temperature 0 needs no generator, and the limits are refused with their range", async () => {
  const { maxGamma, maxNewTokens, maxTemperature } = SPECULATIVE_LIMITS;
  const context = { promptTokens: 10, contextLimit: 256 };
  assert.deepEqual(checkSpeculativeOptions({}, context), { gamma: 4, maxNewTokens: 32, temperature: 0 });
  assert.throws(() => checkSpeculativeOptions({ gamma: maxGamma + 1 }, context), { field: "gamma", message: /1 to 8 tokens a round; got 9/ });
  assert.throws(() => checkSpeculativeOptions({ gamma: 0 }, context), { field: "gamma" });
  assert.throws(() => checkSpeculativeOptions({ maxNewTokens: maxNewTokens + 1 }, context), { field: "maxNewTokens", message: /from 1 to 64; got 65/ });
  assert.throws(() => checkSpeculativeOptions({ temperature: maxTemperature + 0.5 }, context), { field: "temperature" });
  assert.throws(() => checkSpeculativeOptions({ maxNewTokens: 20 }, { promptTokens: 250, contextLimit: 256 }), {
    field: "context",
    message: "The prompt is 250 tokens and 20 new ones do not fit this model's 256 positions.",
  });
});
