"""The numbers the Training pages state (the formats' table, ZeRO's per-GPU memory, the LoRA
table), each found on its page as written and compared with what `demos` computes."""

from __future__ import annotations

import pytest
from test_facts import flat_page

from demos import lora, mixed_precision, sharding

NUMERICS = "training/numerics-and-scale.md"
AFTER = "training/after-pretraining.md"
GB, MB = 1e9, 1e6


def _cases():
    f16, bf16, f32 = (mixed_precision.format_info(f) for f in ("float16", "bfloat16", "float32"))
    zero = [sharding.model_state_memory(7.5e9, 64, s)["total_gb"] for s in range(4)]
    small, big = lora.memory("gpt2-small", 8, "q,v"), lora.memory("llama-7b", 8, "q,v")
    gpt2_share = lora.count("gpt2-small", 8, "q,v")["share"]
    llama_share = lora.count("llama-7b", 8, "q,v")["share"]
    gpt2_state = sharding.model_state_memory(lora.MODELS["gpt2-small"]["params"], 1)["total_gb"]
    return [
        # (page, phrase, stated, computed, tolerance)
        (NUMERICS, "| float16 | 16 | 5 | 10 | 65,504 | 6.1 × 10⁻⁵ | 9.8 × 10⁻⁴ |", 65504, f16["max"], 0),
        (NUMERICS, "| float16 | 16 | 5 | 10 | 65,504 | 6.1 × 10⁻⁵ | 9.8 × 10⁻⁴ |", 6.1e-5, f16["smallest_normal"], 0.05e-5),
        (NUMERICS, "| float16 | 16 | 5 | 10 | 65,504 | 6.1 × 10⁻⁵ | 9.8 × 10⁻⁴ |", 9.8e-4, f16["epsilon"], 0.05e-4),
        (NUMERICS, "| bfloat16 | 16 | 8 | 7 | 3.4 × 10³⁸ | 1.2 × 10⁻³⁸ | 7.8 × 10⁻³ |", 7.8e-3, bf16["epsilon"], 0.05e-3),
        (NUMERICS, "| float32 | 32 | 8 | 23 | 3.4 × 10³⁸ | 1.2 × 10⁻³⁸ | 1.2 × 10⁻⁷ |", 1.2e-7, f32["epsilon"], 0.05e-7),
        (NUMERICS, "about 3.3 decimal digits", 3.3, f16["digits"], 0.05),
        (NUMERICS, "about 2.4 digits", 2.4, bf16["digits"], 0.05),
        (NUMERICS, r"every update smaller than $2^{-9} \approx 0.002$", 2**-9, mixed_precision.stale_updates(1.0, 1e-3, 1, "bfloat16")["half_gap"], 0),
        (NUMERICS, "more than half fall below", 0.5, min(mixed_precision.flush(1.0, "float16")["zero"], 0.5), 0),
        (NUMERICS, "A 7.5-billion-parameter model holds 120 GB of model state", 120, zero[0], 0),
        (NUMERICS, "from 120 GB per GPU down to 1.88 GB", 1.88, zero[3], 0.005),
        (NUMERICS, "or 30 GB for 7.5 billion parameters", 30, 4 * 7.5, 0),
        (NUMERICS, "not to 120 / 64?", 31.4, zero[1], 0.05),
        (NUMERICS, "GPT-2 small's 124 million parameters need about 2 GB of model state", 2, gpt2_state, 0.05),
        (AFTER, "| trainable with LoRA | 294,912 (0.24%) | 4,194,304 (0.06%) |", 294_912, small["trainable"], 0),
        (AFTER, "| trainable with LoRA | 294,912 (0.24%) | 4,194,304 (0.06%) |", 4_194_304, big["trainable"], 0),
        (AFTER, "| trainable with LoRA | 294,912 (0.24%) | 4,194,304 (0.06%) |", 0.24, 100 * gpt2_share, 0.005),
        (AFTER, "| trainable with LoRA | 294,912 (0.24%) | 4,194,304 (0.06%) |", 0.06, 100 * llama_share, 0.005),
        (AFTER, "| 2.0 GB | 108 GB |", 2.0, small["full"] / GB, 0.05),
        (AFTER, "| 2.0 GB | 108 GB |", 108, big["full"] / GB, 0.5),
        (AFTER, "| 0.25 GB | 13.5 GB |", 0.25, small["lora"] / GB, 0.005),
        (AFTER, "| 0.25 GB | 13.5 GB |", 13.5, big["lora"] / GB, 0.05),
        (AFTER, "| 0.59 MB instead of 249 MB | 8.4 MB instead of 13.5 GB |", 0.59, small["lora_checkpoint"] / MB, 0.005),
        (AFTER, "| 0.59 MB instead of 249 MB | 8.4 MB instead of 13.5 GB |", 249, small["full_checkpoint"] / MB, 0.5),
        (AFTER, "| 0.59 MB instead of 249 MB | 8.4 MB instead of 13.5 GB |", 8.4, big["lora_checkpoint"] / MB, 0.05),
        (AFTER, "| 0.59 MB instead of 249 MB | 8.4 MB instead of 13.5 GB |", 13.5, big["full_checkpoint"] / GB, 0.05),
        (AFTER, "its 4.7 million and 37.7 million trainable parameters are ranks 1 and 8", 4.7, lora.count("gpt3-175b", 1, "q,v")["trainable"] / MB, 0.05),
        (AFTER, "its 4.7 million and 37.7 million trainable parameters are ranks 1 and 8", 37.7, lora.count("gpt3-175b", 8, "q,v")["trainable"] / MB, 0.05),
    ]


