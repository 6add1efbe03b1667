"""Benchmark the "Looking inside the model" recipes in headless Chromium, on the site's runtime.

For every variant (default q8x, the WASM default, and q4x) it measures, in the browser, through
the same JS API the widgets use (``site_src/runtime/model.js``, ``site_src/runtime/interpret.js``),
on WASM with ``--threads`` (default 2) threads and a prompt of 16 tokens (a fixed English sentence,
``model.tokenizer.encode``, cut or repeated to 16 ids):

* plain forward vs inspect forward: ``model.forward(ids)`` on the variant's ordinary graph
  against ``model.inspect(ids, {want: ["logits"], lastOnly: true})`` on its inspect graph with
  neutral probes (the cost of the probes), in one page, alternating, and the largest
  difference between their logits;
* the logit lens: ``logitLens(model, ids)`` in total, its time after the forward pass (the lens
  minus one neutral inspect forward of the same run), and every cell's top-1 (``lens.cell(l, t)``
  for all layers and positions, then the argmax: what the widget computes);
* one ablation run (one ``model.inspect`` with ``head_scale``/``head_add`` switching one head
  off) and one residual-patched run (``resid_scale``/``resid_add`` at one layer and position,
  on the corrupted prompt), alternating with a neutral run;
* the full head map, ``headImportance(model, ids, "zero")`` (n_layer × n_head passes), and the
  residual patching heatmap, ``patchResidual(model, ids, corrupted, good, bad)`` (n_layer × 16
  passes), each in total;
* responsiveness: the largest gap between the ticks of a ``setInterval(…, 50)`` in the page
  while the head map (and, apart, the patching) runs; and cancelling: ``patchResidual`` with an
  AbortController aborted just after its 5th progress event (so that the abort lands while a
  pass is running), the time from ``abort()`` to the AbortError, and that the model still
  answers afterwards;
* memory: the peak private memory of the browser's processes (``browser.MemorySampler``) while
  loading and running the inspect model against loading and running the plain one, each alone
  in a fresh browser profile: one copy of the weights, so the inspect page should not be ~2×
  the plain one (and, apart, the inspect page's peak while it computes the lens and an ablation).

The timings run in a fresh browser profile per variant and round, which loads both the plain and
the inspect model (two workers, one session each); the alternatives alternate within each round
and their order flips from round to round, the variants' order rotates. Every quantity is
measured once per round (``--repeat``, default 3; the short ones ``--runs`` times, median); the
``summary`` gives, per variant, medians with their spread (min, max) over the rounds and
pass/fail against the targets in ``setup.targets``. The JSON, with the commit, versions and
machine load, replaces ``bench/results/inside.json`` (or ``--out``).

Usage::

    .venv/bin/python bench/inside.py --model build/models/small-random [--site site]
        [--variants q8x,q4x] [--threads 2] [--repeat 3] [--runs 5] [--out FILE]

The site (``--site``, default ``site/``) provides the runtime files; the model directory (built
with its inspect graphs: ``make model``) is served beside it (``browser.serve_dir``), with the
cross-origin isolation headers that WASM threads need (``sitebuild.serve``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from browser import MemorySampler, serve_dir
from common import machine, open_page, profile_context, report_header, spread
from sitebuild.serve import serve_in_thread

ROOT = Path(__file__).resolve().parent.parent

PROMPT_TOKENS = 16
# 16 GPT-2 tokens (cut or repeated to PROMPT_TOKENS otherwise): an indirect-object sentence.
TEXT = "When Mary and John went to the big store together, John gave a drink to"
# The corrupted prompt: the clean ids with these positions replaced by the first token of each word.
CORRUPT = ((1, " Anna"), (3, " Tom"), (11, " Tom"))
GOOD, BAD = " Mary", " John"  # the logit difference the patching restores
CANCEL_AFTER_EVENTS = 5
TICK_MS = 50
TARGETS = {
    "lens_after_forward_s": 1.0,
    "ablation_run_s": 0.3,
    "patched_run_s": 0.3,
    "head_map_s": 60.0,
    "residual_patching_s": 60.0,
}

# Shared by the page scripts: the modules, the prompts and a timer.
PRELUDE = """
  const B = globalThis.__bench;
  const { I, plain, insp, ids, corrupted, good, bad } = B ?? {};
  const pause = () => new Promise((resolve) => setTimeout(resolve, 30)); // let the other worker's threads settle
  const timed = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
  const neutral = () => insp.inspect(ids, { want: ['logits'], lastOnly: true });
  const names = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}.${i}`);
  const ticker = () => { // the largest gap between the ticks of a setInterval while something runs
    const probe = { last: performance.now(), maxGap: 0, ticks: 0 };
    const tick = () => {
      const now = performance.now();
      probe.maxGap = Math.max(probe.maxGap, now - probe.last);
      probe.last = now;
      probe.ticks++;
    };
    probe.timer = setInterval(tick, __TICK__);
    probe.stop = () => {
      clearInterval(probe.timer);
      tick();
      return { maxGapMs: probe.maxGap, ticks: probe.ticks };
    };
    return probe;
  };
""".replace("__TICK__", str(TICK_MS))

# The prompt in the page: the sentence's ids cut or repeated to T, the corrupted copy, good and bad.
PROMPT = """
  const base = m.tokenizer.encode(text);
  const ids = Array.from({ length: T }, (_, i) => base[i % base.length]);
  const corrupted = ids.slice();
  for (const [pos, word] of corrupt) corrupted[pos % T] = m.tokenizer.encode(word)[0];
  const good = m.tokenizer.encode(goodWord)[0], bad = m.tokenizer.encode(badWord)[0];
"""

INFO = (
    "(m) => ({ variant: m.info.variant, threads: m.info.threads, crossOriginIsolated: m.info.crossOriginIsolated, "
    "inspect: m.info.inspect, bytes: m.info.bytes.total, timings: m.info.timings })"
)

# Timing page: load the plain and the inspect model (the plain first in odd rounds).
SETUP_JS = """async ([model, variant, threads, text, T, corrupt, goodWord, badWord, inspectFirst]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const I = await import('./assets/tx/runtime/interpret.js');
  const info = __INFO__;
  const timed = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
  const load = (needs) => timed(() => loadModel({ model, backend: 'wasm', variant, threads, needs }));
  let plainMs, plain, inspectMs, insp;
  if (inspectFirst) { [inspectMs, insp] = await load(['inspect']); [plainMs, plain] = await load([]); }
  else { [plainMs, plain] = await load([]); [inspectMs, insp] = await load(['inspect']); }
  const m = insp;
  __PROMPT__
  globalThis.__bench = { I, plain, insp, ids, corrupted, good, bad };
  return { plainLoadMs: plainMs, inspectLoadMs: inspectMs, plain: info(plain), inspect: info(insp), ids, corrupted, good, bad };
}""".replace("__INFO__", INFO).replace("__PROMPT__", PROMPT)

# Plain forward vs neutral inspect forward, alternating (which goes first flips every pair).
FORWARD_JS = """async ([runs, offset]) => {
  __PRELUDE__
  const a = (await plain.forward(ids)).logits, b = (await neutral()).logits.data; // warm-up
  let maxAbsDiff = 0;
  for (let i = 0; i < a.length; i++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(a[i] - b[i]));
  const out = { plainMs: [], inspectMs: [], logitsMaxAbsDiff: maxAbsDiff };
  for (let r = 0; r < runs; r++) {
    const pair = (r + offset) % 2 ? ['inspect', 'plain'] : ['plain', 'inspect'];
    for (const which of pair) {
      await pause();
      const [ms] = await timed(() => (which === 'plain' ? plain.forward(ids) : neutral()));
      out[which + 'Ms'].push(ms);
    }
  }
  return out;
}""".replace("__PRELUDE__", PRELUDE)

# The logit lens: one neutral forward, the lens, every cell's top-1; forward and lens alternate.
LENS_JS = """async ([runs, offset]) => {
  __PRELUDE__
  const L = insp.info.config.n_layer;
  await I.logitLens(insp, ids); // warm-up
  const out = { forwardMs: [], hiddenPassMs: [], lensMs: [], top1Ms: [], cells: 0 };
  for (let r = 0; r < runs; r++) {
    const steps = ['forward', 'lens', 'hidden'];
    if ((r + offset) % 2) steps.reverse();
    for (const step of steps) {
      await pause();
      if (step === 'forward') out.forwardMs.push((await timed(neutral))[0]);
      if (step === 'hidden') out.hiddenPassMs.push((await timed(() => insp.inspect(ids, { want: names('hidden_states', L + 1) })))[0]);
      if (step === 'lens') {
        const [ms, lens] = await timed(() => I.logitLens(insp, ids));
        out.lensMs.push(ms);
        const t = performance.now();
        const top = [];
        for (let l = 0; l < lens.layers; l++) for (let p = 0; p < lens.T; p++) top.push(I.argmax(lens.cell(l, p)));
        out.top1Ms.push(performance.now() - t);
        out.cells = top.length;
      }
    }
  }
  return out;
}""".replace("__PRELUDE__", PRELUDE)

# One ablation run (one head off), one residual-patched run (corrupted prompt, one (layer, pos)
# from the clean run) and a neutral run, rotating.
ABLATE_JS = """async ([runs, offset, layer, head, patchLayer, patchPos]) => {
  __PRELUDE__
  const { n_layer: L, n_head: nh, n_embd: C } = insp.info.config;
  const T = ids.length, hd = C / nh;
  const headScale = new Float32Array(L * nh * T).fill(1);
  headScale.fill(0, (layer * nh + head) * T, (layer * nh + head + 1) * T);
  const headProbes = { head_scale: headScale, head_add: new Float32Array(L * nh * T * hd) };
  const clean = (await insp.inspect(ids, { want: [`hidden_states.${patchLayer}`] }))[`hidden_states.${patchLayer}`].data;
  const residScale = new Float32Array(L * T).fill(1);
  const residAdd = new Float32Array(L * T * C);
  residScale[patchLayer * T + patchPos] = 0;
  residAdd.set(clean.subarray(patchPos * C, (patchPos + 1) * C), (patchLayer * T + patchPos) * C);
  const residProbes = { resid_scale: residScale, resid_add: residAdd };
  const run = {
    ablation: () => insp.inspect(ids, { probes: headProbes, want: ['logits'], lastOnly: true }),
    patched: () => insp.inspect(corrupted, { probes: residProbes, want: ['logits'], lastOnly: true }),
    neutral,
  };
  for (const fn of Object.values(run)) await fn(); // warm-up
  const out = { ablationMs: [], patchedMs: [], neutralMs: [] };
  const kinds = Object.keys(run);
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(k + r + offset) % kinds.length];
      await pause();
      out[kind + 'Ms'].push((await timed(run[kind]))[0]);
    }
  }
  return out;
}""".replace("__PRELUDE__", PRELUDE)

# The head map and the residual patching heatmap, each with the tick probe running.
MAP_JS = """async ([which]) => {
  __PRELUDE__
  let events = 0;
  const onProgress = () => { events++; };
  await pause();
  const probe = ticker();
  const [ms, res] = await timed(() =>
    which === 'heads' ? I.headImportance(insp, ids, 'zero', { onProgress }) : I.patchResidual(insp, ids, corrupted, good, bad, { onProgress }));
  const ticks = probe.stop();
  return { ms, progressEvents: events, cells: (res.kl ?? res.restored).length, finite: Array.from(res.kl ?? res.restored).every(Number.isFinite), ...ticks };
}""".replace("__PRELUDE__", PRELUDE)

# Cancelling: abort patchResidual right after its Nth progress event (the next pass is then in
# flight), the time from abort() to the AbortError, and one more pass afterwards.
CANCEL_JS = """async ([after]) => {
  __PRELUDE__
  await pause();
  const controller = new AbortController();
  let events = 0, abortedAt = null, eventsAtAbort = null;
  const onProgress = () => {
    if (++events === after) setTimeout(() => { abortedAt = performance.now(); eventsAtAbort = events; controller.abort(); }, 0);
  };
  const out = { after };
  try {
    await I.patchResidual(insp, ids, corrupted, good, bad, { onProgress, signal: controller.signal });
    out.error = 'not cancelled';
  } catch (err) {
    out.abortToErrorMs = performance.now() - abortedAt;
    out.errorName = err.name;
  }
  out.eventsAtAbort = eventsAtAbort;
  out.eventsTotal = events;
  const [ms, next] = await timed(neutral);
  out.worksAfter = next.logits.data.length === insp.info.config.vocab_size;
  out.nextRunMs = ms;
  return out;
}""".replace("__PRELUDE__", PRELUDE)

# Memory page: load one model (plain or inspect) and run the same forward `runs` times.
MEMORY_JS = """async ([model, variant, threads, text, T, corrupt, goodWord, badWord, inspect, runs]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const info = __INFO__;
  const t0 = performance.now();
  const m = await loadModel({ model, backend: 'wasm', variant, threads, needs: inspect ? ['inspect'] : [] });
  const loadMs = performance.now() - t0;
  __PROMPT__
  for (let r = 0; r < runs; r++) {
    if (inspect) await m.inspect(ids, { want: ['logits'], lastOnly: true });
    else await m.forward(ids);
  }
  globalThis.__memory = { m, ids };
  return { loadMs, info: info(m) };
}""".replace("__INFO__", INFO).replace("__PROMPT__", PROMPT)

# Afterwards, on the inspect page: the lens (with every cell's top-1) and one ablation.
MEMORY_LENS_JS = """async () => {
  const I = await import('./assets/tx/runtime/interpret.js');
  const { m, ids } = globalThis.__memory;
  const lens = await I.logitLens(m, ids);
  for (let l = 0; l < lens.layers; l++) for (let p = 0; p < lens.T; p++) I.argmax(lens.cell(l, p));
  await I.ablateHeads(m, ids, [[0, 0]], 'zero');
  return true;
}"""


def prompt_args(name: str, variant: str, threads: int) -> list:
    return [name, variant, threads, TEXT, PROMPT_TOKENS, [list(c) for c in CORRUPT], GOOD, BAD]


def median(values) -> float:
    return statistics.median(values)


def measure_timings(url: str, name: str, variant: str, threads: int, runs: int, lens_runs: int, round_: int, config: dict) -> dict:
    """Every timing of one variant in one round, in a fresh browser profile."""
    from playwright.sync_api import sync_playwright

    L, nh = config["n_layer"], config["n_head"]
    layer, head = min(5, L - 1), min(3, nh - 1)
    patch_layer, patch_pos = L // 2, PROMPT_TOKENS // 2
    offset = round_ % 2
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-inspect-") as profile:
        context = profile_context(p, profile)
        try:
            page, errors = open_page(context, url)
            setup = page.evaluate(SETUP_JS, [*prompt_args(name, variant, threads), bool(offset)])
            forward = page.evaluate(FORWARD_JS, [runs, offset])
            lens = page.evaluate(LENS_JS, [lens_runs, offset])
            ablate = page.evaluate(ABLATE_JS, [runs, offset, layer, head, patch_layer, patch_pos])
            maps = {}
            for which in ("heads", "residual") if offset == 0 else ("residual", "heads"):
                print(f"    {which} map ...", flush=True)
                maps[which] = page.evaluate(MAP_JS, [which])
            cancel = page.evaluate(CANCEL_JS, [CANCEL_AFTER_EVENTS])
            user_agent = page.evaluate("navigator.userAgent")
        finally:
            context.close()
    # lens after the forward: each lens run less the neutral forward of the same run
    after = [lens_ms - fwd for lens_ms, fwd in zip(lens["lensMs"], lens["forwardMs"])]
    after_top1 = [a + t for a, t in zip(after, lens["top1Ms"])]
    return {
        "user_agent": user_agent,
        "load_ms": {"plain": setup["plainLoadMs"], "inspect": setup["inspectLoadMs"]},
        "info": {"plain": setup["plain"], "inspect": setup["inspect"]},
        "ids": setup["ids"],
        "corrupted_ids": setup["corrupted"],
        "good_bad_ids": [setup["good"], setup["bad"]],
        "ablated_head": [layer, head],
        "patched_layer_pos": [patch_layer, patch_pos],
        "forward_ms": {
            "plain": median(forward["plainMs"]),
            "inspect_neutral": median(forward["inspectMs"]),
            "plain_runs": forward["plainMs"],
            "inspect_neutral_runs": forward["inspectMs"],
        },
        "plain_vs_inspect_logits_max_abs_diff": forward["logitsMaxAbsDiff"],
        "lens_ms": {
            "total": median(lens["lensMs"]),
            "forward": median(lens["forwardMs"]),
            "hidden_states_pass": median(lens["hiddenPassMs"]),
            "after_forward": median(after),
            "cells_top1": median(lens["top1Ms"]),
            "after_forward_with_top1": median(after_top1),
            "cells": lens["cells"],
            "runs": lens,
        },
        "run_ms": {
            "ablation": median(ablate["ablationMs"]),
            "patched": median(ablate["patchedMs"]),
            "neutral": median(ablate["neutralMs"]),
            "runs": ablate,
        },
        "head_map": maps["heads"],
        "residual_patching": maps["residual"],
        "cancel": cancel,
        "page_errors": errors,
    }


def measure_memory(url: str, name: str, variant: str, threads: int, inspect: bool, runs: int) -> dict:
    """Peak browser memory while loading and running one model alone, in a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-inspect-memory-") as profile:
        context = profile_context(p, profile)
        try:
            page, errors = open_page(context, url)
            with MemorySampler() as idle:
                time.sleep(1.0)
            with MemorySampler() as memory:
                out = page.evaluate(MEMORY_JS, [*prompt_args(name, variant, threads), inspect, runs])
            lens = None
            if inspect:
                with MemorySampler() as lens:
                    page.evaluate(MEMORY_LENS_JS)
        finally:
            context.close()
    return {
        "graph": "inspect" if inspect else "plain",
        "load_ms": out["loadMs"],
        "info": out["info"],
        "idle_page_bytes": idle.result(),
        "peak_load_and_run_bytes": memory.result(),
        "peak_lens_and_ablation_bytes": lens.result() if lens else None,
        "page_errors": errors,
    }


def summary(results: list[dict]) -> list[dict]:
    """One row per variant: medians over the rounds with their spread, and the targets."""
    rows = []
    for name in dict.fromkeys(r["variant"] for r in results):
        mine = [r for r in results if r["variant"] == name]
        t = [r["timings"] for r in mine if "timings" in r]
        if not t:
            rows.append({"variant": name, "error": next((r.get("timings_error") for r in mine), None)})
            continue
        mem = {g: [r["memory"][g] for r in mine if g in r.get("memory", {})] for g in ("plain", "inspect")}
        mb = lambda xs, key: spread((x[key] or 0) / 1e6 or None for x in xs)  # noqa: E731
        plain_fwd = spread(x["forward_ms"]["plain"] for x in t)
        insp_fwd = spread(x["forward_ms"]["inspect_neutral"] for x in t)
        row = {
            "variant": name,
            "rounds": len(t),
            "threads": t[0]["info"]["inspect"]["threads"],
            "cross_origin_isolated": t[0]["info"]["inspect"]["crossOriginIsolated"],
            "forward_plain_ms": plain_fwd,
            "forward_inspect_neutral_ms": insp_fwd,
            "inspect_over_plain_forward": round(insp_fwd["median"] / plain_fwd["median"], 2),
            "plain_vs_inspect_logits_max_abs_diff": max(x["plain_vs_inspect_logits_max_abs_diff"] for x in t),
            "lens_total_ms": spread(x["lens_ms"]["total"] for x in t),
            "lens_forward_ms": spread(x["lens_ms"]["forward"] for x in t),
            "lens_hidden_states_pass_ms": spread(x["lens_ms"]["hidden_states_pass"] for x in t),
            "lens_after_forward_ms": spread(x["lens_ms"]["after_forward"] for x in t),
            "lens_cells_top1_ms": spread(x["lens_ms"]["cells_top1"] for x in t),
            "lens_after_forward_with_top1_ms": spread(x["lens_ms"]["after_forward_with_top1"] for x in t),
            "ablation_run_ms": spread(x["run_ms"]["ablation"] for x in t),
            "patched_run_ms": spread(x["run_ms"]["patched"] for x in t),
            "neutral_run_ms": spread(x["run_ms"]["neutral"] for x in t),
            "head_map_s": spread(x["head_map"]["ms"] / 1000 for x in t),
            "head_map_passes": t[0]["head_map"]["cells"],
            "head_map_max_tick_gap_ms": spread(x["head_map"]["maxGapMs"] for x in t),
            "residual_patching_s": spread(x["residual_patching"]["ms"] / 1000 for x in t),
            "residual_patching_passes": t[0]["residual_patching"]["cells"],
            "residual_patching_max_tick_gap_ms": spread(x["residual_patching"]["maxGapMs"] for x in t),
            "cancel_abort_to_error_ms": spread(x["cancel"].get("abortToErrorMs") for x in t),
            "cancel_ok": all(x["cancel"].get("errorName") == "AbortError" and x["cancel"]["worksAfter"] for x in t),
            "cancel_passes_after_abort": max((x["cancel"]["eventsTotal"] or 0) - (x["cancel"]["eventsAtAbort"] or 0) for x in t),
            "load_plain_s": spread(x["load_ms"]["plain"] / 1000 for x in t),
            "load_inspect_s": spread(x["load_ms"]["inspect"] / 1000 for x in t),
            "memory_idle_page_mb": mb(mem["plain"] + mem["inspect"], "idle_page_bytes"),
            "memory_plain_peak_mb": mb(mem["plain"], "peak_load_and_run_bytes"),
            "memory_inspect_peak_mb": mb(mem["inspect"], "peak_load_and_run_bytes"),
            "memory_inspect_lens_peak_mb": mb(mem["inspect"], "peak_lens_and_ablation_bytes"),
        }
        p, i = row["memory_plain_peak_mb"]["median"], row["memory_inspect_peak_mb"]["median"]
        idle = row["memory_idle_page_mb"]["median"] or 0
        row["memory_inspect_over_plain"] = round(i / p, 2) if p and i else None
        row["memory_inspect_over_plain_above_idle"] = round((i - idle) / (p - idle), 2) if p and i and p > idle else None
        checks = {  # target -> (spread, its unit in seconds)
            "lens_after_forward_s": (row["lens_after_forward_with_top1_ms"], 1e-3),
            "ablation_run_s": (row["ablation_run_ms"], 1e-3),
            "patched_run_s": (row["patched_run_ms"], 1e-3),
            "head_map_s": (row["head_map_s"], 1.0),
            "residual_patching_s": (row["residual_patching_s"], 1.0),
        }
        row["targets"] = {
            key: {
                "target_s": TARGETS[key],
                "median_s": round(s["median"] * unit, 3),
                "worst_s": round(s["max"] * unit, 3),
                "pass": s["median"] * unit <= TARGETS[key],
                "pass_every_round": s["max"] * unit <= TARGETS[key],
            }
            for key, (s, unit) in checks.items()
        }
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a model-export build directory with inspect graphs (manifest.json)")
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="a built site providing the runtime files")
    ap.add_argument("--variants", default="q8x,q4x", help="comma-separated variant names (each with an inspect graph)")
    ap.add_argument("--threads", type=int, default=2, help="WASM threads")
    ap.add_argument("--runs", type=int, default=5, help="timed calls per round for the forward, ablation and patched runs (median)")
    ap.add_argument("--lens-runs", type=int, default=3, help="timed logit lenses per round (median)")
    ap.add_argument("--memory-runs", type=int, default=3, help="forward passes on the memory pages after the load")
    ap.add_argument("--repeat", type=int, default=3, help="rounds: every quantity once per round, the variants' order rotated (the summary takes medians)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory pages")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: bench/results/inside.json, replaced)")
    args = ap.parse_args(argv)

    manifest = json.loads((args.model / "manifest.json").read_text())
    variants = args.variants.split(",")
    missing = [v for v in variants if not any(m["name"] == v and m.get("inspect") for m in manifest["variants"])]
    if missing:
        ap.error(f"{args.model} has no inspect graph for {missing} (make model adds them)")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    work.mkdir(parents=True, exist_ok=True)
    root = serve_dir(args.site, args.model, manifest, work, set())
    server, url = serve_in_thread(root)
    load_before = os.getloadavg()
    results = []
    try:
        for round_ in range(args.repeat):
            order = variants[round_ % len(variants) :] + variants[: round_ % len(variants)]
            for name in order:
                label = f"round {round_ + 1}: {name}, {args.threads} thread(s)"
                row = {"round": round_ + 1, "variant": name, "load_average_at_start": os.getloadavg()}
                print(f"{label}: timings ...", flush=True)
                try:
                    row["timings"] = measure_timings(
                        url + "index.html", manifest["name"], name, args.threads, args.runs, args.lens_runs, round_, manifest["config"]
                    )
                except Exception as err:  # record it, go on with the other measurements
                    row["timings_error"] = str(err).split("\n")[0][:400]
                    print(f"    failed: {row['timings_error']}", flush=True)
                if not args.no_memory:
                    row["memory"] = {}
                    for graph in ("plain", "inspect") if round_ % 2 == 0 else ("inspect", "plain"):
                        print(f"{label}: memory, {graph} ...", flush=True)
                        try:
                            row["memory"][graph] = measure_memory(
                                url + "index.html", manifest["name"], name, args.threads, graph == "inspect", args.memory_runs
                            )
                        except Exception as err:
                            row["memory"][f"{graph}_error"] = str(err).split("\n")[0][:400]
                            print(f"    failed: {row['memory'][f'{graph}_error']}", flush=True)
                results.append(row)
                if "timings" in row:
                    t = row["timings"]
                    print(
                        f"    forward plain {t['forward_ms']['plain']:.0f} ms, inspect {t['forward_ms']['inspect_neutral']:.0f} ms; "
                        f"lens {t['lens_ms']['total']:.0f} ms (after forward + top-1 {t['lens_ms']['after_forward_with_top1']:.0f}); "
                        f"ablation {t['run_ms']['ablation']:.0f} ms, patched {t['run_ms']['patched']:.0f} ms; "
                        f"head map {t['head_map']['ms'] / 1000:.1f} s (max gap {t['head_map']['maxGapMs']:.0f} ms), "
                        f"patching {t['residual_patching']['ms'] / 1000:.1f} s; cancel {t['cancel'].get('abortToErrorMs', float('nan')):.0f} ms",
                        flush=True,
                    )
                for graph, m in row.get("memory", {}).items():
                    if isinstance(m, dict):
                        peak, idle = (m["peak_load_and_run_bytes"] or 0) / 1e6, (m["idle_page_bytes"] or 0) / 1e6
                        print(f"    memory {graph}: peak {peak:.0f} MB (idle page {idle:.0f} MB)", flush=True)
    finally:
        server.shutdown()

    from importlib.metadata import version

    report = {
        **report_header("bench/inside.py", argv, manifest),
        "setup": {
            "backend": "wasm",
            "threads": args.threads,
            "variants": variants,
            "prompt_tokens": PROMPT_TOKENS,
            "prompt_text": TEXT,
            "corrupted": {"positions_words": [list(c) for c in CORRUPT], "good": GOOD, "bad": BAD},
            "runs": args.runs,
            "lens_runs": args.lens_runs,
            "memory_runs": args.memory_runs,
            "repeat": args.repeat,
            "tick_interval_ms": TICK_MS,
            "cancel_after_progress_events": CANCEL_AFTER_EVENTS,
            "targets": {
                **TARGETS,
                "on": "the summary's median over the rounds (pass_every_round: the slowest round); lens_after_forward_s is "
                "lens_after_forward_with_top1 (the lens less one forward, plus every cell's top-1)",
            },
            "definitions": {
                "forward_plain_ms": "model.forward(ids) on the variant's ordinary graph (16 tokens, logits of the last position); median of --runs per round",
                "forward_inspect_neutral_ms": "model.inspect(ids, {want: ['logits'], lastOnly: true}) on the inspect graph, every probe neutral; "
                "alternating with the plain forward in the same page (which goes first flips every pair and every round)",
                "plain_vs_inspect_logits_max_abs_diff": "largest |plain - inspect| over the last position's logits (neutral probes compute the same)",
                "lens_total_ms": "logitLens(model, ids): its hidden-states pass and the pass that reads (n_layer + 1) x 16 rows "
                "through ln_f and the unembedding",
                "lens_forward_ms": "one neutral inspect forward measured in the same run as the lens",
                "lens_hidden_states_pass_ms": "model.inspect(ids) with every hidden_states.* output: the lens's first pass alone",
                "lens_after_forward_ms": "lens_total less lens_forward, per run: the wait the lens adds after a forward pass",
                "lens_cells_top1_ms": "lens.cell(l, t) for every layer and position, and its argmax (what the widget computes)",
                "lens_after_forward_with_top1_ms": "lens_after_forward + lens_cells_top1",
                "ablation_run_ms": "one model.inspect with head_scale 0 for one head (and head_add 0), logits of the last position",
                "patched_run_ms": "one model.inspect of the corrupted prompt with resid_scale 0 and resid_add = the clean stream at one (layer, position)",
                "neutral_run_ms": "a neutral inspect forward in the same rotation as the ablation and patched runs",
                "head_map_s": "headImportance(model, ids, 'zero', {onProgress}): one clean pass and n_layer x n_head ablated passes",
                "residual_patching_s": "patchResidual(model, ids, corrupted, good, bad, {onProgress}): two baseline passes and n_layer x 16 patched passes",
                "max_tick_gap_ms": f"largest gap between the ticks of a setInterval(..., {TICK_MS}) in the page while the map runs ({TICK_MS} = never late)",
                "cancel_abort_to_error_ms": f"patchResidual with an AbortController, aborted from a setTimeout(0) after its {CANCEL_AFTER_EVENTS}th progress "
                "event, so that a pass is in flight: abort() to the AbortError (at most the pass in flight); cancel_ok: the error is an AbortError "
                "and the model answers a neutral pass afterwards; cancel_passes_after_abort: progress events after abort() (1: the pass in flight)",
                "load_s": "loadModel in the timing page (the plain and the inspect model, alternating which loads first; "
                "the second reads the shared pieces from Cache Storage)",
                "memory_*_peak_mb": "sum of the browser processes' private resident memory (browser.MemorySampler), peak while loading the model "
                f"and running {args.memory_runs} forward passes (plain: forward, inspect: neutral inspect), each alone in a fresh browser profile",
                "memory_idle_page_mb": "the same over one second of the page before loading",
                "memory_inspect_lens_peak_mb": "the inspect page afterwards, while it computes the logit lens (with every cell's top-1) and one ablation",
                "memory_inspect_over_plain_above_idle": "(inspect peak - idle) / (plain peak - idle): about 1 with one copy of the weights, about 2 with two",
                "spread": "median, min and max over the rounds",
            },
        },
        "machine": machine(load_before),
        "versions": {
            "python": platform.python_version(),
            "playwright": version("playwright"),
            "onnxruntime_web": json.loads((ROOT / "node_modules" / "onnxruntime-web" / "package.json").read_text())["version"],
            "chromium": next((r["timings"]["user_agent"] for r in results if "timings" in r), None),
        },
        "results": results,
        "summary": summary(results),
    }
    out = args.out or ROOT / "bench" / "results" / "inside.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for row in report["summary"]:
        print(json.dumps({k: (v["median"] if isinstance(v, dict) and "median" in v else v) for k, v in row.items() if k != "targets"}))
        for key, t in row.get("targets", {}).items():
            print(f"  {row['variant']} {key}: median {t['median_s']} s (worst {t['worst_s']}) vs target {t['target_s']} s: {'pass' if t['pass'] else 'FAIL'}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
