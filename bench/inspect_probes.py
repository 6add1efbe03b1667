"""Benchmark what a probe left out costs in one ``model.inspect()``: no rows (what
``site_src/runtime/probe-feeds.js`` feeds now) against one row of zeros for each row probe
(``lens_hidden``, ``unembed_rows``, ``head_rows``: what it fed before), on the site's runtime in
headless Chromium, on WebGPU (SwiftShader here: a software GPU on the processor) and on WASM.

Per backend, a fresh browser loads the default variant with its inspect graph
(``loadModel({backend, needs: ["inspect"]})``), runs one inspect pass to compile its kernels,
then ``--repeat`` rounds of both feeds, alternating, on an 8-token prompt, asking for the logits
only. The summary gives median, min and max per backend and feed; the JSON replaces
``bench/results/inspect-probes.json`` (or ``--out``).

usage: python bench/inspect_probes.py [--site site] [--repeat 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from common import BROWSER_ARGS, RESULTS, machine, report_header, spread
from sitebuild.chromium import WEBGPU_ARGS, find_chromium
from sitebuild.serve import serve_in_thread

IDS = [464, 3139, 286, 4881, 318, 6342, 13, 383]

RUN = """async ([ids, backend, repeat]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const model = await loadModel({ backend, needs: ['inspect'] });
  const { n_layer: L, n_embd: C } = model.info.config;
  const oneRow = { lens_hidden: new Float32Array(C), unembed_rows: new Float32Array(C), head_rows: new Float32Array(L * C) };
  await model.inspect(ids, { want: ['logits'] });
  const ms = { none: [], one_row: [] };
  for (let r = 0; r < repeat; r++) {
    for (const [feed, probes] of r % 2 ? [['one_row', oneRow], ['none', {}]] : [['none', {}], ['one_row', oneRow]]) {
      const t = performance.now();
      await model.inspect(ids, { want: ['logits'], probes });
      ms[feed].push(performance.now() - t);
    }
  }
  return { variant: model.info.variant, backend: model.info.backend, ms };
}"""


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="site")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "inspect-probes.json"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    manifest = json.loads((Path(args.site) / "models" / "tiny" / "manifest.json").read_text())
    report = {**report_header("inspect_probes", argv, manifest), "prompt_tokens": len(IDS), "runs": {}, "summary": {}}
    server, url = serve_in_thread(Path(args.site))
    try:
        with sync_playwright() as p:
            for backend, extra in (("webgpu", WEBGPU_ARGS), ("wasm", [])):
                browser = p.chromium.launch(executable_path=find_chromium(), headless=True, args=BROWSER_ARGS + extra)
                page = browser.new_context(service_workers="block").new_page()
                page.goto(url + "404.html")
                run = page.evaluate(RUN, [IDS, backend, args.repeat])
                browser.close()
                report["runs"][backend] = run
                report["summary"][backend] = {"variant": run["variant"], **{feed: spread(ms) for feed, ms in run["ms"].items()}}
                print(backend, json.dumps(report["summary"][backend]))
    finally:
        server.shutdown()
    report["machine"] = machine(load_before)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
