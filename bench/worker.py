"""Benchmark the Pyodide worker in headless Chromium: cold start, warm start, call round trip.

Each round launches a fresh browser with an empty profile for each of two pages, interleaved:

* ``alone``: a page of the book without any widget (found in the built site), so the call
  alone starts Python: the start a reader gets on a page whose only demos are Python ones;
* ``beside the model``: a page whose widget loads the model as the page opens
  (``start/how-to-read/``), so Python starts while onnxruntime compiles, the weights are
  expanded and the warm-up runs on the same cores.

Cold: the page makes the first `demos` call (Pyodide, NumPy and the demos wheel are
downloaded, compiled and imported; the site's service worker registers when it does for a
reader). Then the cold page waits until the service worker has stored the pages and the
Python runtime (its "fill" message, what the offline page's button sends; ``settled``).
Warm: a second page in the same profile does the same (files from the caches).
Round trip: further small calls once Python is running (target: at most 50 ms). The worker's
own progress messages split the start: ``python_ms`` until Pyodide runs, ``packages_ms``
until NumPy and demos are imported. The summary gives median, min and max over the rounds;
the JSON (with the commit, versions and machine load) replaces ``bench/results/worker.json``.

``--compare LABEL=SITE`` measures another build in the same rounds (each round runs the sites
in a rotated order), e.g. the same site with one runtime file changed; its summary goes under
``compare``.

usage: python bench/worker.py [--site site] [--compare LABEL=SITE] [--calls 50] [--repeat 3]
                              [--out bench/results/worker.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from common import BROWSER_ARGS, git_commit, machine, spread
from sitebuild.chromium import find_chromium
from sitebuild.offline_hook import GROUPS
from sitebuild.serve import serve_in_thread

ROOT = Path(__file__).resolve().parent.parent


MEASURE = """async ([moduleUrl, calls]) => {
  const t0 = performance.now();
  const { callDemo, onPythonProgress } = await import(moduleUrl);
  const stages = {};
  onPythonProgress((event) => { stages[event.stage] ??= performance.now() - t0; });
  const logits = Array.from({ length: 50 }, (_, i) => Math.sin(i));
  await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.8, top_k: 10, top_p: 0.9 });
  const first = performance.now() - t0;
  const trips = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await callDemo("sampling", "next_token_distribution", { logits, temperature: 0.5 + i / calls, top_k: 0, top_p: 1 });
    trips.push(performance.now() - t);
  }
  const widgets = [...document.querySelectorAll("*")].filter((el) => el.localName.startsWith("tx-")).map((el) => el.localName);
  return { first, trips, stages, widgets };
}"""

SETTLE = """async (groups) => {
  const sw = navigator.serviceWorker;
  if (!sw) return "no service worker";
  const registration = await Promise.race([sw.ready, new Promise((resolve) => setTimeout(resolve, 60000))]);
  if (!registration || !registration.active) return "no active service worker after 60 s";
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = ({ data }) => {
      if (data.type === "done") resolve("stored");
      else if (data.type === "error") resolve(data.message);
    };
    registration.active.postMessage({ type: "fill", groups }, [channel.port2]);
  });
}"""
SETTLED_GROUPS = [name for name in GROUPS if name in ("pages", "python")]  # what a Python page stores

MODEL_PAGE = "start/how-to-read/"  # its tx-next-token loads the model as the page opens


def page_without_widgets(site: Path) -> str:
    """The first page of the built book (in path order) with no tx-* element."""
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if rel.split("/")[0] in ("embed", "404") or "<tx-" in html.read_text(encoding="utf-8"):
            continue
        return "" if rel == "." else rel + "/"
    raise SystemExit(f"no page without widgets under {site}: the 'alone' case has nowhere to run")


def one_round(url: str, page: str, calls: int) -> dict:
    """A fresh browser on `page`: a cold visit, then a warm one."""
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=BROWSER_ARGS)
        context = browser.new_context()
        for label in ("cold", "warm"):
            tab = context.new_page()
            t0 = time.perf_counter()
            tab.goto(url + page)
            r = tab.evaluate(MEASURE, [url + "assets/tx/runtime/python.js", calls])
            page_to_first_result_s = time.perf_counter() - t0
            out[label] = {
                "first_call_ms": round(r["first"], 1),
                "python_ms": round(r["stages"].get("packages", 0), 1),
                "packages_ms": round(r["stages"].get("ready", 0) - r["stages"].get("packages", 0), 1),
                "page_to_first_result_s": round(page_to_first_result_s, 2),
                "round_trip_ms_median": round(statistics.median(r["trips"]), 2),
                "round_trip_ms_p90": round(sorted(r["trips"])[int(0.9 * len(r["trips"])) - 1], 2),
                "round_trip_ms_max": round(max(r["trips"]), 2),
                "widgets": sorted(set(r["widgets"])),
            }
            if label == "cold":  # the warm visit finds what the service worker stores in the cache
                t1 = time.perf_counter()
                out["settled"] = {"result": tab.evaluate(SETTLE, SETTLED_GROUPS), "s": round(time.perf_counter() - t1, 2)}
            tab.close()
        out["browser"] = browser.version
        browser.close()
    return out


def summary(rounds: list[dict], case: str) -> dict:
    """Median, min and max over the rounds of one case."""
    runs = [r[case] for r in rounds]
    return {
        "cold_first_result_s": spread(r["cold"]["page_to_first_result_s"] for r in runs),
        "cold_first_call_ms": spread(r["cold"]["first_call_ms"] for r in runs),
        "cold_python_ms": spread(r["cold"]["python_ms"] for r in runs),
        "cold_packages_ms": spread(r["cold"]["packages_ms"] for r in runs),
        "warm_first_result_s": spread(r["warm"]["page_to_first_result_s"] for r in runs),
        "round_trip_ms": spread(r[label]["round_trip_ms_median"] for r in runs for label in ("cold", "warm")),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each in a fresh browser")
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=SITE", help="another built site to measure in the same rounds")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "worker.json")
    args = ap.parse_args()
    sites = {"site": args.site, **{label: Path(d) for label, d in (c.split("=", 1) for c in args.compare)}}
    cases = {"alone": page_without_widgets(args.site), "beside_model": MODEL_PAGE}
    load_before = os.getloadavg()
    servers = {label: serve_in_thread(d) for label, d in sites.items()}
    try:
        rounds = []
        for k in range(args.repeat):
            row = {"load_average_at_start": list(os.getloadavg())}
            labels = list(sites)[k % len(sites) :] + list(sites)[: k % len(sites)]
            for label in labels:
                url = servers[label][1]
                for case, page in cases.items():
                    row[case if label == "site" else f"{case}@{label}"] = one_round(url, page, args.calls)
            rounds.append(row)
            print(
                f"round {k + 1}: "
                + "; ".join(
                    f"{key}: cold {v['cold']['page_to_first_result_s']} s, warm {v['warm']['page_to_first_result_s']} s"
                    for key, v in row.items()
                    if key != "load_average_at_start"
                ),
                flush=True,
            )
    finally:
        for server, _ in servers.values():
            server.shutdown()
    versions = (
        json.loads((args.site / "assets" / "vendor" / "versions.json").read_text()) if (args.site / "assets" / "vendor" / "versions.json").exists() else {}
    )
    report = {
        "benchmark": "bench/worker.py",
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "setup": {
            "calls": args.calls,
            "repeat": args.repeat,
            "call": "demos.sampling.next_token_distribution on 50 logits",
            "pages": {
                "alone": f"{cases['alone']} (no widgets)",
                "beside_model": f"{cases['beside_model']} (its tx-next-token loads the model as the page opens)",
            },
            "order": "each round: a fresh browser per case, the cases one after the other",
        },
        "machine": machine(load_before),
        "versions": {"chromium": rounds[0]["alone"]["browser"], **versions},
        "rounds": rounds,
        "summary": {case: summary(rounds, case) for case in cases},
    }
    if len(sites) > 1:
        report["compare"] = {
            label: {"site": str(d), **{case: summary(rounds, f"{case}@{label}") for case in cases}} for label, d in sites.items() if label != "site"
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
