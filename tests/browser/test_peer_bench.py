"""bench/peer.py end to end on the site's model (the book's, ~7 MB): the site's runtime and
Transformers.js in the same headless Chromium, one round, no long context.

Both run the fp32 reference graph here, so their greedy tokens must be the same ids: the check
that the peer really ran this model (the site's q8x has other weights, q4x's 4-bit blocks).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from served import ROOT, SITE, model_dir

pytestmark = pytest.mark.browser

PEER_BUNDLE = ROOT / "bench" / "peer" / "node_modules" / "@huggingface" / "transformers" / "dist" / "transformers.min.js"
SUMMARY_FIELDS = {
    "variant",
    "threads",
    "download_mb",
    "decode_warm_tok_s",
    "peer_best_wasm_tok_s",
    "over_peer",
    "decode_after_1000_tok_s",
    "peak_memory_long_mb",
    "first_token_512_ms",
    "first_over_warm",
    "prefill_128_ms",
    "native_fp32_prefill_128_ms",
    "prefill_over_native_fp32",
    "decode_in_session_run",
    "spread",
}


@pytest.mark.skipif(not PEER_BUNDLE.exists(), reason="Transformers.js is not installed in bench/peer/node_modules: run `make bench-peer-deps` (make test does)")
def test_peer_bench_generates_the_sites_tokens(tmp_path):
    model = ROOT / "build" / "models" / model_dir().name  # the export behind the site under test
    out = tmp_path / "peer.json"
    command = [
        *(sys.executable, str(ROOT / "bench" / "peer.py"), "--model", str(model), "--site", str(SITE)),
        *("--variants", "fp32", "--peer-dtypes", "fp32", "--threads", "2", "--repeat", "1", "--no-long"),
        *("--work", str(tmp_path / "work"), "--out", str(out)),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads(out.read_text())

    assert report["benchmark"] == "bench/peer.py" and report["argv"][:2] == ["--model", str(model)]
    assert report["commit"] and report["date"] and report["machine"]["load_average_before"]
    versions = report["versions"]
    assert versions["transformers_js"] == "4.3.2"
    assert versions["onnxruntime_web_peer"].startswith("1.31.0-dev") and versions["onnxruntime_web_peer_in_page"] == versions["onnxruntime_web_peer"]
    assert versions["onnxruntime_web_site"] and "Chrome" in versions["chromium"]

    site, peer = (next(r for r in report["results"] if r["runner"] == runner) for runner in ("site", "peer"))
    for run in (site, peer):
        assert "error" not in run and run["requests"] > 0
        assert run["measured"]["threads"] == 2 and run["measured"]["cross_origin_isolated"]
    assert "onnx/model.onnx" in peer["measured"]["files"]

    (row,) = report["summary"]
    assert set(row) == SUMMARY_FIELDS
    assert (row["variant"], row["threads"]) == ("fp32", 2)
    assert row["decode_warm_tok_s"] > 0 and row["peer_best_wasm_tok_s"] > 0 and row["download_mb"] > 0
    assert row["over_peer"] == pytest.approx(row["decode_warm_tok_s"] / row["peer_best_wasm_tok_s"], abs=0.01)
    assert row["decode_after_1000_tok_s"] is None and row["peak_memory_long_mb"] is None and row["first_token_512_ms"] is None  # --no-long
    assert row["first_over_warm"] > 0
    assert 0 < row["decode_in_session_run"] < 1  # the rest of a step is the worker's own JavaScript
    (round_,) = report["rounds"]
    assert round_["peer_best"] == "fp32" and round_["over_peer"]["fp32"] > 0
    # item 4: the site's prefill beside onnxruntime-Python's on the same fp32 graph, in the same round
    native = next(r for r in report["results"] if r["runner"] == "native")
    assert "error" not in native and native["measured"]["prefill_ms"]["128"] > 0
    assert row["native_fp32_prefill_128_ms"] == pytest.approx(native["measured"]["prefill_ms"]["128"], abs=0.01)
    assert row["prefill_128_ms"] == pytest.approx(site["measured"]["prefill_ms"]["128"], abs=0.01)
    assert row["prefill_over_native_fp32"] == pytest.approx(row["prefill_128_ms"] / row["native_fp32_prefill_128_ms"], abs=0.01)

    checks = report["checks"]
    assert checks["prompt_ids_agree"], "the site's and the peer's tokenizers read the prompt differently"
    new_tokens = report["setup"]["new_tokens"]
    assert len(site["measured"]["greedy_ids"]) == new_tokens
    assert peer["measured"]["greedy_ids"] == site["measured"]["greedy_ids"], checks["site_vs_peer"]
    assert peer["measured"]["greedy_ids"] == checks["native_greedy_ids"]["fp32"], checks["peer_vs_native"]
    assert [(c["same_weights"], c["match"]) for c in checks["site_vs_peer"]] == [(True, True)]
