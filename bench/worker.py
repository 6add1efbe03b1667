"""Benchmark the Pyodide worker in headless Chromium: cold start, warm start, call round trip.

Cold: a fresh browser profile loads a page and makes the first `demos` call (Pyodide,
NumPy and the demos wheel are downloaded, compiled and imported). Warm: a second page
in the same profile does the same (files come from the HTTP cache). Round trip: the
time of further small calls once Python is running (target: at most 50 ms).

usage: python bench/worker.py [--site site] [--calls 50] [--out bench/results/worker.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "site_src"), str(ROOT / "tests")]

from chromium import find_chromium  # noqa: E402
from serve import serve_in_thread  # noqa: E402

ARGS = ["--headless=new", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]

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


def run(site: Path, calls: int) -> dict:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(site)
    page_url = url + "start/how-to-read/"  # a page without widgets: the call alone starts Python
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=ARGS)
        context = browser.new_context()
        for label in ("cold", "warm"):
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(page_url)
            r = page.evaluate(MEASURE, [url + "assets/tx/runtime/python.js", calls])
            results[label] = {
                "first_call_ms": round(r["first"], 1),
                "page_to_first_result_s": round(time.perf_counter() - t0, 2),
                "round_trip_ms_median": round(statistics.median(r["trips"]), 2),
                "round_trip_ms_p90": round(sorted(r["trips"])[int(0.9 * len(r["trips"])) - 1], 2),
                "round_trip_ms_max": round(max(r["trips"]), 2),
            }
            page.close()
        results["browser"] = browser.version
        browser.close()
    server.shutdown()
    results["calls"] = calls
    results["call"] = "demos.sampling.next_token_distribution on 50 logits"
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "worker.json")
    args = ap.parse_args()
    results = run(args.site, args.calls)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
