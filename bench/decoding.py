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
  token (every beam one batch per step, the cache gathered by beam);
* ``speculative-2``, ``speculative-4`` (only when asked with ``--methods``): ``speculative`` with
  that many proposals a round from the model's draft (its first blocks), greedy, 32 new tokens;
  it needs a variant whose logits do not depend on the rest of the pass (the manifest's
  ``batch_invariant``, e.g. ``--variant q4x``), and each run's tokens must equal greedy's in the
  same round (``same_as_greedy``), as the rule promises;
* ``sampled`` and ``speculative-2-sampled``, ``speculative-4-sampled`` (on request): the same at
  temperature 1, seed = the round; a greedy text soon repeats itself, which even a weak draft
  predicts, so the sampled runs show what the draft's proposals are worth on varied text.

A method's ``step_ms`` is its time per step after the prefill: (total − prefill) / (steps − 1),
a step being a new token (for beam search, one step of every beam); ``over_greedy`` is the
median over rounds of its ``step_ms`` divided by greedy's in the same round. Speculative
decoding has no prefill of its own (its first round reads the prompt), so it is compared on
``token_ms``, the whole run's time per new token, prefill included, with greedy's (or
``sampled``'s for a sampled run) in the same round (``over_greedy``, and ``speedup`` its
inverse); its rows add the share of proposals kept, the tokens per pass of the model, and the
time of a pass of each model. The
summary rows are ``METHOD/site/THREADS`` (bench_hook: ``[[bench: decoding beam-4/site/2
step_ms]]``). The JSON, with the commit, versions and machine load, replaces
``bench/results/decoding.json`` (or ``--out``).

Usage::

    .venv/bin/python bench/decoding.py --model build/models/small-random [--site site] [--threads 2] [--repeat 3]
    .venv/bin/python bench/decoding.py --model build/models/book --variant q4x \
        --methods greedy,speculative-2,speculative-4,sampled,speculative-2-sampled,speculative-4-sampled \
        --out bench/results/decoding-speculative-book.json
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
GAMMAS = (2, 4)
METHODS = ("greedy", "guided", *(f"beam-{k}" for k in BEAMS))  # the default run
SPECULATIVE = tuple(f"speculative-{g}{s}" for s in ("", "-sampled") for g in GAMMAS)  # on request (--methods)
OPTIONAL = ("sampled", *SPECULATIVE)


def baseline(method: str) -> str:
    """The method a speculative run is compared with: the model alone, greedy or sampled."""
    return "sampled" if method.endswith("-sampled") else "greedy"


# Runs in the page: one method, once; returns its decoding time per step and what else it saw.
RUN = """async ([name, variant, threads, method, prompt, newTokens, schema, seed]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const model = await loadModel({ model: name, backend: 'wasm', variant, threads });
  if (method.startsWith('beam-')) {
    const run = model.beamSearch(prompt, { numBeams: Number(method.slice(5)), maxNewTokens: newTokens, eos: null });
    for await (const step of run) void step;
    const result = await run.result;
    return { step_ms: result.stepMs, steps: result.steps, prefill_ms: result.prefillMs, variant: model.info.variant };
  }
  if (method.startsWith('speculative-')) {
    const temperature = method.endsWith('-sampled') ? 1 : 0;
    const run = model.speculative(prompt, { gamma: parseInt(method.slice(12)), maxNewTokens: newTokens, temperature, seed });
    for await (const event of run) void event;
    const r = await run.result;
    return { step_ms: r.msPerToken, token_ms: r.msPerToken, steps: r.tokens.length, tokens: r.tokens, variant: model.info.variant,
             passes: r.targetPasses, proposed: r.proposed.reduce((a, b) => a + b, 0), accepted: r.accepted.reduce((a, b) => a + b, 0),
             draft_ms: r.draftMs, target_ms: r.targetMs, draft: r.draft };
  }
  const guided = method === 'guided';
  const temperature = method === 'sampled' ? 1 : 0;
  const options = { temperature, seed, maxNewTokens: guided ? 96 : newTokens, stopAtEos: false, alternatives: 0, ...(guided && { schema }) };
  const run = model.generate(prompt, options);
  const mask = [];
  const tokens = [];
  for await (const token of run) (tokens.push(token.id), token.guide && mask.push(token.guide.maskMs));
  const result = await run.result;
  const out = { step_ms: (result.totalMs - result.prefillMs) / (result.newTokens - 1), steps: result.newTokens,
                token_ms: result.totalMs / result.newTokens, tokens, prefill_ms: result.prefillMs, reason: result.reason, variant: model.info.variant };
  if (guided) Object.assign(out, { mask_ms: mask.slice().sort((a, b) => a - b)[Math.floor(mask.length / 2)], mask_first_ms: Math.max(...mask) });
  return out;
}"""


