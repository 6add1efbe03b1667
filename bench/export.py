"""Benchmark of the export pipeline: time and peak memory of each stage, sizes, CPU decode speed.

Runs ``model-export build | quantize | validate | package | report`` one process each (so each
stage's peak resident memory is its own), then gathers the numbers into one JSON file under
``bench/results/`` (git-ignored):

    .venv/bin/python bench/export.py --preset small-random
    .venv/bin/python bench/export.py --preset tiny --runs 5 --attention-cost

Decode speed is ONNX Runtime in Python on this machine's CPU: greedy decoding with the KV cache,
an 8-token prompt and 64 new tokens, median of ``--runs`` (at least 5) timed runs per variant.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def run_stage(args: list[str]) -> dict:
    """Runs ``python -m model_export ARGS``; returns its wall time, peak RSS and exit status."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "model_export", *args], cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "command": " ".join(["model-export", *args]),
        "exit": process.returncode,
        "wall_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),  # Linux reports KiB
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--preset", default="small-random", help="preset to export (default small-random)")
    source.add_argument("--from", dest="source", help="a save_pretrained directory or a Hub id instead")
    parser.add_argument("--out", type=Path, help="build directory (default: a temporary one, deleted)")
    parser.add_argument("--runs", type=int, default=5, help="timed decoding runs per variant, >= 5 (default 5)")
    parser.add_argument("--new-tokens", type=int, default=64, help="tokens per decoding run (default 64)")
    parser.add_argument("--threads", type=int, help="ONNX Runtime threads (default: its own choice)")
    parser.add_argument("--attention-cost", action="store_true", help="also time the attention outputs")
    parser.add_argument("--output", type=Path, help="result file (default bench/results/export-NAME-TIME.json)")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = Path(args.source).name if args.source else args.preset
    source = ["--from", args.source] if args.source else ["--preset", args.preset]
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        out = args.out or Path(tmp) / name
        report = ["--runs", str(args.runs), "--new-tokens", str(args.new_tokens)]
        report += ["--threads", str(args.threads)] if args.threads else []
        report += ["--attention-cost"] if args.attention_cost else []
        stages = {}
        for stage, extra in [("build", source), ("quantize", []), ("validate", []), ("package", []), ("report", report)]:
            print(f"== {stage}", flush=True)
            stages[stage] = run_stage([stage, "--out", str(out), *extra])
            if stages[stage]["exit"] not in (0, 1):  # 1: a validation check failed; keep measuring
                print(f"{stage} exited with {stages[stage]['exit']}", file=sys.stderr)
                return stages[stage]["exit"]
        record = json.loads((out / ".build" / "record.json").read_text())
        report_data = json.loads((out / "report.json").read_text())

    speed = record["speed"]["variants"]
    result = {
        "benchmark": "model-export",
        "model": name,
        "source": record["source"],
        "config": record["config"],
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "stages": stages,
        "export_s": record["reference"]["export_s"],
        "quantize_s": {n: v["quantize_s"] for n, v in record["variants"].items()},
        "sizes_mb": {v["name"]: round(v["bytes"] / 1e6, 1) for v in report_data["variants"]},
        "largest_file_mb": {v["name"]: round(v["largest_file"] / 1e6, 1) for v in report_data["variants"]},
        "decode": {
            "prompt": 8,
            "new_tokens": args.new_tokens,
            "runs": args.runs,
            "threads": args.threads,
            "tok_per_s_median": {n: v["tok_per_s"] for n, v in speed.items()},
            "tok_per_s_runs": {n: v["tok_per_s_runs"] for n, v in speed.items()},
            "session_s": {n: v["session_s"] for n, v in speed.items()},
        },
        "validation": {
            "passed": report_data["validation"]["passed"],
            "failed": report_data["validation"]["failed"],
            "metrics": {v["name"]: v["validation"] for v in report_data["variants"] if v["shipped"]},
        },
        "attention_cost": record.get("attention_cost"),
        "versions": report_data["created_with"],
    }
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.output or RESULTS / f"export-{name}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
