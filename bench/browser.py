"""Benchmark the site's GPT-2 runtime in headless Chromium against onnxruntime in Python.

For every variant (e.g. q4x, q4, q8, fp32) and WASM thread count it measures, in the browser,
through the same JS API the widgets use (``site_src/runtime/model.js``):

* download bytes;
* cold load: download + sha256 + Cache Storage (+ expanding q4x's 4-bit weights) + session,
  in a fresh browser profile;
* warm load: the same after a reload (files from Cache Storage, no model request);
* peak memory of the browser's processes during the cold load and the measurements (the sum
  of their private resident memory from /proc/PID/statm, sampled every 100 ms; Linux only);
* prefill: one forward pass over 8, 128 and 512 tokens (median of ``--runs``);
* decode: tokens per second over 64 greedy new tokens after a 32-token prompt, for the
  first generation after loading (V8 still tiering up the WASM) and a later one;
* a correctness check: the largest difference between the browser's and onnxruntime's
  logits after 8 tokens;

and the same prefill and decode with onnxruntime in Python (CPU) on the same graph file (for
q4x: the graph its pieces expand to) and thread count, plus native fp32 decoding on that
thread count. A ``summary`` table puts the variants side by side per thread count. The JSON
lands in ``bench/results/`` (git-ignored) and is printed.

Usage::

    .venv/bin/python bench/browser.py --model build/models/small-random [--site site]
        [--variants q8,q4,fp32] [--threads 1,2] [--fp32-graph PATH] [--runs 3] [--out FILE]

The site (``--site``, default ``site/``) provides the runtime files; the model directory
is served beside it, so any model built by ``model-export`` works without rebuilding the
site. ``--fp32-graph`` adds an fp32 variant from a single-file graph (default: the
build's ``.build/reference.onnx`` when the manifest has no fp32 variant), split into
external-data pieces of at most 40 MB like the exporter's own variants.
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
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "site_src"))
sys.path.insert(0, str(ROOT / "tests"))

from chromium import find_chromium  # noqa: E402
from model_export.compact import onnx_graph  # noqa: E402
from model_export.package import file_entry, file_role, variant_files  # noqa: E402
from serve import serve_in_thread  # noqa: E402

PREFILL_LENGTHS = (8, 128, 512)
PROMPT_TOKENS = 32
NEW_TOKENS = 64
PIECE_BYTES = 40_000_000
BROWSER_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
TEXT = ("The Transformer reads a sequence of tokens, lets every position attend to the ones before it, "
        "and predicts the next token from the last position. ")

# Runs in the page: load (cold or warm), then prefill and decode timings.
PAGE_JS = """async ([model, variant, threads, lengths, runs, promptTokens, newTokens, measure]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const t0 = performance.now();
  const m = await loadModel({ model, backend: 'wasm', variant, threads });
  const out = { loadMs: performance.now() - t0, info: { ...m.info } };
  if (!measure) return out;
  const base = m.tokenizer.encode(__TEXT__);
  const idsOf = (n) => Array.from({ length: n }, (_, i) => base[i % base.length]);
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
  out.decode = [];
  for (let r = 0; r < 2; r++) {
    const run = m.generate(idsOf(promptTokens), { maxNewTokens: newTokens, temperature: 0, stopAtEos: false });
    for await (const token of run) { /* drain */ }
    const res = await run.result;
    out.decode.push({ tokensPerSecond: res.tokensPerSecond, prefillMs: res.prefillMs, newTokens: res.newTokens });
  }
  return out;
}""".replace("__TEXT__", json.dumps(TEXT))


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


def fp32_variant(graph: Path, model_dir: Path, work: Path) -> dict:
    """An "fp32" manifest entry for `graph`, split into pieces under work/fp32 (reused when unchanged)."""
    target = work / "fp32"
    stamp = target / ".source"
    key = f"{graph.resolve()} {graph.stat().st_size} {graph.stat().st_mtime_ns}"
    if not stamp.exists() or stamp.read_text() != key:
        shutil.rmtree(target, ignore_errors=True)
        print(f"splitting {graph} into pieces of at most {PIECE_BYTES / 1e6:.0f} MB ...", flush=True)
        split_graph(graph, target)
        stamp.write_text(key)
    files = [file_entry(path, work, file_role(path)) for path in variant_files(target)]
    return {"name": "fp32", "dtype": "float32", "backends": ["wasm", "webgpu"], "files": files,
            "bytes": sum(f["bytes"] for f in files)}


def serve_dir(site: Path, model_dir: Path, manifest: dict, work: Path, local: set[str]) -> Path:
    """A directory to serve: the site's runtime files and the model (links, no copies).
    Files of the variants named in `local` live in `work`, the others in `model_dir`."""
    root = work / "root"
    shutil.rmtree(root, ignore_errors=True)
    (root / "models" / manifest["name"]).mkdir(parents=True)
    (root / "assets").symlink_to((site / "assets").resolve())
    (root / "index.html").write_text('<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
                                     "<title>runtime benchmark</title></head><body></body></html>")
    served = root / "models" / manifest["name"]
    for variant in manifest["variants"]:
        for f in variant["files"]:
            src = (work if variant["name"] in local else model_dir) / f["path"]
            dst = served / f["path"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                dst.symlink_to(src.resolve())
    for f in manifest["tokenizer"].values():
        (served / f["path"]).symlink_to((model_dir / f["path"]).resolve())
    (served / "manifest.json").write_text(json.dumps(manifest))
    (root / "models" / "index.json").write_text(json.dumps({"default": manifest["name"], "models": {manifest["name"]: {"config": manifest["config"]}}}))
    return root


def measure_browser(url: str, name: str, variant: str, threads: int, runs: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
        # A persistent profile keeps Cache Storage on disk (an incognito context may lack the quota).
        context = p.chromium.launch_persistent_context(profile, executable_path=find_chromium(), headless=True, args=BROWSER_ARGS)
        try:
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_load_state()
            args = [name, variant, threads, list(PREFILL_LENGTHS), runs, PROMPT_TOKENS, NEW_TOKENS]
            with MemorySampler() as memory:
                cold = page.evaluate(PAGE_JS, [*args, True])
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
        "cold_load_ms": {"total": cold["loadMs"], "download": info["timings"]["downloadMs"],
                         "expand": info["timings"].get("expandMs", 0), "session": info["timings"]["sessionMs"]},
        "warm_load_ms": {"total": warm["loadMs"], "from_cache": warm["info"]["timings"]["downloadMs"],
                         "expand": warm["info"]["timings"].get("expandMs", 0), "session": warm["info"]["timings"]["sessionMs"]},
        "peak_browser_private_bytes": memory.result(),
        "warm_load_model_requests": len(model_requests),
        "warm_load_bytes_from_network": warm["info"]["bytes"]["fromNetwork"],
        "prefill_ms": {str(k): v for k, v in cold["prefillMs"].items()},
        "decode_tok_s": {"first_generation": cold["decode"][0]["tokensPerSecond"], "warm": cold["decode"][1]["tokensPerSecond"]},
        "page_errors": errors,
        "_check_logits": cold["check"],
    }


def measure_native(graph: Path, config: dict, tokenizer_ids: list[int], threads: int, runs: int) -> dict:
    """The same prefill and decode with onnxruntime (CPU provider) in this process."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    head_dim = config["n_embd"] // config["n_head"]
    present = [f"present.{i}.{kv}" for i in range(config["n_layer"]) for kv in ("key", "value")]

    def feeds(ids, past_length, past):
        f = {"input_ids": np.array([ids], np.int64),
             "attention_mask": np.ones((1, past_length + len(ids)), np.int64),
             "position_ids": np.arange(past_length, past_length + len(ids), dtype=np.int64)[None]}
        for k, name in enumerate(present):
            f[name.replace("present.", "past_key_values.")] = past[k] if past else np.zeros((1, config["n_head"], 0, head_dim), np.float32)
        return f

    ids_of = lambda n: [tokenizer_ids[i % len(tokenizer_ids)] for i in range(n)]  # noqa: E731
    check = session.run(["logits"], feeds(ids_of(8), 0, None))[0][0, -1]
    prefill = {}
    for n in PREFILL_LENGTHS:
        session.run(["logits"], feeds(ids_of(n), 0, None))
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            session.run(["logits"], feeds(ids_of(n), 0, None))
            times.append((time.perf_counter() - t) * 1000)
        prefill[str(n)] = statistics.median(times)

    def decode():
        ids = ids_of(PROMPT_TOKENS)
        out = session.run(["logits", *present], feeds(ids, 0, None))
        token = int(np.argmax(out[0][0, -1]))
        first = time.perf_counter()
        for n in range(1, NEW_TOKENS):
            out = session.run(["logits", *present], feeds([token], len(ids) + n - 1, out[1:]))
            token = int(np.argmax(out[0][0, -1]))
        return (NEW_TOKENS - 1) / (time.perf_counter() - first)

    first = decode()
    return {"prefill_ms": prefill, "decode_tok_s": {"first_generation": first, "warm": decode()}, "_check_logits": check}