def summarize(runs: list[dict], threads: int, methods: tuple[str, ...]) -> list[dict]:
    """Per method: spreads of step_ms (and the mask's) over rounds, and the median ratio to greedy
    (of token_ms for speculative decoding, with the proposals kept and the tokens a pass)."""
    rows = []
    for method in methods:
        mine = [r for r in runs if r["method"] == method]
        key = "token_ms" if method in SPECULATIVE else "step_ms"
        ratios = [r[key] / g[key] for r in mine for g in runs if g["method"] == baseline(method) and g["round"] == r["round"]]
        row = {
            "variant": method,
            "tuning": "site",
            "threads": threads,
            "step_ms": spread(r["step_ms"] for r in mine),
            "over_greedy": round(statistics.median(ratios), 2),
        }
        if method in SPECULATIVE:
            row["token_ms"] = spread(r["token_ms"] for r in mine)
            row["alone_token_ms"] = spread(r["token_ms"] for r in runs if r["method"] == baseline(method))
            row["speedup"] = round(statistics.median(1 / x for x in ratios), 2)
            row["kept_pct"] = round(100 * sum(r["accepted"] for r in mine) / sum(r["proposed"] for r in mine))
            row["tokens_per_pass"] = round(statistics.median(r["steps"] / r["passes"] for r in mine), 2)
            row["target_pass_ms"] = spread(r["target_ms"] / r["passes"] for r in mine)  # checking up to gamma + 1 tokens
            row["draft_pass_ms"] = spread(r["draft_ms"] / r["proposed"] for r in mine)  # one token
            if baseline(method) == "greedy":
                row["same_as_greedy"] = all(r["same_as_greedy"] for r in mine)
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
    ap.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated, greedy first (default: {','.join(METHODS)}; also {', '.join(OPTIONAL)})",
    )
    args = ap.parse_args(argv)
    methods = tuple(args.methods.split(","))
    unknown = [m for m in methods if m not in METHODS + OPTIONAL]
    missing = {baseline(m) for m in methods if m in SPECULATIVE} - set(methods)
    if unknown or missing or methods[0] != "greedy":
        ap.error(f"--methods: greedy first, then any of {', '.join(METHODS[1:] + OPTIONAL)}, with the baseline of each (got {args.methods})")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    manifest = json.loads((args.model / "manifest.json").read_text())
    variant = args.variant or manifest.get("default_variants", {}).get("wasm")
    invariant = next(v for v in manifest["variants"] if v["name"] == variant).get("batch_invariant")
    if any(m in SPECULATIVE for m in methods) and not invariant:
        ap.error(f"speculative decoding needs a variant whose logits do not depend on the rest of the pass; {variant} is not one (try --variant q4x)")
    work = Path(tempfile.mkdtemp(prefix="bench-decoding-"))
    server, url = serve_in_thread(serve_dir(args.site, args.model, manifest, work, set()))
    runs = []
    try:
        with sync_playwright() as p:
            context = profile_context(p, str(work / "profile"))
            page, errors = open_page(context, url)
            call = [manifest["name"], variant, args.threads]
            user_agent = page.evaluate("navigator.userAgent")
            for method in ("greedy", *[m for m in methods if m in SPECULATIVE][:1]):  # warm-up: downloads, sessions, compiled code
                page.evaluate(RUN, [*call, method, PROMPT, NEW_TOKENS, SCHEMA, 0])
            for r in range(args.repeat):
                order = methods[r % len(methods) :] + methods[: r % len(methods)]
                for method in order:
                    result = page.evaluate(RUN, [*call, method, PROMPT, NEW_TOKENS, SCHEMA, r])
                    runs.append({"round": r, "method": method, **result})
                    print(f"round {r} {method}: {result['step_ms']:.1f} ms a step", flush=True)
            for run in runs:
                if run["method"] in SPECULATIVE and baseline(run["method"]) == "greedy":  # the rule's promise, checked on every run
                    greedy = next(g for g in runs if g["method"] == "greedy" and g["round"] == run["round"])
                    run["same_as_greedy"] = run["tokens"] == greedy["tokens"]
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
        "summary": summarize(runs, args.threads, methods),
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))
    return report


if __name__ == "__main__":
    main()