CASES = _cases()


@pytest.mark.parametrize("page, phrase, stated, computed, tolerance", CASES, ids=[f"{c[0]}:{i}" for i, c in enumerate(CASES)])
def test_training_pages_state_the_computed_numbers(page, phrase, stated, computed, tolerance):
    assert " ".join(phrase.split()) in flat_page(page), f"{page}: phrase not found: {phrase}"
    assert abs(stated - computed) <= tolerance, f"{page}: {phrase!r} states {stated}, the code gives {computed}"


def test_the_induction_plateau_numbers_are_the_benchmarks():
    """in-your-browser.md: when the induction head formed in bench/induction_phase.py's runs."""
    import json
    import math

    from test_facts import ROOT

    runs = json.loads((ROOT / "bench" / "results" / "induction_phase.json").read_text(encoding="utf-8"))["runs"]
    page = flat_page("training/in-your-browser.md")
    small = [r for r in runs if r["batch"] == 32]
    assert {r["lr"] for r in small} == {0.003, 0.01} and all(r["induction_step"] is None and r["steps"] == 20_000 for r in small)
    assert "no layer-1 head passed an induction score of 0.4 in 20,000 steps, at either learning rate tried (0.003 and 0.01)" in page
    (formed,) = [r for r in runs if r["induction_step"] is not None]
    assert (formed["batch"], formed["lr"], formed["phase_step"], formed["induction_step"]) == (128, 0.01, 4800, 4900)
    assert f"{formed['final']['eval_second']:.2f} nats" in page and formed["final"]["step"] == 8000
    assert max(formed["final"]["scores"][1]) > 0.4
    assert f"{formed['induction_step'] * formed['batch']:,} sequences" in page
    assert "$\\ln 16 \\approx 2.77$" in page and round(math.log(16), 2) == 2.77
    others = [r for r in runs if r is not formed and r["batch"] != 32]
    assert all(r["induction_step"] is None for r in others)
    assert {r["batch"] for r in others} == {64, 128, 256} and max(r["lr"] for r in others) == 0.02
    assert {min(r["steps"] for r in others), max(r["steps"] for r in others)} == {4000, 8000}


def test_the_browser_time_of_the_induction_run():
    """model/runtime.md: the induction run's steps in the widget's batches, at the widget's measured rate."""
    import json

    from test_facts import ROOT

    from demos import training

    results = ROOT / "bench" / "results"
    (formed,) = [r for r in json.loads((results / "induction_phase.json").read_text())["runs"] if r["induction_step"] is not None]
    rate = json.loads((results / "training.json").read_text())["summary"]["induction/browser"]["steps_per_second"]["median"]
    widget_batch = training.DEFAULTS["induction"]["batch"]
    widget_steps = formed["induction_step"] * formed["batch"] // widget_batch
    page = flat_page("model/runtime.md")
    assert f"{formed['induction_step']:,} steps of\n{formed['batch']}".replace("\n", " ") in page
    assert f"the work of {widget_steps:,} of the widget's steps of {widget_batch}" in page
    assert f"about {round(widget_steps / rate / 60)} minutes of training" in page
    assert f"({training.MAX_STEPS:,} steps at most)" in page


def test_the_induction_reruns_are_the_benchmarks():
    """in-your-browser.md: the same command run again (seed 0) and with seeds 1 and 2 (bench/results/induction_phase_rerun.json)."""
    import json

    from test_facts import ROOT

    rerun = json.loads((ROOT / "bench" / "results" / "induction_phase_rerun.json").read_text(encoding="utf-8"))
    page = flat_page("training/in-your-browser.md")
    runs = rerun["runs"]
    assert [(r["batch"], r["lr"], r["steps"], r["seed"]) for r in runs] == [(128, 0.01, 8000, s) for s in (0, 1, 2)]
    assert all(r["induction_step"] is None and max(r["final"]["scores"][1]) < 0.4 for r in runs)
    losses = ", ".join(f"{r['final']['eval_second']:.3f}" for r in runs[:2]) + f" and {runs[2]['final']['eval_second']:.3f} nats"
    assert f"the second copy's loss fell to {losses}" in page
    assert rerun["first_eval_differing_from_the_recorded_run"] == 200 and "agreed at step 100 and parted in the fourth decimal by step 200" in page
    (recorded,) = [r for r in json.loads((ROOT / "bench" / "results" / "induction_phase.json").read_text())["runs"] if r["induction_step"] is not None]
    at_200 = [next(e["eval_loss"] for e in r["evals"] if e["step"] == 200) for r in (recorded, runs[0])]
    assert 1e-4 <= abs(at_200[0] - at_200[1]) < 1e-3  # the fourth decimal
