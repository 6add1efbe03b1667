"""Benchmark the Pyodide worker in headless Chromium: cold start, warm start, call round trip.

Each round launches a fresh browser with an empty profile. Cold: a page makes the first `demos`
call (Pyodide, NumPy and the demos wheel are downloaded, compiled and imported; the site's
service worker installs meanwhile, as it does for a reader). Warm: a second page in the same
profile does the same (files from the caches). Round trip: further small calls once Python
is running (target: at most 50 ms). The summary gives median, min and max over the rounds;
the JSON (with the commit, versions and machine load) replaces ``bench/results/worker.json``.

usage: python bench/worker.py [--site site] [--calls 50] [--repeat 3] [--out bench/results/worker.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "site_src"), str(ROOT / "tests"), str(ROOT / "bench")]

from chromium import find_chromium  # noqa: E402
from common import BROWSER_ARGS, git_commit, machine, spread  # noqa: E402
from serve import serve_in_thread  # noqa: E402

MEASURE = """async ([moduleUrl, calls]) => {
  const { callDemo } = await import(moduleUrl);
  const logits = Array.from({ length: 50 }, (_, i) => Math.sin(i));
  const t0 = performance.now();
  await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.8, top_k: 10, top_p: 0.9 });
  const first = performance.now() - t0;
  const trips = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.5 + i / calls, top_k: 0, top_p: 1 });
    trips.push(performance.now() - t);
  }
  return { first, trips, navigation: performance.getEntriesByType("navigation")[0].duration };
}"""


def one_round(url: str, calls: int) -> dict:
    """A fresh browser: a cold page, then a warm one."""
    from playwright.sync_api import sync_playwright

    page_url = url + "start/how-to-read/"  # a page without widgets: the call alone starts Python
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=BROWSER_ARGS)
        context = browser.new_context()
        for label in ("cold", "warm"):
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(page_url)
            r = page.evaluate(MEASURE, [url + "assets/tx/runtime/python.js", calls])
            out[label] = {
                "first_call_ms": round(r["first"], 1),
                "page_to_first_result_s": round(time.perf_counter() - t0, 2),
                "round_trip_ms_median": round(statistics.median(r["trips"]), 2),
                "round_trip_ms_p90": round(sorted(r["trips"])[int(0.9 * len(r["trips"])) - 1], 2),
                "round_trip_ms_max": round(max(r["trips"]), 2),
            }
            page.close()
        out["browser"] = browser.version
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each in a fresh browser")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "worker.json")
    args = ap.parse_args()
    load_before = os.getloadavg()
    server, url = serve_in_thread(args.site)
    try:
        rounds = []
        for k in range(args.repeat):
            rounds.append({"load_average_at_start": list(os.getloadavg()), **one_round(url, args.calls)})
            print(f"round {k + 1}: cold {rounds[-1]['cold']['page_to_first_result_s']} s, warm "
                  f"{rounds[-1]['warm']['page_to_first_result_s']} s, round trip {rounds[-1]['warm']['round_trip_ms_median']} ms", flush=True)
    finally:
        server.shutdown()
    versions = json.loads((args.site / "assets" / "vendor" / "versions.json").read_text()) \
        if (args.site / "assets" / "vendor" / "versions.json").exists() else {}
    report = {
        "benchmark": "bench/worker.py",
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "setup": {"calls": args.calls, "repeat": args.repeat, "call": "demos.sampling.next_token_distribution on 50 logits",
                  "page": "start/how-to-read/ (no widgets)"},
        "machine": machine(load_before),
        "versions": {"chromium": rounds[0]["browser"], **versions},
        "rounds": rounds,
        "summary": {
            "cold_first_result_s": spread(r["cold"]["page_to_first_result_s"] for r in rounds),
            "cold_first_call_ms": spread(r["cold"]["first_call_ms"] for r in rounds),
            "warm_first_result_s": spread(r["warm"]["page_to_first_result_s"] for r in rounds),
            "round_trip_ms": spread(r[label]["round_trip_ms_median"] for r in rounds for label in ("cold", "warm")),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
