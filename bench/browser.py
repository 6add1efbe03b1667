"""Benchmark the site's GPT-2 runtime in headless Chromium against onnxruntime in Python.

For every variant (e.g. q4x, q8, q4, fp32), set of session options (``--tuning``, the fields of
``site_src/runtime/tuning.js``; ``site`` = the site's own) and WASM thread count it measures,
in the browser, through the same JS API the widgets use (``site_src/runtime/model.js``), in a
fresh browser profile each time:

* download bytes;
* cold load: download + sha256 + Cache Storage (+ expanding q4x's 4-bit weights) + session;
* the first generation straight after the cold load (64 greedy tokens after a 32-token
  prompt): time to its first token, counted from the load call, and its tokens per second
  (the browser still compiling the WASM's hot code);
* prefill: one forward pass over 8, 128 and 512 tokens (median of ``--runs``);
* decode: two later generations (warm);
* decode after 512 and 1,000 cached positions (``--no-long`` skips it), and the time from the
  generate call to the first token of those 512- and 1,000-token prompts;
* warm load: the load after a reload (files from Cache Storage, no model request);
* peak memory of the browser's processes (the sum of their private resident memory from
  /proc/PID/statm, sampled every 100 ms; Linux only), for the cold page and, apart, for
  the long contexts;
* a correctness check: the largest difference between the browser's and onnxruntime's
  logits after 8 tokens;

and the same prefill and decode with onnxruntime in Python (CPU) on the same graph file (for
q4x: the graph its pieces expand to) and thread count, plus native fp32 decoding. Every pair
of variant and tuning is measured once per round (``--repeat``, default 3), in an order
rotated each round; the ``summary`` gives, per variant, tuning and thread count, medians
with their spread (min, max) over the rounds. The JSON, with the commit, versions and machine
load, replaces ``bench/results/browser.json`` (or ``--out``); the docs' tables are written
from it (sitebuild/bench_hook.py).

Usage::

    .venv/bin/python bench/browser.py --model build/models/small-random [--site site]
        [--variants q4x,fp32] [--threads 1,2] [--tuning 'site={}' --tuning 'no-prepack={"prepacking": false}']
        [--pairs q4x:site,q4x:no-prepack,fp32:site:2] [--repeat 3] [--runs 3] [--out FILE]

The site (``--site``, default ``site/``) provides the runtime files; the model directory
is served beside it, so any model built by ``model-export`` works without rebuilding the
site. ``--fp32-graph`` adds an fp32 variant from a single-file graph (default: the
build's ``.build/reference.onnx`` when the manifest has no fp32 variant), split into
external-data pieces of at most 40 MB like the exporter's own variants; ``--graph-variant``
adds any other single-file graph the same way (``NAME=GRAPH``, or ``NAME=GRAPH:whole``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import machine, open_page, profile_context, report_header, spread
from model_export.expand import onnx_graph
from model_export.layout import PIECE_BYTES, expanded_name
from model_export.package import file_entry, file_role, variant_files
from sitebuild.serve import serve_in_thread

ROOT = Path(__file__).resolve().parent.parent

PREFILL_LENGTHS = (8, 128, 512)
PROMPT_TOKENS = 32
NEW_TOKENS = 64
# Decode after long cached contexts: (cached positions, new tokens); the context of GPT-2 is 1,024.
LONG_CONTEXTS = ((512, 32), (1000, 24))
TEXT = "The Transformer reads a sequence of tokens, lets every position attend to the ones before it, and predicts the next token from the last position. "

# A tuning's keys are session options (site_src/runtime/tuning.js) except the bench's own
# `readingPauseMs`: the time between "ready" and the first generation.
SESSION_TUNING_JS = "(({ readingPauseMs, ...rest }) => rest)(tuning)"

# Runs in the page. Cold: load, the first generation straight away (time to the first token
# counts from the load call), the logits check, prefill timings, two later generations, and
# decode after long cached contexts. Warm (after a reload): the load only.
PAGE_JS = """async ([model, variant, threads, tuning, lengths, runs, promptTokens, newTokens, longContexts, measure]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const t0 = performance.now();
  const m = await loadModel({ model, backend: 'wasm', variant, threads, tuning: sessionTuning(tuning) });
  const out = { loadMs: performance.now() - t0, info: { ...m.info } };
  if (!measure) return out;
  // A reader who reads for a while before pressing Generate (a bench setting, not a session option).
  await new Promise((resolve) => setTimeout(resolve, tuning.readingPauseMs || 0));
  const base = m.tokenizer.encode(__TEXT__);
  const idsOf = (n) => Array.from({ length: n }, (_, i) => base[i % base.length]);
  const generation = async (prompt, count) => {
    const run = m.generate(idsOf(prompt), { maxNewTokens: count, temperature: 0, stopAtEos: false });
    let firstAt = null;
    const ids = [];
    for await (const token of run) {
      firstAt ??= performance.now();
      ids.push(token.id);
    }
    const res = await run.result;
    return { tokensPerSecond: res.tokensPerSecond, prefillMs: res.prefillMs, newTokens: res.newTokens, decodeRunMs: res.decodeRunMs, firstAt, ids };
  };
  out.promptIds = idsOf(promptTokens);
  const first = await generation(promptTokens, newTokens);
  out.firstTokenMs = first.firstAt - t0 - (tuning.readingPauseMs || 0);
  out.check = Array.from((await m.forward(idsOf(8))).logits); // compared with native below
  out.prefillMs = {};
  for (const n of lengths) {
    await m.forward(idsOf(n)); // warm-up
    const times = [];
    for (let r = 0; r < runs; r++) {
      const t = performance.now();
      await m.forward(idsOf(n));
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    out.prefillMs[n] = times[Math.floor(times.length / 2)];
  }
  out.decode = [first];
  for (let r = 0; r < 2; r++) out.decode.push(await generation(promptTokens, newTokens));
  return out;
}""".replace("__TEXT__", json.dumps(TEXT)).replace("sessionTuning(tuning)", SESSION_TUNING_JS)

# Runs in the same page afterwards (the model is still loaded): decode after long cached contexts,
# and the time from the generate call to the first token of each long prompt.
LONG_JS = """async ([model, variant, threads, tuning, longContexts]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const m = await loadModel({ model, backend: 'wasm', variant, threads, tuning: sessionTuning(tuning) });
  const base = m.tokenizer.encode(__TEXT__);
  const idsOf = (n) => Array.from({ length: n }, (_, i) => base[i % base.length]);
  const out = {};
  for (const [past, count] of longContexts) {
    const started = performance.now();
    const run = m.generate(idsOf(past), { maxNewTokens: count, temperature: 0, stopAtEos: false });
    let firstAt = null;
    for await (const token of run) firstAt ??= performance.now();
    out[past] = { tokensPerSecond: (await run.result).tokensPerSecond, firstTokenMs: firstAt - started };
  }
  return out;
}""".replace("__TEXT__", json.dumps(TEXT)).replace("sessionTuning(tuning)", SESSION_TUNING_JS)


class MemorySampler:
    """Peak private memory of this process's Chromium descendants, sampled in a thread (Linux).

    Each sample sums, over the browser's processes, resident minus file-backed pages from
    ``/proc/PID/statm``: the anonymous memory (JS heaps, WebAssembly memory, buffers) that
    each process holds alone. It is cheap to read, unlike ``smaps``, which would stall the
    processes it walks.
    """

    def __init__(self, interval: float = 0.1):
        import threading

        self.interval, self.peak, self.samples = interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    @staticmethod
    def _browser_pids() -> list[int]:
        parents, names = {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            names[int(entry.name)] = stat[stat.index("(") + 1 : stat.rindex(")")]
        mine, found = {os.getpid()}, True
        while found:
            found = False
            for pid, parent in parents.items():
                if parent in mine and pid not in mine:
                    mine.add(pid)
                    found = True
        return [pid for pid in mine if "chrom" in names.get(pid, "").lower()]

    def _private(self, pid: int) -> int:
        try:
            resident, shared = (int(x) for x in Path(f"/proc/{pid}/statm").read_text().split()[1:3])
        except (OSError, ValueError):
            return 0
        return (resident - shared) * self._page

    def _run(self):
        pids, ticks = [], 0
        while not self._stop.is_set():
            if ticks % 10 == 0:  # new renderer and worker processes appear now and then
                pids = self._browser_pids()
            ticks += 1
            self.peak = max(self.peak, sum(self._private(pid) for pid in pids))
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self):
        if Path("/proc/self/statm").exists():
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def result(self) -> int | None:
        return self.peak if self.samples else None


def split_graph(graph: Path, out: Path, limit: int = PIECE_BYTES) -> list[str]:
    """Rewrite a single-file ONNX graph with its weights in external-data pieces of at most
    `limit` bytes (one tensor never spans two pieces; 4 KiB-aligned offsets). Unlike the
    exporter's ``package.save_variant`` it never splits a tensor into rows joined by a
    ``Concat``, so the fp32 rows run exactly the reference graph."""
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load(str(graph))
    out.mkdir(parents=True, exist_ok=True)
    pieces: list[bytearray] = [bytearray()]
    for tensor in model.graph.initializer:
        data = tensor.raw_data
        if len(data) < 4096:
            continue
        if pieces[-1] and len(pieces[-1]) + (-len(pieces[-1]) % 4096) + len(data) > limit:
            pieces.append(bytearray())
        piece = pieces[-1]
        piece.extend(b"\0" * (-len(piece) % 4096))
        set_external_data(tensor, location=f"model.onnx.data.{len(pieces) - 1}", offset=len(piece), length=len(data))
        piece.extend(data)
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
    names = []
    for k, piece in enumerate(pieces):
        (out / f"model.onnx.data.{k}").write_bytes(bytes(piece))
        names.append(f"model.onnx.data.{k}")
    onnx.save(model, str(out / "model.onnx"))
    return names


def graph_variant(name: str, graph: Path, work: Path, dtype: str = "float32", split: bool = True) -> dict:
    """A manifest entry `name` for the single-file `graph`, split into pieces under
    work/<name> (reused when unchanged), or served whole."""
    target = work / name
    stamp = target / ".source"
    key = f"{graph.resolve()} {graph.stat().st_size} {graph.stat().st_mtime_ns} {split}"
    if not stamp.exists() or stamp.read_text() != key:
        shutil.rmtree(target, ignore_errors=True)
        if split:
            print(f"splitting {graph} into pieces of at most {PIECE_BYTES / 1e6:.0f} MB ...", flush=True)
            split_graph(graph, target)
        else:
            target.mkdir(parents=True)
            shutil.copy2(graph, target / "model.onnx")
        stamp.write_text(key)
    files = [file_entry(path, work, file_role(path)) for path in variant_files(target)]
    return {"name": name, "dtype": dtype, "backends": ["wasm"], "files": files, "bytes": sum(f["bytes"] for f in files)}


def serve_dir(site: Path, model_dir: Path, manifest: dict, work: Path, local: set[str]) -> Path:
    """A directory to serve: the site's runtime files and the model with its draft (links, no
    copies). Files of the model's variants named in `local` live in `work`, the others in `model_dir`."""
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "models" / manifest["name"]).mkdir(parents=True)
    (root / "assets").symlink_to((site / "assets").resolve())
    (root / "index.html").write_text(
        '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>runtime benchmark</title></head><body></body></html>'
    )
    served = root / "models" / manifest["name"]
    drafts = [(False, v) for v in manifest.get("draft", {}).get("variants", [])]  # the speculative draft's, from model_dir
    for is_model, variant in [(True, v) for v in manifest["variants"]] + drafts:
        for f in variant["files"] + ([variant["inspect"]] if variant.get("inspect") else []):  # and its inspect graph
            src = (work if is_model and variant["name"] in local else model_dir) / f["path"]
            dst = served / f["path"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                dst.symlink_to(src.resolve())
    for f in manifest["tokenizer"].values():
        (served / f["path"]).symlink_to((model_dir / f["path"]).resolve())
    (served / "manifest.json").write_text(json.dumps(manifest))
    (root / "models" / "index.json").write_text(json.dumps({"default": manifest["name"], "models": {manifest["name"]: {"config": manifest["config"]}}}))
    return root


def measure_browser(
    url: str, name: str, variant: str, threads: int, tuning: dict, runs: int, long_contexts, prefill_lengths=None, requests: list[str] | None = None
) -> dict:
    """The site's runtime in a fresh browser profile: a cold page, then the load after a reload.

    Args:
        url: The page to open (the bench server's ``index.html``).
        name: The model's name under ``models/``.
        variant: The variant to load.
        threads: WASM threads.
        tuning: Session options over the site's own (``{}``: the site's).
        runs: Repetitions per prefill length (median).
        long_contexts: (cached positions, new tokens) pairs to decode after, in the same page.
        prefill_lengths: Prompt lengths whose prefill is timed (default ``PREFILL_LENGTHS``).
        requests: When given, the URL of every request the browser makes is appended to it.

    Returns:
        The run's figures (``_check_logits``: the logits after 8 tokens, for the caller to compare).
    """
    from playwright.sync_api import sync_playwright

    lengths = PREFILL_LENGTHS if prefill_lengths is None else prefill_lengths
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
        context = profile_context(p, profile)
        if requests is not None:
            context.on("request", lambda r: requests.append(r.url))
        try:
            page, errors = open_page(context, url)
            args = [name, variant, threads, tuning, list(lengths), runs, PROMPT_TOKENS, NEW_TOKENS, []]
            with MemorySampler() as memory:
                cold = page.evaluate(PAGE_JS, [*args, True])
            with MemorySampler() as long_memory:
                cold["longDecode"] = page.evaluate(LONG_JS, [name, variant, threads, tuning, [list(c) for c in long_contexts]])
            model_requests = []
            page.on("request", lambda r: model_requests.append(r.url) if f"/models/{name}/" in r.url and not r.url.endswith("manifest.json") else None)
            page.reload()
            page.wait_for_load_state()
            warm = page.evaluate(PAGE_JS, [*args, False])
            version = page.evaluate("navigator.userAgent")
        finally:
            context.close()
    info = cold["info"]
    return {
        "user_agent": version,
        "threads": info["threads"],
        "cross_origin_isolated": info["crossOriginIsolated"],
        "bytes": info["bytes"]["total"],
        "cold_load_ms": {
            "total": cold["loadMs"],
            "download": info["timings"]["downloadMs"],
            "expand": info["timings"].get("expandMs", 0),
            "session": info["timings"]["sessionMs"],
            "warmup": info["timings"].get("warmupMs", 0),
        },
        "warm_load_ms": {
            "total": warm["loadMs"],
            "from_cache": warm["info"]["timings"]["downloadMs"],
            "expand": warm["info"]["timings"].get("expandMs", 0),
            "session": warm["info"]["timings"]["sessionMs"],
            "warmup": warm["info"]["timings"].get("warmupMs", 0),
        },
        "peak_browser_private_bytes": memory.result(),
        "peak_browser_private_bytes_long_contexts": long_memory.result(),
        "warm_load_model_requests": len(model_requests),
        "warm_load_bytes_from_network": warm["info"]["bytes"]["fromNetwork"],
        "tuning": info["tuning"],
        "first_token_after_cold_load_ms": cold["firstTokenMs"],
        "prefill_ms": {str(k): v for k, v in cold["prefillMs"].items()},
        "decode_tok_s": {
            "first_generation": cold["decode"][0]["tokensPerSecond"],
            "warm": statistics.median(d["tokensPerSecond"] for d in cold["decode"][1:]),
            "warm_runs": [d["tokensPerSecond"] for d in cold["decode"][1:]],
        },
        "decode_in_session_run": in_session_run(cold["decode"][1:]),
        "decode_after_cached_tok_s": {past: run["tokensPerSecond"] for past, run in cold["longDecode"].items()},
        "first_token_ms_by_prompt": {past: run["firstTokenMs"] for past, run in cold["longDecode"].items()},  # from the generate call
        "prompt_ids": cold["promptIds"],
        "greedy_ids": cold["decode"][-1]["ids"],  # the last warm generation's tokens
        "page_errors": errors,
        "_check_logits": cold["check"],
    }


def in_session_run(generations: list[dict]) -> dict | None:
    """The share of the decode steps' time spent inside onnxruntime's ``session.run`` (the rest is
    the worker's own JavaScript: choosing the token, its message, the cache's bookkeeping), from
    each generation's ``decodeRunMs`` over its decode window, (new tokens - 1) / tokens per second:
    the median, and each warm run's. None for a worker that does not report it."""
    shares = [
        g["decodeRunMs"] / ((g["newTokens"] - 1) / g["tokensPerSecond"] * 1000)
        for g in generations
        if g.get("decodeRunMs") is not None and g["tokensPerSecond"]
    ]
    return {"median": statistics.median(shares), "runs": shares} if shares else None


def measure_native(graph: Path, config: dict, tokenizer_ids: list[int], threads: int, runs: int, long_contexts=(), lengths=None) -> dict:
    """The same prefill (of each of `lengths`, default ``PREFILL_LENGTHS``) and decode with
    onnxruntime (CPU provider) in this process."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    head_dim = config["n_embd"] // config["n_head"]
    present = [f"present.{i}.{kv}" for i in range(config["n_layer"]) for kv in ("key", "value")]

    def feeds(ids, past_length, past):
        f = {
            "input_ids": np.array([ids], np.int64),
            "attention_mask": np.ones((1, past_length + len(ids)), np.int64),
            "position_ids": np.arange(past_length, past_length + len(ids), dtype=np.int64)[None],
        }
        for k, name in enumerate(present):
            f[name.replace("present.", "past_key_values.")] = past[k] if past else np.zeros((1, config["n_head"], 0, head_dim), np.float32)
        return f

    ids_of = lambda n: [tokenizer_ids[i % len(tokenizer_ids)] for i in range(n)]  # noqa: E731
    check = session.run(["logits"], feeds(ids_of(8), 0, None))[0][0, -1]
    prefill = {}
    for n in PREFILL_LENGTHS if lengths is None else lengths:
        session.run(["logits"], feeds(ids_of(n), 0, None))
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            session.run(["logits"], feeds(ids_of(n), 0, None))
            times.append((time.perf_counter() - t) * 1000)
        prefill[str(n)] = statistics.median(times)

    def decode(prompt=PROMPT_TOKENS, count=NEW_TOKENS):
        ids = ids_of(prompt)
        out = session.run(["logits", *present], feeds(ids, 0, None))
        token = int(np.argmax(out[0][0, -1]))
        first = time.perf_counter()
        for n in range(1, count):
            out = session.run(["logits", *present], feeds([token], len(ids) + n - 1, out[1:]))
            token = int(np.argmax(out[0][0, -1]))
        return (count - 1) / (time.perf_counter() - first)

    first = decode()
    warm = [decode(), decode()]
    return {
        "prefill_ms": prefill,
        "decode_tok_s": {"first_generation": first, "warm": statistics.median(warm), "warm_runs": warm},
        "decode_after_cached_tok_s": {str(past): decode(past, count) for past, count in long_contexts},
        "_check_logits": check,
    }


def summary(results: list[dict], native_fp32: dict[int, list[float]]) -> list[dict]:
    """One row per variant, tuning and thread count, medians over the rounds (with their
    spread): the figures to compare side by side."""
    med = statistics.median
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for r in results:
        groups.setdefault((r["variant"], r["tuning_name"], r["threads"]), []).append(r)
    rows = []
    for (name, tuning, threads), runs in groups.items():
        ok = [r for r in runs if "browser" in r]
        if not ok:
            rows.append({"variant": name, "tuning": tuning, "threads": threads, "error": runs[0].get("browser_error")})
            continue
        b = [r["browser"] for r in ok]
        n = [r["native"] for r in ok]
        warm = spread(x["decode_tok_s"]["warm"] for x in b)
        native = spread(x["decode_tok_s"]["warm"] for x in n)
        first = spread(x["decode_tok_s"]["first_generation"] for x in b)
        fp32 = med(native_fp32[threads]) if native_fp32.get(threads) else None
        memory = [x["peak_browser_private_bytes"] for x in b if x.get("peak_browser_private_bytes")]
        row = {
            "variant": name,
            "tuning": tuning,
            "threads": threads,
            "runs": len(ok),
            "download_mb": round(b[0]["bytes"] / 1e6, 1),
            "decode_warm_tok_s": warm["median"],
            "decode_warm_tok_s_spread": warm,
            "native_same_graph_tok_s": native["median"],
            "native_same_graph_tok_s_spread": native,
            "warm_over_native_same_graph": round(warm["median"] / native["median"], 2),
            "native_fp32_tok_s": round(fp32, 1) if fp32 else None,
            "warm_over_native_fp32": round(warm["median"] / fp32, 2) if fp32 else None,
            "decode_first_generation_tok_s": first["median"],
            "decode_first_generation_tok_s_spread": first,
            "first_generation_over_warm": round(first["median"] / warm["median"], 2),
            "first_token_after_cold_load_s": spread(x["first_token_after_cold_load_ms"] / 1000 for x in b),
            "cold_load_s": spread(x["cold_load_ms"]["total"] / 1000 for x in b),
            "warm_load_s": spread(x["warm_load_ms"]["total"] / 1000 for x in b),
            "peak_browser_memory_mb": spread(m / 1e6 for m in memory),
            "peak_browser_memory_long_contexts_mb": spread((x.get("peak_browser_private_bytes_long_contexts") or 0) / 1e6 or None for x in b),
        }
        for length in PREFILL_LENGTHS[1:]:
            key = str(length)
            browser_ms = spread(x["prefill_ms"][key] for x in b)
            native_ms = spread(x["prefill_ms"][key] for x in n)
            row[f"prefill_{key}_ms"] = browser_ms
            row[f"prefill_{key}_native_ms"] = native_ms
            row[f"prefill_{key}_over_native"] = round(browser_ms["median"] / native_ms["median"], 2)
        for past in (str(p) for p, _ in LONG_CONTEXTS):
            if all(past in x.get("decode_after_cached_tok_s", {}) for x in b):
                row[f"decode_after_{past}_tok_s"] = spread(x["decode_after_cached_tok_s"][past] for x in b)
                row[f"decode_after_{past}_native_tok_s"] = spread(x["decode_after_cached_tok_s"][past] for x in n)
        rows.append(row)
    return rows


def parse_tuning(specs: list[str]) -> dict[str, dict]:
    """`NAME=JSON` pairs (e.g. ``no-prepack={"prepacking": false}``); the site's own settings
    are ``site={}``, measured when no pair is given."""
    out = {}
    for spec in specs or ["site={}"]:
        name, _, text = spec.partition("=")
        out[name] = json.loads(text or "{}")
    return out


def main(argv: list[str] | None = None) -> int:
    global PREFILL_LENGTHS  # read by the measurements and the summary; --prefill-lengths sets it
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a model-export build directory (with manifest.json)")
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="a built site providing the runtime files")
    ap.add_argument("--variants", default=None, help="comma-separated variant names (default: every variant that runs on WASM)")
    ap.add_argument("--threads", default="1,2", help="comma-separated WASM thread counts")
    ap.add_argument(
        "--tuning",
        action="append",
        metavar="NAME=JSON",
        help="a set of session options to measure (site_src/runtime/tuning.js), e.g. no-prepack='{\"prepacking\": false}'; "
        "repeat for several; default: site={} (the site's own)",
    )
    ap.add_argument(
        "--pairs",
        default=None,
        metavar="VARIANT:TUNING[:THREADS],...",
        help="measure only these pairs of variant and tuning, optionally on one thread count only "
        "(default: every variant with every tuning on every thread count)",
    )
    ap.add_argument("--prefill-lengths", default="8,128,512", help="comma-separated prompt lengths whose prefill is timed")
    ap.add_argument("--fp32-graph", type=Path, default=None, help="single-file fp32 graph to add as variant fp32")
    ap.add_argument(
        "--graph-variant",
        action="append",
        metavar="NAME=GRAPH",
        help="also measure a single-file graph as variant NAME (split into 40 MB external-data pieces; GRAPH:whole serves it as one file)",
    )
    ap.add_argument("--no-fp32", action="store_true", help="do not add the fp32 reference graph as a variant")
    ap.add_argument("--runs", type=int, default=3, help="repetitions per prefill length (median)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="rounds: every variant and tuning is measured once per round, in a rotated order (the summary takes medians)"
    )
    ap.add_argument("--no-long", action="store_true", help="skip decoding after 512 and 1,000 cached positions")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: bench/results/browser.json, replaced)")
    args = ap.parse_args(argv)
    PREFILL_LENGTHS = tuple(int(n) for n in args.prefill_lengths.split(","))

    manifest = json.loads((args.model / "manifest.json").read_text())
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-browser-"))
    work.mkdir(parents=True, exist_ok=True)
    fp32_graph = args.fp32_graph
    if fp32_graph is None and not any(v["name"] == "fp32" for v in manifest["variants"]):
        candidate = args.model / ".build" / "reference.onnx"
        fp32_graph = candidate if candidate.exists() else None
    local = set()
    if fp32_graph is not None:
        local.add("fp32")
        manifest["variants"] = [v for v in manifest["variants"] if v["name"] != "fp32"] + [graph_variant("fp32", fp32_graph, work)]
    for spec in args.graph_variant or []:
        name, _, path = spec.partition("=")
        path, whole = (path[: -len(":whole")], True) if path.endswith(":whole") else (path, False)
        local.add(name)
        manifest["variants"] = [v for v in manifest["variants"] if v["name"] != name] + [graph_variant(name, Path(path), work, "int4", not whole)]
    wanted = args.variants.split(",") if args.variants else [v["name"] for v in manifest["variants"] if "wasm" in v["backends"]]
    if args.no_fp32:
        wanted = [w for w in wanted if w != "fp32"]
    threads_list = [int(t) for t in args.threads.split(",")]
    tunings = parse_tuning(args.tuning)
    long_contexts = () if args.no_long else tuple(c for c in LONG_CONTEXTS if c[0] + c[1] <= manifest["config"]["n_positions"])
    # Every (variant, tuning) pair is measured once per round; rounds rotate the order.
    pairs = [(v, t) for v in wanted for t in tunings]
    only_threads: dict[tuple[str, str], int] = {}  # a pair given as VARIANT:TUNING:THREADS runs on that many only
    if args.pairs:
        chosen = []
        for spec in args.pairs.split(","):
            variant_name, tuning_name, *threads = spec.split(":")
            chosen.append((variant_name, tuning_name))
            if threads:
                only_threads[chosen[-1]] = int(threads[0])
        unknown = [p for p in chosen if p not in pairs]
        if unknown:
            ap.error(f"--pairs names unknown variant:tuning pairs {unknown}")
        pairs = chosen

    root = serve_dir(args.site, args.model, manifest, work, local)
    server, url = serve_in_thread(root)
    from transformers import GPT2TokenizerFast

    tokenizer_ids = GPT2TokenizerFast.from_pretrained(args.model).encode(TEXT)
    load_before = os.getloadavg()
    results = []
    native_fp32: dict[int, list[float]] = {}  # threads -> native fp32 warm decode tok/s, one per round
    try:
        for round_ in range(args.repeat):
            for name, tuning_name in pairs[round_ % len(pairs) :] + pairs[: round_ % len(pairs)]:
                variant = next(v for v in manifest["variants"] if v["name"] == name)
                graph_rel = next(f["path"] for f in variant["files"] if f.get("role", "graph") == "graph")
                graph = (root / "models" / manifest["name"] / graph_rel).resolve()
                graph = onnx_graph(graph.parent, work / expanded_name(name))  # q4x: what its pieces expand to
                for threads in threads_list:
                    if only_threads.get((name, tuning_name), threads) != threads:
                        continue
                    label = f"round {round_ + 1}: {name} / {tuning_name}, {threads} thread(s)"
                    print(f"{label}: browser ...", flush=True)
                    row = {
                        "round": round_ + 1,
                        "variant": name,
                        "dtype": variant.get("dtype"),
                        "tuning_name": tuning_name,
                        "threads": threads,
                        "load_average_at_start": os.getloadavg(),
                    }
                    try:
                        browser = measure_browser(url + "index.html", manifest["name"], name, threads, tunings[tuning_name], args.runs, long_contexts)
                    except Exception as err:  # e.g. a variant onnxruntime-web cannot run on WASM: record it, go on
                        message = str(err).split("\n")[0][:400]
                        print(f"    failed: {message}", flush=True)
                        results.append({**row, "browser_error": message})
                        continue
                    print(f"{label}: native ...", flush=True)
                    native = measure_native(graph, manifest["config"], tokenizer_ids, threads, args.runs, long_contexts)
                    browser_logits = np.array(browser.pop("_check_logits"), np.float32)
                    native_logits = native.pop("_check_logits")
                    browser["logits_max_abs_diff_vs_native"] = float(np.abs(browser_logits - native_logits).max())
                    results.append({**row, "browser": browser, "native": native})
                    if fp32_graph is not None and len(native_fp32.get(threads, [])) <= round_:
                        print(f"native fp32, {threads} thread(s) ...", flush=True)
                        tok_s = measure_native(fp32_graph, manifest["config"], tokenizer_ids, threads, 1)["decode_tok_s"]["warm"]
                        native_fp32.setdefault(threads, []).append(tok_s)
                    b = browser
                    print(
                        f"    warm {b['decode_tok_s']['warm']:.1f} tok/s (native {native['decode_tok_s']['warm']:.1f}), "
                        f"first generation {b['decode_tok_s']['first_generation']:.1f}, first token {b['first_token_after_cold_load_ms']:.0f} ms, "
                        f"prefill {', '.join(f'{n}: {ms:.0f}' for n, ms in b['prefill_ms'].items())} ms "
                        f"(native {', '.join(f'{n}: {ms:.0f}' for n, ms in native['prefill_ms'].items())}), "
                        f"peak {(b['peak_browser_private_bytes'] or 0) / 1e6:.0f} MB, long {b['decode_after_cached_tok_s']}",
                        flush=True,
                    )
    finally:
        server.shutdown()

    import onnxruntime

    report = {
        **report_header("bench/browser.py", argv, manifest),
        "setup": {
            "prompt_tokens": PROMPT_TOKENS,
            "new_tokens": NEW_TOKENS,
            "prefill_lengths": list(PREFILL_LENGTHS),
            "prefill_runs": args.runs,
            "repeat": args.repeat,
            "backend": "wasm",
            "decoding": "greedy",
            "long_contexts": [list(c) for c in long_contexts],
            "tunings": tunings,
            "definitions": {
                "decode_warm_tok_s": "median over rounds of the median of two later generations (after the first) in a cold page",
                "decode_first_generation_tok_s": "the first generation right after a cold load",
                "first_token_after_cold_load_s": "fresh browser profile: from the loadModel call (download from the local server, "
                "hashing, caching, session) to the first generated token of a 32-token prompt "
                "(without a tuning's readingPauseMs, the wait before pressing Generate)",
                "peak_browser_memory_mb": "sum of the browser processes' private resident memory, peak over the cold page "
                "(load, generations, prefill up to 512 tokens)",
                "peak_browser_memory_long_contexts_mb": "the same while decoding after 512 and 1,000 cached positions",
                "native": "onnxruntime in Python (CPU provider), the same graph file and thread count",
                "spread": "median, min and max over the rounds",
            },
        },
        "machine": machine(load_before),
        "versions": {
            "onnxruntime_python": onnxruntime.__version__,
            "python": platform.python_version(),
            "onnxruntime_web": json.loads((ROOT / "node_modules" / "onnxruntime-web" / "package.json").read_text())["version"],
            "chromium": next((r["browser"]["user_agent"] for r in results if "browser" in r), None),
        },
        "results": results,
        "native_fp32_decode_warm_tok_s": {str(t): v for t, v in native_fp32.items()},
        "summary": summary(results, native_fp32),
    }
    out = args.out or ROOT / "bench" / "results" / "browser.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for row in report["summary"]:
        print(json.dumps({k: v for k, v in row.items() if not isinstance(v, dict)}))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
