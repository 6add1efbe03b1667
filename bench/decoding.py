"""Benchmark what each decoding method costs per step on the site's runtime, in headless
Chromium, through the same JS API the widgets use (``site_src/runtime/model.js``).

On one model and variant (default: the model's WASM default), in one page, after a warm-up
generation, every round runs each method once on the same prompt, in an order rotated
each round:

* ``greedy``: ``generate`` at temperature 0, 32 new tokens, no end token;
* ``guided``: the same with a JSON Schema (``SCHEMA``), greedy, until the JSON is complete; the
  worker also reports the mask's own time per step (``mask_ms``), whose first visit of a grammar
  state walks the vocabulary's trie (``mask_first_ms``: the largest of a run);
* ``beam-2``, ``beam-4``, ``beam-8``: ``beamSearch`` with that many beams, 32 new tokens, no end
  token (every beam one batch per step, the cache gathered by beam).

A method's ``step_ms`` is its time per step after the prefill: (total − prefill) / (steps − 1),
a step being a new token (for beam search, one step of every beam); ``over_greedy`` is the median over rounds of its ``step_ms`` divided by greedy's in the same
round. The summary rows are ``METHOD/site/THREADS`` (bench_hook: ``[[bench: decoding
beam-4/site/2 step_ms]]``). The JSON, with the commit, versions and machine load, replaces
``bench/results/decoding.json`` (or ``--out``).

Usage::

    .venv/bin/python bench/decoding.py --model build/models/small-random [--site site] [--threads 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from browser import serve_dir
from common import RESULTS, machine, open_page, profile_context, report_header, spread
from sitebuild.serve import serve_in_thread

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "A description of one layer of the Transformer, as JSON:"
NEW_TOKENS = 32
BEAMS = (2, 4, 8)
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "heads": {"type": "integer"},
        "norm": {"enum": ["pre", "post"]},
        "residual": {"type": "boolean"},
    },
    "required": ["name", "heads", "norm", "residual"],
}
METHODS = ("greedy", "guided", *(f"beam-{k}" for k in BEAMS))

# Runs in the page: one method, once; returns its decoding time per step and what else it saw.
RUN = """async ([name, variant, threads, method, prompt, newTokens, schema]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const model = await loadModel({ model: name, backend: 'wasm', variant, threads });
  if (method.startsWith('beam-')) {
    const run = model.beamSearch(prompt, { numBeams: Number(method.slice(5)), maxNewTokens: newTokens, eos: null });
    for await (const step of run) void step;
    const result = await run.result;
    return { step_ms: result.stepMs, steps: result.steps, prefill_ms: result.prefillMs, variant: model.info.variant };
  }
  const guided = method === 'guided';
  const options = { temperature: 0, maxNewTokens: guided ? 96 : newTokens, stopAtEos: false, alternatives: 0, ...(guided && { schema }) };
  const run = model.generate(prompt, options);
  const mask = [];
  for await (const token of run) if (token.guide) mask.push(token.guide.maskMs);
  const result = await run.result;
  const out = { step_ms: (result.totalMs - result.prefillMs) / (result.newTokens - 1), steps: result.newTokens,
                prefill_ms: result.prefillMs, reason: result.reason, variant: model.info.variant };
  if (guided) Object.assign(out, { mask_ms: mask.slice().sort((a, b) => a - b)[Math.floor(mask.length / 2)], mask_first_ms: Math.max(...mask) });
  return out;
}"""


def summarize(runs: list[dict], threads: int) -> list[dict]:
    """Per method: spreads of step_ms (and the mask's) over rounds, and the median ratio to greedy."""
    rows = []
    for method in METHODS:
        mine = [r for r in runs if r["method"] == method]
        ratios = [r["step_ms"] / g["step_ms"] for r in mine for g in runs if g["method"] == "greedy" and g["round"] == r["round"]]
        row = {
            "variant": method,
            "tuning": "site",
            "threads": threads,
            "step_ms": spread(r["step_ms"] for r in mine),
            "over_greedy": round(statistics.median(ratios), 2),
        }
        if method == "guided":
            row["mask_ms"] = spread(r["mask_ms"] for r in mine)
            row["mask_first_ms"] = spread(r["mask_first_ms"] for r in mine)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a model-export build directory (with manifest.json)")
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="a built site providing the runtime files")
    ap.add_argument("--variant", default=None, help="the variant (default: the model's WASM default)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each running every method once in a rotated order")
    ap.add_argument("--out", type=Path, default=RESULTS / "decoding.json")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    manifest = json.loads((args.model / "manifest.json").read_text())
    variant = args.variant or manifest.get("default_variants", {}).get("wasm")
    work = Path(tempfile.mkdtemp(prefix="bench-decoding-"))
    server, url = serve_in_thread(serve_dir(args.site, args.model, manifest, work, set()))
    runs = []
    try:
        with sync_playwright() as p:
            context = profile_context(p, str(work / "profile"))
            page, errors = open_page(context, url)
            call = [manifest["name"], variant, args.threads]
            user_agent = page.evaluate("navigator.userAgent")
            page.evaluate(RUN, [*call, "greedy", PROMPT, NEW_TOKENS, SCHEMA])  # warm-up: download, session, compiled code
            for r in range(args.repeat):
                order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
                for method in order:
                    result = page.evaluate(RUN, [*call, method, PROMPT, NEW_TOKENS, SCHEMA])
                    runs.append({"round": r, "method": method, **result})
                    print(f"round {r} {method}: {result['step_ms']:.1f} ms a step", flush=True)
            assert not errors, errors
            context.close()
    finally:
        server.shutdown()
    report = {
        **report_header("decoding", argv, manifest),
        "variant": runs[0]["variant"],
        "prompt": PROMPT,
        "new_tokens": NEW_TOKENS,
        "schema": SCHEMA,
        "repeat": args.repeat,
        "machine": machine(load_before),
        "versions": {
            "onnxruntime_web": json.loads((ROOT / "node_modules" / "onnxruntime-web" / "package.json").read_text())["version"],
            "chromium": user_agent,
        },
        "runs": runs,
        "summary": summarize(runs, args.threads),
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))
    return report


if __name__ == "__main__":
    main()
