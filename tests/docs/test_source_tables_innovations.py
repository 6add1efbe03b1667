"""The second half of the textbook: its tables match the sources, and its derived numbers match the demos.

`docs/data/seed_tables_2.json` holds every table these pages take from the source documents
(`../shared/seeds/`) or from the project's measured facts (`../shared/ARCHITECTURE.md`),
transcribed cell by cell. Each table is checked against both sides:

* the page: the Markdown table with the same header has exactly these rows;
* the source: a "rows" table appears in the source line by line (for ARCHITECTURE.md's
  measurements the page shows a subset of the columns, named by `source_columns`); a
  "phrases" table was assembled from prose, so each row names the source phrases its numbers
  come from.

The rest of the file recomputes every number the pages derive (parameter counts, KV-cache
bytes, FLOPs, Chinchilla budgets, probabilities, receptive fields) with `demos.size`,
`demos.kv_cache`, `demos.flash`, `demos.sampling` and `demos.bpe` or an independent formula,
and checks facts quoted from the sources against the source text.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from source_tables import ROOT, assert_page_shows, assert_phrase_rows, assert_well_formed, flat, load_tables, markdown_tables, page_text

SHARED_DIRS = [Path(os.environ["TX_SHARED"])] if os.environ.get("TX_SHARED") else []
SHARED_DIRS += [ROOT / "shared", ROOT.parent / "shared"]
SHARED = next((d for d in SHARED_DIRS if d.is_dir()), SHARED_DIRS[-1])  # TX_SHARED=/path overrides
SEEDS = Path(os.environ["TX_SEEDS"]) if os.environ.get("TX_SEEDS") else SHARED / "seeds"
DATA, TABLES = load_tables("seed_tables_2.json")

needs_sources = pytest.mark.skipif(not SEEDS.is_dir() or not (SHARED / "ARCHITECTURE.md").is_file(), reason=f"source documents not found under {SHARED}")


# --- helpers -----------------------------------------------------------------------------


def source_text(name: str) -> str:
    path = SEEDS / name.removeprefix("seeds/") if name.startswith("seeds/") else SHARED / name
    return path.read_text(encoding="utf-8")


# --- the data file -----------------------------------------------------------------------


def test_data_file_is_well_formed():
    assert_well_formed(DATA, TABLES, "phrases")
    for table in DATA["tables"]:
        if "source_columns" in table:
            assert len(table["source_columns"]) == len(table["header"]), table["id"]


# --- (a) data against the pages -----------------------------------------------------------


@pytest.mark.parametrize("table_id", sorted(TABLES))
def test_page_shows_the_table_cell_by_cell(table_id):
    table = TABLES[table_id]
    assert_page_shows(table)
    for spanning in table.get("spanning_rows", []):
        assert flat(spanning["page_sentence"]) in flat(page_text(table["page"])), spanning["page_sentence"]


# --- (b) data against the sources -----------------------------------------------------------


@needs_sources
@pytest.mark.parametrize("table_id", sorted(t for t in TABLES if TABLES[t]["check"] == "phrases"))
def test_phrase_rows_come_from_the_source_prose(table_id):
    table = TABLES[table_id]
    assert_phrase_rows(table, "phrases", flat(source_text(table["source"])), table["source"])


# --- (c) facts the pages quote from the sources -------------------------------------------------

SEED_002, SEED_004 = "seeds/002_597088cebdf16af1.txt", "seeds/004_ba5f00f7d4320cd3.txt"
FACTS = [  # (page, what the page says, source, the source's words for it)
    ("more/frontier-assistants.md", "as of June 2026", SEED_002, "Snapshot as of June 2026"),
    ("more/frontier-assistants.md", "this page will age", SEED_002, "this field moves fast, so always re-check"),
    ("more/frontier-assistants.md", "GPT-6.1 Sol and Claude Opus 5.5", SEED_004, "OpenAI's GPT-6.1 Sol, Anthropic's Claude Opus 5.5"),
    ("more/capstone.md", "handed in as a notebook together with a short written report", SEED_002, "Submit a notebook plus a short write-up."),
    (
        "more/capstone.md",
        "from writing attention from scratch to comparing frontier assistants",
        SEED_002,
        "from attention-from-scratch to a frontier-model comparison",
    ),
    ("more/responsible-use.md", "The course names six", SEED_002, "Evaluation, not vibes"),
    ("scaling/compute-optimal.md", "70 billion parameters and was trained on 1.4 trillion tokens", SEED_004, "I believe it trained it on $1.4 trillion tokens"),
    (
        "scaling/compute-optimal.md",
        "about 20 training tokens per parameter",
        SEED_004,
        "approximate compute-optimal relationship of 20 training tokens per model parameter",
    ),
    ("scaling/flops.md", "about $10^{25}$ FLOPs", SEED_004, "training FLOPs for LLMs is like 10 to the power of 25"),
    ("innovations/long-context.md", "about one million tokens of input", SEED_004, "roughly one million tokens as the industry-standard context length"),
    ("innovations/long-context.md", "roughly from 73K to 128K tokens", SEED_004, "roughly 73K–128K tokens"),
    ("prompting/context-rot.md", "Between roughly 73K and 128K tokens of context", SEED_004, "roughly 73K–128K tokens"),
    ("innovations/relative-bias.md", "In T5's released configuration there are 32 buckets", SEED_004, "bucketed relative distance"),
    ("innovations/sliding-window.md", "The Longformer model", SEED_004, "Sparse attention: Longformer"),
    ("innovations/positions.md", "found that the two performed about equally well", SEED_004, "both approaches were roughly leading to the same performance"),
    ("innovations/positions.md", r"\omega_i = 10000^{-2i/d_\text{model}}", SEED_004, "ω_i = 10000^(−2i/d_model)"),
    ("decoding/top-k.md", "keep only the $k$ most probable tokens", SEED_004, "select amongst top-k most probable next tokens"),
]


@needs_sources
@pytest.mark.parametrize("page, shown, source, words", FACTS, ids=[f"{p}:{s[:30]}" for p, s, *_ in FACTS])
def test_quoted_fact(page, shown, source, words):
    assert flat(shown) in flat(page_text(page)), f"{page} no longer says {shown!r}"
    assert flat(words) in flat(source_text(source)), f"{source} does not say {words!r}"


def test_frontier_page_is_dated_and_says_it_will_age():
    page = flat(page_text("more/frontier-assistants.md"))
    assert "A dated snapshot" in page and "as of June 2026" in page and "will age" in page


# --- (d) numbers the pages derive -----------------------------------------------------------------


def _size():
    return pytest.importorskip("demos.size")


def _count(preset: str, **changes) -> dict:
    size = _size()
    return size.count_parameters(**dict(size.preset(preset), **changes))


def _softmax(z):
    e = np.exp(np.asarray(z, dtype=float) - np.max(z))
    return e / e.sum()


def _majority(p: float, k: int) -> float:
    return sum(math.comb(k, j) * p**j * (1 - p) ** (k - j) for j in range(k // 2 + 1, k + 1))


def _derived() -> list[tuple[str, str, float, float, float]]:
    """(page, text shown on the page, value it states, value recomputed here, tolerance)."""
    size = _size()
    kv = pytest.importorskip("demos.kv_cache")
    flash = pytest.importorskip("demos.flash")
    gpt2, llama7, llama65 = _count("gpt2-small"), _count("llama-7b"), _count("llama-65b")
    llama7_gqa = _count("llama-7b", n_kv_head=8)
    vocab, layers = 50257, 12
    w7 = size.weight_memory(llama7["total"])["fp16"]
    mha7 = size.kv_cache_bytes_per_token(32, 32, 128, "fp16")
    gqa7 = size.kv_cache_bytes_per_token(32, 8, 128, "fp16")
    mqa7 = size.kv_cache_bytes_per_token(32, 1, 128, "fp16")
    traffic = flash.memory_traffic(1024, 64, 128, 128, False, "float16")
    traffic_causal = flash.memory_traffic(1024, 64, 128, 128, True, "float16")
    gen = kv.generation_flops(12, 768, 100, 200)
    confident, uncertain = [6, 2, 1.5, 1, 0.5, 0, -0.5, -1], [1.3, 1.2, 1.1, 1, 0.9, 0.8, 0.7, 0.6]
    p_conf, p_unc = _softmax(confident), _softmax(uncertain)
    gpt3_flops = size.training_flops(175 * 10**9, 300 * 10**9)
    chin_flops = size.training_flops(70 * 10**9, 1_400 * 10**9)
    gopher_flops = size.training_flops(280 * 10**9, 300 * 10**9)
    device = 1e15 * 0.4  # the flops page's assumed accelerator: 10^15 FLOP/s at 40 % utilisation
    needle = math.exp(3)
    return [
        # innovations
        ("innovations/positions.md", "786,432 parameters", 786_432, gpt2["position_embedding"], 0),
        ("innovations/positions.md", "about 0.6 %", 0.6, 100 * gpt2["position_embedding"] / gpt2["total"], 0.05),
        ("innovations/positions.md", "repeats about every 6.3 positions", 6.3, 2 * math.pi, 0.05),
        ("innovations/positions.md", r"2\pi \times 10{,}000 \approx 62{,}832", 62_832, 2 * math.pi * 10_000, 0.5),
        ("innovations/relative-bias.md", r"e^{-5} \approx 0.0067", 0.0067, math.exp(-10 / 2), 0.00005),
        ("innovations/relative-bias.md", r"10/256 \approx 0.039", 0.039, 10 / 256, 0.0005),
        ("innovations/relative-bias.md", r"a factor of about $0.96$", 0.96, math.exp(-10 / 256), 0.005),
        ("innovations/relative-bias.md", r"e^{-2} \approx 0.14", 0.14, math.exp(-8 / 4), 0.005),
        ("innovations/sliding-window.md", r"32 \times 4{,}096 = 131{,}072", 131_072, 32 * 4096, 0),
        ("innovations/sliding-window.md", r"24 \times (512 - 1) = 12{,}264", 12_264, 24 * 511, 0),
        ("innovations/sliding-window.md", "spans 12,265 tokens", 12_265, 24 * 511 + 1, 0),
        ("innovations/gqa-mqa.md", "| MHA | 32 | 524,288 bytes (512 KiB) | 2 GiB |", 2**31, mha7 * 4096, 0),
        ("innovations/gqa-mqa.md", "| GQA | 8 | 131,072 bytes (128 KiB) | 512 MiB |", 2**29, gqa7 * 4096, 0),
        ("innovations/gqa-mqa.md", "| MQA | 1 | 16,384 bytes (16 KiB) | 64 MiB |", 2**26, mqa7 * 4096, 0),
        ("innovations/gqa-mqa.md", "about 13.5 GB in 16-bit numbers", 13.5, w7 / 1e9, 0.05),
        ("innovations/gqa-mqa.md", "seven sequences of 4,096 tokens", 7, math.floor(w7 / (mha7 * 4096)) + 1, 0),
        ("innovations/gqa-mqa.md", "it takes twenty-six", 26, math.floor(w7 / (gqa7 * 4096)) + 1, 0),
        ("innovations/gqa-mqa.md", "from 2.5 MiB to 320 KiB per token", 2.5, size.kv_cache_bytes_per_token(80, 64, 128, "fp16") / 2**20, 0),
        ("innovations/gqa-mqa.md", "from 2.5 MiB to 320 KiB per token", 320, size.kv_cache_bytes_per_token(80, 8, 128, "fp16") / 2**10, 0),
        ("innovations/gqa-mqa.md", "removes about 0.8 billion", 0.8, (llama7["total"] - llama7_gqa["total"]) / 1e9, 0.05),
        ("innovations/gqa-mqa.md", "of its 6.7 billion parameters", 6.7, llama7["total"] / 1e9, 0.05),
        ("innovations/flash-attention.md", "hold 262,144 numbers", 262_144, 4 * 1024 * 64, 0),
        ("innovations/flash-attention.md", "| naive, three kernels | 4,456,448 | 8,912,896 bytes |", 4_456_448, traffic["naive"]["total"], 0),
        ("innovations/flash-attention.md", "| naive, three kernels | 4,456,448 | 8,912,896 bytes |", 8_912_896, traffic["naive"]["bytes"], 0),
        ("innovations/flash-attention.md", "| tiled, one kernel | 1,179,648 | 2,359,296 bytes |", 1_179_648, traffic["tiled"]["total"], 0),
        ("innovations/flash-attention.md", "| tiled, one kernel | 1,179,648 | 2,359,296 bytes |", 2_359_296, traffic["tiled"]["bytes"], 0),
        ("innovations/flash-attention.md", "| 720,896 | 1,441,792 bytes |", 720_896, traffic_causal["tiled"]["total"], 0),
        ("innovations/flash-attention.md", "| 720,896 | 1,441,792 bytes |", 1_441_792, traffic_causal["tiled"]["bytes"], 0),
        ("innovations/flash-attention.md", "about 3.8 times less data", 3.8, traffic["ratio"], 0.05),
        ("innovations/flash-attention.md", "about 6.2 times less", 6.2, traffic_causal["ratio"], 0.05),
        ("innovations/normalization.md", "38,400 parameters in all", 38_400, gpt2["norms_per_layer"] * layers + gpt2["final_norm"], 0),
        (
            "innovations/normalization.md",
            "would have 19,200",
            19_200,
            _count("gpt2-small", norm="rmsnorm")["norms_per_layer"] * layers + _count("gpt2-small", norm="rmsnorm")["final_norm"],
            0,
        ),
        ("innovations/long-context.md", "happens at 24,576 tokens", 24_576, 6 * 4096, 0),
        ("innovations/long-context.md", "about 41 times the linear one", 41, 1_000_000 / (6 * 4096), 0.5),
        ("innovations/long-context.md", "| multi-head | 32 | about 524 GB |", 524, mha7 * 1e6 / 1e9, 0.5),
        ("innovations/long-context.md", "| grouped-query | 8 | about 131 GB |", 131, gqa7 * 1e6 / 1e9, 0.5),
        ("innovations/long-context.md", "| multi-query | 1 | about 16 GB |", 16, mqa7 * 1e6 / 1e9, 0.5),
        ("innovations/long-context.md", "almost forty times", 38.9, mha7 * 1e6 / w7, 0.1),
        ("innovations/long-context.md", "about 13.1 GB for 100,000 tokens", 13.1, gqa7 * 100_000 / 1e9, 0.05),
        ("innovations/quantization.md", "497.8 MB in fp32", 497.8, size.weight_memory(gpt2["total"])["fp32"] / 1e6, 0.05),
        ("innovations/quantization.md", "248.9 MB in fp16", 248.9, size.weight_memory(gpt2["total"])["fp16"] / 1e6, 0.05),
        ("innovations/quantization.md", "124.4 MB in int8", 124.4, size.weight_memory(gpt2["total"])["int8"] / 1e6, 0.05),
        ("innovations/quantization.md", "62.2 MB in int4", 62.2, size.weight_memory(gpt2["total"])["int4"] / 1e6, 0.05),
        ("innovations/quantization.md", r"$5.0/127 \approx 0.039$", 0.039, 5.0 / 127, 0.0005),
        ("innovations/quantization.md", r"$0.5/127 \approx 0.0039$", 0.0039, 0.5 / 127, 0.00005),
        ("innovations/quantization.md", r"$2^{13} = 8{,}192$", 8192, float(np.spacing(np.float16(1.0))) / float(np.spacing(np.float32(1.0))), 0),
        ("innovations/quantization.md", "largest value 65,504", 65_504, float(np.finfo(np.float16).max), 0),
        # efficiency
        ("efficiency/kv-cache.md", r"$6.9 \times 10^{12}$", 6.9e12, gen["without_cache"], 0.05e12),
        ("efficiency/kv-cache.md", r"$5.2 \times 10^{10}$", 5.2e10, gen["with_cache"], 0.05e10),
        ("efficiency/kv-cache.md", "roughly 132 times fewer", 132, gen["ratio"], 0.5),
        ("efficiency/kv-cache.md", "73,728 bytes per token", 73_728, kv.kv_cache_bytes(12, 12, 64, 1, "float32")["bytes_per_token"], 0),
        ("efficiency/kv-cache.md", "72 MiB for a full", 72, kv.kv_cache_bytes(12, 12, 64, 1024, "float32")["total_bytes"] / 2**20, 0),
        ("efficiency/kv-cache.md", "takes 1,207,959,552 bytes", 1_207_959_552, kv.kv_cache_bytes(12, 12, 64, 1024, "float16", 32)["total_bytes"], 0),
        ("efficiency/kv-cache.md", "the 250 MB that the model's 16-bit weights", 250, size.weight_memory(gpt2["total"])["fp16"] / 1e6, 1.5),
        ("efficiency/kv-cache.md", r"= 98{,}304$ bytes", 98_304, size.kv_cache_bytes_per_token(24, 16, 64, "fp16"), 0),
        ("efficiency/quantization.md", "about 131 GB in 16-bit numbers", 131, size.weight_memory(llama65["total"])["fp16"] / 1e9, 0.5),
        ("efficiency/quantization.md", "in int8 it needs about 65 GB", 65, size.weight_memory(llama65["total"])["int8"] / 1e9, 0.5),
        ("efficiency/quantization.md", "in int4 about 33 GB", 33, size.weight_memory(llama65["total"])["int4"] / 1e9, 0.5),
        ("efficiency/distillation.md", r"= 81{,}912{,}576", 81_912_576, _count("gpt2-small", n_layer=6)["total"], 0),
        ("efficiency/distillation.md", r"6 \times 7{,}087{,}872", 7_087_872, gpt2["per_layer"], 0),
        (
            "efficiency/distillation.md",
            r"+ 38{,}597{,}376 + 786{,}432 + 1{,}536",
            38_597_376 + 786_432 + 1_536,
            gpt2["token_embedding"] + gpt2["position_embedding"] + gpt2["final_norm"],
            0,
        ),
        ("efficiency/distillation.md", "about a third of the parameters", 1 / 3, 1 - _count("gpt2-small", n_layer=6)["total"] / gpt2["total"], 0.01),
        ("efficiency/distillation.md", "Only the blocks' 85 million parameters", 85, gpt2["layers"] / 1e6, 0.5),
        ("efficiency/serving.md", "about 148 tokens per second", 148, 2e12 / w7, 0.5),
        ("efficiency/serving.md", r"13.5 \approx 74", 74, 1e12 / w7, 0.5),
        ("efficiency/batching.md", "2 GiB and 30 sequences fit", 30, math.floor((80e9 - w7) / (mha7 * 4096)), 0),
        ("efficiency/batching.md", "512 MiB and 123 fit", 123, math.floor((80e9 - w7) / (gqa7 * 4096)), 0),
        # decoding
        ("decoding/greedy.md", r"0.5 \times 0.4 \times 0.6 \times 0.7 = 0.084", 0.084, 0.5 * 0.4 * 0.6 * 0.7, 1e-12),
        ("decoding/beam-search.md", "more than 2.5 billion two-token continuations", 2.5, vocab**2 / 1e9, 0.03),
        ("decoding/beam-search.md", "is 201,028 candidates", 201_028, 4 * vocab, 0),
        ("decoding/sampling.md", r"1 - 0.99^{100} \approx 0.63", 0.63, 1 - 0.99**100, 0.005),
        ("decoding/sampling.md", r"\approx 6.9$", 6.9, math.sqrt(1000 * 0.05 * 0.95), 0.05),
        ("decoding/sampling.md", r"$0.995^{200} \approx 0.37$", 0.37, 0.995**200, 0.005),
        ("decoding/temperature.md", "| 0.5 | 4, 2, 0 | 0.867 | 0.117 | 0.016 |", 0.867, _softmax([4, 2, 0])[0], 0.0005),
        ("decoding/temperature.md", "| 0.5 | 4, 2, 0 | 0.867 | 0.117 | 0.016 |", 0.117, _softmax([4, 2, 0])[1], 0.0005),
        ("decoding/temperature.md", "| 0.5 | 4, 2, 0 | 0.867 | 0.117 | 0.016 |", 0.016, _softmax([4, 2, 0])[2], 0.0005),
        ("decoding/temperature.md", "| 1 | 2, 1, 0 | 0.665 | 0.245 | 0.090 |", 0.665, _softmax([2, 1, 0])[0], 0.0005),
        ("decoding/temperature.md", "| 1 | 2, 1, 0 | 0.665 | 0.245 | 0.090 |", 0.245, _softmax([2, 1, 0])[1], 0.0005),
        ("decoding/temperature.md", "| 1 | 2, 1, 0 | 0.665 | 0.245 | 0.090 |", 0.090, _softmax([2, 1, 0])[2], 0.0005),
        ("decoding/temperature.md", "| 2 | 1, 0.5, 0 | 0.506 | 0.307 | 0.186 |", 0.506, _softmax([1, 0.5, 0])[0], 0.0005),
        ("decoding/temperature.md", "| 2 | 1, 0.5, 0 | 0.506 | 0.307 | 0.186 |", 0.307, _softmax([1, 0.5, 0])[1], 0.0005),
        ("decoding/temperature.md", "| 2 | 1, 0.5, 0 | 0.506 | 0.307 | 0.186 |", 0.186, _softmax([1, 0.5, 0])[2], 0.0005),
        ("decoding/temperature.md", r"e^2 \approx 7.4", 7.4, math.exp(2), 0.05),
        ("decoding/temperature.md", r"e^{0.5} \approx 1.65", 1.65, math.exp(0.5), 0.005),
        ("decoding/temperature.md", r"e^4 \approx 54.6", 54.6, math.exp(4), 0.05),
        ("decoding/top-k.md", "has probability 0.957 on its own", 0.957, p_conf[0], 0.0005),
        ("decoding/top-k.md", "two runners-up with 1.8 % and 1.1 %", 1.8, 100 * p_conf[1], 0.05),
        ("decoding/top-k.md", "two runners-up with 1.8 % and 1.1 %", 1.1, 100 * p_conf[2], 0.05),
        ("decoding/top-k.md", "they hold only 2.8 % of the mass", 2.8, 100 * (p_conf[1] + p_conf[2]), 0.05),
        ("decoding/top-k.md", "from 0.173 down to 0.086", 0.173, p_unc[0], 0.0005),
        ("decoding/top-k.md", "from 0.173 down to 0.086", 0.086, p_unc[-1], 0.0005),
        ("decoding/top-k.md", "Top-3 keeps 47 % of the mass", 47, 100 * p_unc[:3].sum(), 0.5),
        ("decoding/top-k.md", "holding the other 53 %", 53, 100 * p_unc[3:].sum(), 0.5),
        ("decoding/top-k.md", "0.625, 0.25 and 0.125", 0.625, 0.5 / 0.8, 1e-12),
        ("decoding/top-p.md", "probability 0.957, which already reaches 0.9", 0.957, p_conf[0], 0.0005),
        ("decoding/top-p.md", "they hold 91.4 % of the mass", 91.4, 100 * p_unc[:7].sum(), 0.05),
        ("decoding/guided-json.md", r"20{,}000 \times 0.005 = 100", 100, 20_000 * 0.005, 1e-9),
        # scaling
        ("scaling/scaling-laws.md", r"2^{-0.076} \approx 0.95", 0.95, 2**-0.076, 0.005),
        ("scaling/scaling-laws.md", r"0.949^{5} \approx 0.77", 0.77, 0.949**5, 0.005),
        ("scaling/scaling-laws.md", r"0.949^{6} \approx 0.73", 0.73, 0.949**6, 0.005),
        ("scaling/compute-optimal.md", r"| Chinchilla | 70B | 1.4T | 20 | $5.9 \times 10^{23}$ |", 5.9e23, chin_flops, 0.05e23),
        ("scaling/compute-optimal.md", r"| Gopher | 280B | 300B | about 1.1 | $5.0 \times 10^{23}$ |", 5.0e23, gopher_flops, 0.05e23),
        ("scaling/compute-optimal.md", "| Gopher | 280B | 300B | about 1.1 |", 1.1, 300 / 280, 0.05),
        ("scaling/compute-optimal.md", r"$5.88 \times 10^{23}$ operations, gives back $N \approx 70$ billion", 70e9, math.sqrt(chin_flops / 120), 0.5e9),
        ("scaling/compute-optimal.md", r"$D \approx 1.4$ trillion", 1.4e12, 20 * math.sqrt(chin_flops / 120), 0.05e12),
        ("scaling/compute-optimal.md", r"$3.15 \times 10^{23}$", 3.15e23, gpt3_flops, 0.005e23),
        ("scaling/compute-optimal.md", "a model of about 51 billion parameters", 51e9, math.sqrt(gpt3_flops / 120), 0.5e9),
        ("scaling/compute-optimal.md", "on about 1 trillion tokens", 1e12, 20 * math.sqrt(gpt3_flops / 120), 0.05e12),
        ("scaling/compute-optimal.md", "about 150 per parameter", 150, 1e12 / 6.7e9, 1),
        (
            "scaling/compute-optimal.md",
            "a Chinchilla budget of about 135 billion",
            135e9,
            size.model_size(**size.preset("llama-7b"))["chinchilla_tokens"],
            0.5e9,
        ),
        ("scaling/compute-optimal.md", r"\sqrt{1.2 \times 10^{22} / 120} = 10^{10}", 1e10, math.sqrt(1.2e22 / 120), 1e-3),
        ("scaling/flops.md", r"= 3.15 \times 10^{23}$ FLOPs", 3.15e23, gpt3_flops, 0.005e23),
        ("scaling/flops.md", "about 120 times as", 120, 3.8e25 / gpt3_flops, 1),
        ("scaling/flops.md", r"about $7.9 \times 10^{8}$ seconds", 7.9e8, gpt3_flops / device, 0.05e8),
        ("scaling/flops.md", "roughly 25 years", 25, gpt3_flops / device / (365.25 * 86400), 0.5),
        ("scaling/flops.md", "would need about 9 days", 9, gpt3_flops / (1000 * device) / 86400, 0.5),
        ("scaling/flops.md", "takes about 29 days", 29, 1e25 / (10_000 * device) / 86400, 0.5),
        ("scaling/flops.md", r"about $2.5 \times 10^{8}$ FLOPs per token", 2.5e8, 2 * gpt2["total"], 0.05e8),
        ("scaling/flops.md", r"about $1.4 \times 10^{11}$", 1.4e11, 2 * 70e9, 0),
        ("scaling/flops.md", r"= 8.4 \times 10^{22}$ FLOPs", 8.4e22, size.training_flops(7 * 10**9, 2 * 10**12), 0),
        ("scaling/serving-smaller.md", "after 4.2 trillion tokens of use", 4.2e12, 3 * 1.4e12, 0),
        ("scaling/serving-smaller.md", r"| LLaMA 7B shape | 6.7 billion | $1.3 \times 10^{10}$ | 13.5 GB |", 1.3e10, 2 * llama7["total"], 0.05e10),
        ("scaling/serving-smaller.md", r"| LLaMA 7B shape | 6.7 billion | $1.3 \times 10^{10}$ | 13.5 GB |", 13.5, w7 / 1e9, 0.05),
        ("scaling/serving-smaller.md", r"| LLaMA 65B shape | 65.3 billion | $1.3 \times 10^{11}$ | 130.6 GB |", 65.3, llama65["total"] / 1e9, 0.05),
        ("scaling/serving-smaller.md", r"| LLaMA 65B shape | 65.3 billion | $1.3 \times 10^{11}$ | 130.6 GB |", 1.3e11, 2 * llama65["total"], 0.05e11),
        (
            "scaling/serving-smaller.md",
            r"| LLaMA 65B shape | 65.3 billion | $1.3 \times 10^{11}$ | 130.6 GB |",
            130.6,
            size.weight_memory(llama65["total"])["fp16"] / 1e9,
            0.05,
        ),
        ("scaling/serving-smaller.md", r"30 / 8 \approx 3.75", 3.75, 30 / 8, 0),
        # prompting
        ("prompting/context-window.md", r"300 \times 500 = 150{,}000", 150_000, 300 * 500, 0),
        ("prompting/context-rot.md", r"e^3 / (e^3 + 4) \approx 0.83", 0.83, needle / (needle + 4), 0.005),
        ("prompting/context-rot.md", r"e^3 / (e^3 + 24) \approx 0.46", 0.46, needle / (needle + 24), 0.005),
        ("prompting/context-rot.md", "with 1,000 it is about 0.02", 0.02, needle / (needle + 1000), 0.0005),
        ("prompting/context-rot.md", r"e^3 / (e^3 + 99) \approx 0.17", 0.17, needle / (needle + 99), 0.005),
        ("prompting/context-rot.md", r"s = \ln 99 \approx 4.6", 4.6, math.log(99), 0.05),
        ("prompting/self-consistency.md", "a vote of 5 runs, 68 %", 68, 100 * _majority(0.6, 5), 0.5),
        ("prompting/self-consistency.md", "of 15 runs, 79 %", 79, 100 * _majority(0.6, 15), 0.5),
        ("prompting/self-consistency.md", "of 41 runs, about 90 %", 90, 100 * _majority(0.6, 41), 0.5),
        ("prompting/self-consistency.md", "right only 32 % of the time", 32, 100 * _majority(0.4, 5), 0.5),
        ("prompting/self-consistency.md", "0.216 + 0.432 = 0.648", 0.648, _majority(0.6, 3), 1e-12),
    ]


_DERIVED = _derived()


@pytest.mark.parametrize("page, shown, value, computed, tolerance", _DERIVED, ids=[f"{page}:{shown[:40]}:{value:g}" for page, shown, value, *_ in _DERIVED])
def test_derived_figure(page, shown, value, computed, tolerance):
    assert flat(shown) in flat(page_text(page)), f"{page} no longer says {shown!r}"
    assert abs(computed - value) <= tolerance, f"{page}: {shown!r} but the computation gives {computed:.6g}"


# --- (e) checks that need more than one number ------------------------------------------------


def reachable_after(layers: int, window: int, n: int = 64) -> np.ndarray:
    """Which input positions can influence each output after `layers` sliding-window layers."""
    i, j = np.indices((n, n))
    band = (j <= i) & (j > i - window)  # query i sees keys i - window + 1 .. i
    reach = np.eye(n, dtype=bool)
    for _ in range(layers):
        reach = (band.astype(int) @ reach.astype(int)) > 0
    return reach


@pytest.mark.parametrize("layers, window", [(1, 3), (2, 3), (3, 3), (4, 5), (6, 2)])
def test_receptive_field_is_layers_times_window_minus_one(layers, window):
    reach = reachable_after(layers, window)
    last = reach.shape[0] - 1
    assert reach[last].sum() == layers * (window - 1) + 1
    assert reach[last, last - layers * (window - 1)] and not reach[last, last - layers * (window - 1) - 1]


def test_sliding_window_toy_example_on_the_page():
    page = flat(page_text("innovations/sliding-window.md"))
    assert "position 10 sees positions 8 to 10 after one layer, 6 to 10 after two, and 4 to 10 after three" in page
    for layers, first in ((1, 8), (2, 6), (3, 4)):
        reach = reachable_after(layers, 3, n=11)
        assert np.flatnonzero(reach[10]).tolist() == list(range(first, 11))
    table = [rows for header, rows in markdown_tables(page_text("innovations/sliding-window.md")) if header[0] == "query \\ key"][0]
    band = reachable_after(1, 3, n=6)
    assert [[cell == "■" for cell in row[1:]] for row in table] == band.tolist()


def test_float16_example_of_non_associativity():
    big, one = np.float16(2048), np.float16(1)
    assert (big + one) - big == 0 and (big - big) + one == 1
    assert r"(2048 + 1) - 2048 = 0, \qquad (2048 - 2048) + 1 = 1" in page_text("efficiency/determinism.md")


def test_alibi_temperature_equals_slope():
    """relative-bias.md: temperature 2 on slope-1/2 biases gives the weights of slope 1/4."""
    sampling = pytest.importorskip("demos.sampling")
    biases = [-0.5 * k for k in range(8)]
    tempered = sampling.next_token_distribution(biases, temperature=2)["probs"]
    np.testing.assert_allclose(tempered, _softmax([-0.25 * k for k in range(8)]), rtol=1e-12, atol=1e-15)
    page = page_text("innovations/relative-bias.md")
    assert 'logits="0,-0.5,-1,-1.5,-2,-2.5,-3,-3.5"' in page and "At temperature 2 the weights are" in flat(page)


def test_top_k_and_top_p_keep_what_the_pages_say():
    sampling = pytest.importorskip("demos.sampling")
    confident, uncertain = [6, 2, 1.5, 1, 0.5, 0, -0.5, -1], [1.3, 1.2, 1.1, 1, 0.9, 0.8, 0.7, 0.6]
    assert sampling.next_token_distribution(confident, top_k=3)["num_kept"] == 3
    assert sampling.next_token_distribution(uncertain, top_k=3)["num_kept"] == 3
    assert sampling.next_token_distribution(confident, top_p=0.9)["num_kept"] == 1
    assert sampling.next_token_distribution(uncertain, top_p=0.9)["num_kept"] == 7
    assert "seven of the eight tokens are needed to reach 0.9" in flat(page_text("decoding/top-p.md"))
    for page in ("decoding/top-k.md", "decoding/top-p.md"):
        text = page_text(page)
        assert 'logits="6,2,1.5,1,0.5,0,-0.5,-1"' in text and 'logits="1.3,1.2,1.1,1,0.9,0.8,0.7,0.6"' in text


def test_chain_of_thought_token_count():
    bpe = pytest.importorskip("demos.bpe")
    merges = next((p for p in (ROOT / "build" / "models").glob("*/merges.txt")), None) if (ROOT / "build" / "models").is_dir() else None
    if merges is None:
        pytest.skip("no exported model with GPT-2's merges.txt under build/models")
    page = page_text("prompting/chain-of-thought.md")
    chain = re.search(r'<tx-bpe word="([^"]+)"', page).group(1)
    assert len(bpe.apply_merges(chain, merges.read_text(encoding="utf-8"))["tokens"]) == 42
    assert "42 output tokens" in flat(page)
    assert len(bpe.apply_merges("28", merges.read_text(encoding="utf-8"))["tokens"]) == 1
