"""Benchmark the offline copy: from a reader's first page load, how long until the whole book
works offline, and how many bytes the browser then stores.

Each round starts a fresh browser profile for each of two ways of getting there, one after
the other (their order alternates between rounds), against a local server of the built site:

* ``reading``: the reader opens ``pipeline/05c-attention/``, ``labs/attention/``,
  ``inside/induction-heads/`` and ``generate/``, each as soon as the one before has its widgets
  ready (the first order of tests/browser/test_offline.py), and stays on the last one. Done
  when the page's notice (runtime/sw-register.js) names every part: pages, the Python
  runtime, the model runtime, the model's data and its weights. The book then works offline,
  pages never opened included (the test shows it for each kind of widget).
* ``button``: the reader opens ``offline/`` and presses "Make everything available offline"
  as soon as it is there. Done when the widget says "Everything is available offline.".

Bytes: every Cache Storage entry's body (the service worker's build cache and
runtime/download.js's model cache) and ``navigator.storage.estimate().usage``. The summary
gives median, min and max over the rounds; the JSON replaces ``bench/results/offline.json``,
which docs/offline.md quotes.

usage: python bench/offline.py [--site site] [--repeat 3] [--out bench/results/offline.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, git_commit, machine, profile_context, spread
from sitebuild.offline_hook import GROUPS
from sitebuild.serve import serve_in_thread

READING = ["pipeline/05c-attention/", "labs/attention/", "inside/induction-heads/", "generate/"]
TIMEOUT_MS = 300_000

ALL_READY = """() => {
  const els = [...document.querySelectorAll("*")].filter((e) => e.localName.startsWith("tx-"));
  return els.length > 0 && els.every((e) => e.dataset.state === "ready" || e.dataset.state === "error");
}"""
NOTICE_NAMES = """labels => { const n = document.querySelector(".tx-offline-notice");
  return !!n && labels.every((l) => n.textContent.includes(l)); }"""
STORED = """async () => {
  const caches_ = {};
  for (const name of await caches.keys()) {
    let bytes = 0, files = 0;
    const cache = await caches.open(name);
    for (const request of await cache.keys()) { bytes += (await (await cache.match(request)).blob()).size; files++; }
    caches_[name] = { bytes, files };
  }
  const { usage } = await navigator.storage.estimate();
  return { caches: caches_, usage };
}"""


def reading(page, url: str, labels: list[str]) -> float:
    """Seconds from the first page load until the notice names every part."""
    t0 = time.perf_counter()
    for i, path in enumerate(READING):
        page.goto(url + path)
        if i < len(READING) - 1:
            page.wait_for_function(ALL_READY, timeout=TIMEOUT_MS)
    page.wait_for_function(NOTICE_NAMES, arg=labels, timeout=TIMEOUT_MS)
    return time.perf_counter() - t0


def button(page, url: str) -> float:
    """Seconds from loading the offline page until its button has stored everything."""
    t0 = time.perf_counter()
    page.goto(url + "offline/")
    fill = page.locator("tx-offline button.fill")
    fill.wait_for(state="visible", timeout=TIMEOUT_MS)
    fill.click()
    page.wait_for_function(
        "() => (document.querySelector('tx-offline').shadowRoot.querySelector('.status-text') || {}).textContent?.includes('Everything is available offline.')",
        timeout=TIMEOUT_MS,
    )
    return time.perf_counter() - t0


def one_run(url: str, way: str, labels: list[str]) -> dict:
    """A fresh profile, one way to the offline book: its time and what it stored."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = profile_context(p, profile)
        page = context.new_page()
        seconds = reading(page, url, labels) if way == "reading" else button(page, url)
        stored = page.evaluate(STORED)
        version = context.browser.version if context.browser else None
        context.close()
    return {"seconds": round(seconds, 2), "megabytes": round(sum(c["bytes"] for c in stored["caches"].values()) / 1e6, 2), "stored": stored, "browser": version}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each with a fresh profile per way")
    ap.add_argument("--out", type=Path, default=RESULTS / "offline.json")
    args = ap.parse_args()
    facts = json.loads((args.site / "assets/tx/runtime/offline-build.js").read_text().split("export const OFFLINE = ", 1)[1].rstrip().rstrip(";"))
    labels = [facts["groups"][name]["label"] for name in GROUPS] + ["Model weights"]
    load_before = os.getloadavg()
    server, url = serve_in_thread(args.site)
    rounds = []
    try:
        for k in range(args.repeat):
            ways = ["reading", "button"] if k % 2 == 0 else ["button", "reading"]
            row = {"load_average_at_start": list(os.getloadavg())}
            for way in ways:
                row[way] = one_run(url, way, labels)
            rounds.append(row)
            print(f"round {k + 1}: " + "; ".join(f"{w}: {row[w]['seconds']} s, {row[w]['megabytes']} MB" for w in ways), flush=True)
    finally:
        server.shutdown()
    report = {
        "benchmark": "bench/offline.py",
        "commit": git_commit(),
        "setup": {
            "repeat": args.repeat,
            "server": "sitebuild.serve on 127.0.0.1 (the same machine)",
            "reading": f"{', '.join(READING)}: each as soon as the one before is ready; until the notice names every part",
            "button": "offline/, its button pressed at once; until 'Everything is available offline.'",
            "groups": {name: {"files": len(g["files"]), "bytes": g["bytes"]} for name, g in facts["groups"].items()},
        },
        "machine": machine(load_before),
        "rounds": rounds,
        "summary": {
            way: {
                "seconds": spread(r[way]["seconds"] for r in rounds),
                "megabytes": spread(r[way]["megabytes"] for r in rounds),
                "usage_megabytes": spread(r[way]["stored"]["usage"] / 1e6 for r in rounds),
            }
            for way in ("reading", "button")
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))


if __name__ == "__main__":
    main()
