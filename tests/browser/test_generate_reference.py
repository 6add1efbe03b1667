"""Checks of the Python reference for the browser runtime's generation (generate_reference.py),
with no browser: they pin the generator's outputs, check the sampler's rules, and run the
JavaScript sampler under node on many random logit vectors to show that both implementations
pick the same tokens.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from generate_reference import JS_RANDOM, ROOT, Mulberry32, sample_token

# ----------------------------------------------------------------------------
# checks of the reference itself (no browser)


def test_generator_matches_the_javascript_outputs():
    for seed, values in JS_RANDOM.items():
        rng = Mulberry32(seed)
        assert [rng.random() for _ in values] == values


def test_generator_is_uniform_enough():
    rng = Mulberry32(7)
    draws = np.array([rng.random() for _ in range(20000)])
    assert draws.min() >= 0 and draws.max() < 1
    assert abs(draws.mean() - 0.5) < 0.01
    assert np.histogram(draws, bins=10, range=(0, 1))[0].min() > 1800


def test_sampler_rules_on_a_small_vector():
    logits = np.array([1.0, 3.0, 3.0, 2.0, -1.0], dtype=np.float32)
    rng = Mulberry32(1)
    assert sample_token(logits, 0, 0, 1, rng) == 1  # greedy: first of the tied maxima
    assert {sample_token(logits, 1.0, 1, 1.0, rng) for _ in range(50)} == {1, 2}  # top-k keeps the tie
    assert {sample_token(logits, 1.0, 0, 1e-6, rng) for _ in range(50)} == {1, 2}  # top-p keeps the tie too
    assert {sample_token(logits, 1.0, 3, 1.0, rng) for _ in range(200)} == {1, 2, 3}
    assert {sample_token(logits, 100.0, 0, 1.0, rng) for _ in range(400)} == {0, 1, 2, 3, 4}
    # top-p: softmax of [3, 3, 2, 1, -1] ~ [.39, .39, .14, .05, .01]; p = 0.8 needs three tokens
    assert {sample_token(logits, 1.0, 0, 0.8, rng) for _ in range(300)} == {1, 2, 3}


def test_sampler_frequencies_follow_the_probabilities():
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    rng = Mulberry32(3)
    counts = np.bincount([sample_token(logits, 1.0, 0, 1.0, rng) for _ in range(6000)], minlength=3)
    assert counts / counts.sum() == pytest.approx([0.5, 0.3, 0.2], abs=0.025)


NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { Rng } from "./site_src/runtime/rng.js";
import { sampleToken } from "./site_src/runtime/sampler.js";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map(({ logits, options, seed, draws }) => {
  const rng = new Rng(seed);
  const x = Float32Array.from(logits);
  return Array.from({ length: draws }, () => sampleToken(x, options, rng).id);
});
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_python_and_javascript_samplers_pick_the_same_tokens():
    gen = np.random.default_rng(0)
    settings = [(0.0, 0, 1.0), (1.0, 0, 1.0), (0.7, 40, 1.0), (1.3, 0, 0.9), (0.9, 50, 0.95), (2.0, 0, 0.5), (1.0, 1, 1.0)]
    cases = []
    for i, (temperature, top_k, top_p) in enumerate(settings * 3):
        V = [50257, 1000, 7][i % 3]
        scale = [0.05, 1.0, 4.0][(i // 3) % 3]  # nearly flat (random weights) to peaked
        logits = (gen.standard_normal(V) * scale).astype(np.float32)
        if i % 2:
            logits[gen.integers(0, V, 3)] = logits.max()  # ties at the top
        cases.append({"logits": logits.tolist(), "seed": 1000 + i, "draws": 6, "options": {"temperature": temperature, "topK": min(top_k, V), "topP": top_p}})
    done = subprocess.run(
        ["node", "--input-type=module", "-e", NODE_SCRIPT], input=json.dumps(cases), capture_output=True, text=True, cwd=ROOT, check=True, timeout=120
    )
    javascript = json.loads(done.stdout)
    for case, js_ids in zip(cases, javascript):
        rng = Mulberry32(case["seed"])
        o = case["options"]
        logits = np.array(case["logits"], dtype=np.float32)
        python_ids = [sample_token(logits, o["temperature"], o["topK"], o["topP"], rng) for _ in range(case["draws"])]
        assert python_ids == js_ids, o