def summary(results: list[dict], native_fp32: dict[int, list[float]]) -> list[dict]:
    """One row per variant and thread count, medians over the repetitions: the figures to
    compare side by side."""
    med = statistics.median
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in results:
        groups.setdefault((r["variant"], r["threads"]), []).append(r)
    browser_fp32 = {threads: med(r["browser"]["decode_tok_s"]["warm"] for r in runs if "browser" in r)
                    for (name, threads), runs in groups.items() if name == "fp32" and any("browser" in r for r in runs)}
    rows = []
    for (name, threads), runs in groups.items():
        ok = [r for r in runs if "browser" in r]
        if not ok:
            rows.append({"variant": name, "threads": threads, "error": runs[0].get("browser_error")})
            continue
        warm = med(r["browser"]["decode_tok_s"]["warm"] for r in ok)
        native = med(native_fp32[threads]) if native_fp32.get(threads) else None
        memory = [r["browser"]["peak_browser_private_bytes"] for r in ok if r["browser"].get("peak_browser_private_bytes")]
        rows.append({
            "variant": name, "threads": threads, "runs": len(ok), "download_mb": round(ok[0]["browser"]["bytes"] / 1e6, 1),
            "cold_load_s": round(med(r["browser"]["cold_load_ms"]["total"] for r in ok) / 1000, 2),
            "warm_load_s": round(med(r["browser"]["warm_load_ms"]["total"] for r in ok) / 1000, 2),
            "decode_cold_tok_s": round(med(r["browser"]["decode_tok_s"]["first_generation"] for r in ok), 1),
            "decode_warm_tok_s": round(warm, 1),
            "decode_warm_tok_s_runs": [round(r["browser"]["decode_tok_s"]["warm"], 1) for r in ok],
            "native_same_graph_tok_s": round(med(r["native"]["decode_tok_s"]["warm"] for r in ok), 1),
            "native_fp32_tok_s": round(native, 1) if native else None,
            "warm_over_native_fp32": round(warm / native, 2) if native else None,
            "warm_over_browser_fp32": round(warm / browser_fp32[threads], 2) if threads in browser_fp32 else None,
            "peak_browser_memory_mb": round(max(memory) / 1e6) if memory else None,
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a model-export build directory (with manifest.json)")
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="a built site providing the runtime files")
    ap.add_argument("--variants", default=None, help="comma-separated variant names (default: every variant that runs on WASM)")
    ap.add_argument("--threads", default="1,2", help="comma-separated WASM thread counts")
    ap.add_argument("--fp32-graph", type=Path, default=None, help="single-file fp32 graph to add as variant fp32")
    ap.add_argument("--runs", type=int, default=3, help="repetitions per prefill length (median)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure every variant this many times, in a rotated order each round (the summary takes medians)")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: bench/results/browser-<model>-<time>.json)")
    args = ap.parse_args(argv)

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
        manifest["variants"] = [v for v in manifest["variants"] if v["name"] != "fp32"] + [fp32_variant(fp32_graph, args.model, work)]
    wanted = args.variants.split(",") if args.variants else [v["name"] for v in manifest["variants"] if "wasm" in v["backends"]]
    threads_list = [int(t) for t in args.threads.split(",")]

    root = serve_dir(args.site, args.model, manifest, work, local)
    server, url = serve_in_thread(root)
    from transformers import GPT2TokenizerFast

    tokenizer_ids = GPT2TokenizerFast.from_pretrained(args.model).encode(TEXT)
    load_before = os.getloadavg()
    results = []
    native_fp32: dict[int, list[float]] = {}  # threads -> native fp32 warm decode tok/s, one per round
    try:
        for round_ in range(args.repeat):
            for name in wanted[round_ % len(wanted):] + wanted[: round_ % len(wanted)]:
                variant = next(v for v in manifest["variants"] if v["name"] == name)
                graph_rel = next(f["path"] for f in variant["files"] if f.get("role", "graph") == "graph")
                graph = (root / "models" / manifest["name"] / graph_rel).resolve()
                graph = onnx_graph(graph.parent, work / f"{name}-expanded.onnx")  # q4x: what its pieces expand to
                for threads in threads_list:
                    print(f"{name}, {threads} thread(s): browser ...", flush=True)
                    try:
                        browser = measure_browser(url + "index.html", manifest["name"], name, threads, args.runs)
                    except Exception as err:  # e.g. a variant onnxruntime-web cannot run on WASM: record it, go on
                        message = str(err).split("\n")[0][:400]
                        print(f"    failed: {message}", flush=True)
                        results.append({"variant": name, "dtype": variant.get("dtype"), "threads": threads, "browser_error": message})
                        continue
                    print(f"{name}, {threads} thread(s): native ...", flush=True)
                    native = measure_native(graph, manifest["config"], tokenizer_ids, threads, args.runs)
                    browser_logits = np.array(browser.pop("_check_logits"), np.float32)
                    native_logits = native.pop("_check_logits")
                    browser["logits_max_abs_diff_vs_native"] = float(np.abs(browser_logits - native_logits).max())
                    ratio = {
                        "decode_warm": browser["decode_tok_s"]["warm"] / native["decode_tok_s"]["warm"],
                        "prefill": {n: native["prefill_ms"][n] / browser["prefill_ms"][n] for n in browser["prefill_ms"]},
                    }
                    results.append({"variant": name, "dtype": variant.get("dtype"), "threads": threads, "browser": browser,
                                    "native": native, "browser_over_native": ratio})
                    if fp32_graph is not None and len(native_fp32.get(threads, [])) <= round_:
                        print(f"native fp32, {threads} thread(s) ...", flush=True)
                        tok_s = measure_native(fp32_graph, manifest["config"], tokenizer_ids, threads, 1)["decode_tok_s"]["warm"]
                        native_fp32.setdefault(threads, []).append(tok_s)
                    print(json.dumps(results[-1], indent=1), flush=True)
    finally:
        server.shutdown()

    import onnxruntime

    report = {
        "benchmark": "bench/browser.py",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": {"name": manifest["name"], "source": manifest.get("source"), "config": manifest["config"]},
        "setup": {
            "prompt_tokens": PROMPT_TOKENS, "new_tokens": NEW_TOKENS, "prefill_lengths": list(PREFILL_LENGTHS),
            "prefill_runs": args.runs, "repeat": args.repeat, "backend": "wasm", "decoding": "greedy",
            "ratio_definition": "browser / native tokens per second (decode); native / browser time (prefill)",
        },
        "machine": {"platform": platform.platform(), "cores": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
        "versions": {"onnxruntime_python": onnxruntime.__version__,
                     "onnxruntime_web": json.loads((ROOT / "node_modules" / "onnxruntime-web" / "package.json").read_text())["version"]},
        "results": results,
        "native_fp32_decode_warm_tok_s": {str(t): v for t, v in native_fp32.items()},
        "summary": summary(results, native_fp32),
    }
    out = args.out or ROOT / "bench" / "results" / f"browser-{manifest['name']}-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for row in report["summary"]:
        print(json.dumps(row))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
