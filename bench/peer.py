"""Benchmark the site's GPT-2 runtime against its peer, Transformers.js, in the same headless Chromium.

The peer is Transformers.js (npm ``@huggingface/transformers``, pinned in
``bench/peer/package.json``; ``make bench-peer-deps`` installs it) on the same checkpoint, on
WASM, with the same thread count, served with its own onnxruntime-web by this bench's local
server: no request leaves 127.0.0.1 (the run fails if one does). Every round (``--repeat``,
default 3) runs, per thread count, each of these once in a fresh browser profile, in an order
rotated from round to round:

* ``site``: a site variant (``--variants``, default the WASM default of the manifest: q8x),
  measured through the site's own runtime exactly as ``bench/browser.py`` does (its
  ``measure_browser``, the site's own session settings, no prefill timings);
* ``peer q8`` and ``peer fp32`` (``--peer-dtypes``): ``AutoModelForCausalLM`` with that dtype on
  device ``wasm``, ``model.generate`` with greedy decoding;
* ``native fp32``: the fp32 reference graph in onnxruntime-Python (CPU, the same thread count),
  for the prefill the site's is compared with (``browser.measure_native``).

Each browser run gives: the download, the first generation after the load and two later ones
(64 new tokens after a 32-token prompt; warm = the median of the later two), then, in the same
page, a generation after a 512-token and after a 1,000-token prompt (``browser.LONG_CONTEXTS``;
models with a shorter context skip them): the time from the generate call to the first token
of the 512-token prompt, the decode after 1,000 cached positions and the peak memory of the
browser's processes meanwhile (``browser.MemorySampler``), and the greedy token ids. The site's
run also times a prefill of 128 tokens (the median of ``PREFILL_RUNS``), as does the native run.
Tokens per second are counted alike on both sides: (new tokens - 1) over the time from the
first new token to the last.

The peer reads a Hugging Face-style folder built in the work directory from this project's own
export: ``config.json`` and ``generation_config.json`` from the manifest's config, the tokenizer
saved by ``transformers`` from the model's ``vocab.json``/``merges.txt``, ``onnx/model.onnx`` =
the fp32 reference graph (``.build/reference.onnx``) and ``onnx/model_quantized.onnx`` = its q8,
made by the exporter's own ``quantize_dynamic`` conversion (``model_export.quantize``, the site's
q8 variant). One adapter step: the reference graph also returns ``attentions.*``,
``hidden_states.*`` and ``new.*``, and Transformers.js fetches every output of a session, so both files are
written without them (``model_export.export.without_outputs``); the inputs (``input_ids``,
``attention_mask``, ``position_ids``, ``past_key_values.N.key/value``) and the other outputs
(``logits``, ``present.N.key/value``) already have the names Transformers.js uses for gpt2.

Checks, written into ``checks``: the URL of every request both browsers made (any outside
127.0.0.1, data: and blob: fails the run); the prompt ids of the site, the peer and Python's
tokenizer; each peer run's greedy tokens against onnxruntime in Python on the same file
(``model_export.runtime.greedy``); and the site's greedy tokens against the peer's (the same
weights for site fp32 / peer fp32 and site q8 / peer q8; q8x's weights come from q4x's 4-bit
blocks, so its tokens may part from both).

The ``summary`` has one row per site variant and thread count: ``download_mb``,
``decode_warm_tok_s``, ``peer_best_wasm_tok_s`` (per round the faster peer dtype), ``over_peer``
(the median of the per-round ratios site / best peer), ``decode_after_1000_tok_s``,
``peak_memory_long_mb``, ``first_token_512_ms``, ``first_over_warm`` (the first generation's
speed over the warm one, per run), ``prefill_128_ms``, ``native_fp32_prefill_128_ms`` and
``prefill_over_native_fp32`` (the median of the per-round ratios) and ``decode_in_session_run``
(the share of a warm decode step spent inside onnxruntime's ``session.run``; the rest is the
worker's own JavaScript, ``browser.in_session_run``), medians over the rounds, and
their ``spread`` (median, min, max); ``peer_summary`` the same per peer dtype, without the
comparisons and the prefill. The JSON, with the commit, versions and machine load,
replaces ``bench/results/peer.json`` (or ``--out``).

Usage::

    make bench-peer-deps
    .venv/bin/python bench/peer.py --model build/models/small-random [--site site]
        [--variants q8x] [--peer-dtypes q8,fp32] [--threads 2] [--repeat 3] [--out FILE]
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
from pathlib import Path

from browser import LONG_CONTEXTS, NEW_TOKENS, PROMPT_TOKENS, TEXT, MemorySampler, graph_variant, measure_browser, measure_native, serve_dir
from common import ROOT, machine, open_page, profile_context, report_header, spread
from sitebuild.serve import serve_in_thread

PEER = ROOT / "bench" / "peer"
PEER_MODULES = PEER / "node_modules"
BUNDLE = PEER_MODULES / "@huggingface" / "transformers" / "dist" / "transformers.min.js"  # self-contained: its onnxruntime-web inside
ORT_DIST = PEER_MODULES / "onnxruntime-web" / "dist"  # the WASM files that bundle loads
ORT_FILES = {"mjs": "ort-wasm-simd-threaded.asyncify.mjs", "wasm": "ort-wasm-simd-threaded.asyncify.wasm"}
# Transformers.js's file name for each dtype it is asked for (its DEFAULT_DTYPE_SUFFIX_MAPPING).
PEER_FILES = {"q8": "model_quantized.onnx", "fp32": "model.onnx"}
# Site variant -> peer dtype with the same weights (q8x's come from q4x's 4-bit blocks: none).
SAME_WEIGHTS = {"fp32": "fp32", "q8": "q8"}
LONG_CONTEXT = max(LONG_CONTEXTS)  # (1000 cached positions, 24 new tokens)
LONG_KEY = f"decode_after_{LONG_CONTEXT[0]}_tok_s"
FIRST_TOKEN_PROMPT = min(LONG_CONTEXTS)[0]  # 512: the prompt whose time to the first token is reported
FIRST_TOKEN_KEY = f"first_token_{FIRST_TOKEN_PROMPT}_ms"
PREFILL = 128  # prompt tokens of the timed prefill, site against native fp32
PREFILL_RUNS = 5  # prefills timed per run (median), after one untimed
PREFILL_KEY = f"prefill_{PREFILL}_ms"
NATIVE_KEY = f"native_fp32_prefill_{PREFILL}_ms"

# Runs in the page: load Transformers.js from the bench's server (nothing remote), the model and
# its tokenizer, then the first generation and two later ones. The model stays in the page
# (globalThis.peer) for PEER_LONG_JS.
PEER_JS = """async ([bundle, ortBase, modelsBase, model, dtype, threads, text, promptTokens, newTokens]) => {
  const { env, AutoModelForCausalLM, AutoTokenizer, Tensor } = await import(bundle);
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = modelsBase;
  const wasm = env.backends.onnx.wasm;
  wasm.wasmPaths = { mjs: ortBase + __MJS__, wasm: ortBase + __WASM__ };
  wasm.numThreads = threads;
  const t0 = performance.now();
  const tokenizer = await AutoTokenizer.from_pretrained(model);
  const lm = await AutoModelForCausalLM.from_pretrained(model, { dtype, device: 'wasm' });
  const out = { loadMs: performance.now() - t0, threads: wasm.numThreads, crossOriginIsolated, ortVersion: env.backends.onnx.versions?.web };
  const base = tokenizer.encode(text);
  const idsOf = (n) => Array.from({ length: n }, (_, i) => base[i % base.length]);
  // Greedy, every token to the end (no stop at <|endoftext|>, as the site's stopAtEos: false);
  // the streamer sees the prompt first, then each new token as it is chosen.
  const generation = async (prompt, count) => {
    const ids = idsOf(prompt);
    const times = [], tokens = [];
    let seenPrompt = false;
    const streamer = {
      put(value) {
        if (seenPrompt) {
          times.push(performance.now());
          tokens.push(Number(value[0][0]));
        }
        seenPrompt = true;
      },
      end() {},
    };
    const input_ids = new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]);
    const attention_mask = new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]);
    const started = performance.now();
    await lm.generate({ input_ids, attention_mask, max_new_tokens: count, do_sample: false, eos_token_id: null, streamer });
    const n = tokens.length;
    return { tokensPerSecond: n > 1 ? (n - 1) / ((times[n - 1] - times[0]) / 1000) : null, prefillMs: times[0] - started, newTokens: n, ids: tokens };
  };
  globalThis.peer = { generation };
  out.promptIds = idsOf(promptTokens);
  out.decode = [];
  for (let r = 0; r < 3; r++) out.decode.push(await generation(promptTokens, newTokens));
  out.userAgent = navigator.userAgent;
  return out;
}""".replace("__MJS__", json.dumps(ORT_FILES["mjs"])).replace("__WASM__", json.dumps(ORT_FILES["wasm"]))

# Runs in the same page afterwards: decode after a long cached context, and the time from the
# generate call to the first token of that prompt.
PEER_LONG_JS = """async ([past, count]) => {
  const run = await globalThis.peer.generation(past, count);
  return { tokensPerSecond: run.tokensPerSecond, firstTokenMs: run.prefillMs };
}"""


class LeftLocalhost(RuntimeError):
    """A browser requested something from another host than the bench's server."""


def local_only(requests: list[str], origin: str) -> None:
    """Raise LeftLocalhost when any of `requests` (URLs) went elsewhere than `origin`, data: or blob:."""
    away = [url for url in requests if not url.startswith((origin, "data:", "blob:"))]
    if away:
        raise LeftLocalhost(f"{len(away)} request(s) left {origin}: {away[:5]}")


def npm_version(modules: Path, package: str) -> str:
    """The version of an installed npm package."""
    return json.loads((modules / package / "package.json").read_text())["version"]


def build_peer_model(reference: Path, model_dir: Path, config: dict, out: Path) -> Path:
    """The Hugging Face-style folder Transformers.js loads, made from this project's export.

    Args:
        reference: The fp32 reference graph (a single file).
        model_dir: The model-export build directory (its ``vocab.json`` and ``merges.txt``).
        config: The manifest's ``config``.
        out: The folder to write (reused while `reference` is unchanged).

    Returns:
        `out`, with ``config.json``, ``generation_config.json``, the tokenizer files and
        ``onnx/`` holding one graph per entry of ``PEER_FILES``.
    """
    import onnx
    from transformers import GenerationConfig, GPT2Config, GPT2TokenizerFast

    from model_export.export import without_outputs
    from model_export.quantize import quantize_variant

    stamp = out / ".source"
    key = f"{reference.resolve()} {reference.stat().st_size} {reference.stat().st_mtime_ns}"
    if stamp.exists() and stamp.read_text() == key:
        return out
    shutil.rmtree(out, ignore_errors=True)
    (out / "onnx").mkdir(parents=True)
    print(f"building the peer's model folder {out} from {reference} ...", flush=True)
    eos = config["eos_token_id"]
    GPT2Config(**config, bos_token_id=eos, architectures=["GPT2LMHeadModel"]).save_pretrained(out)  # the manifest's keys are GPT2Config's
    GenerationConfig(bos_token_id=eos, eos_token_id=eos).save_pretrained(out)
    GPT2TokenizerFast.from_pretrained(model_dir).save_pretrained(out)  # tokenizer.json, tokenizer_config.json
    fp32 = without_outputs(onnx.load(str(reference)))  # the adapter: logits and present.* only
    onnx.save(fp32, str(out / "onnx" / PEER_FILES["fp32"]))
    q8, _ = quantize_variant(fp32, "q8")
    onnx.save(q8, str(out / "onnx" / PEER_FILES["q8"]))
    stamp.write_text(key)
    return out


def native_greedy(graph: Path, config: dict, prompt: list[int]) -> list[int]:
    """Greedy tokens of onnxruntime in Python (CPU) on `graph`: what the peer must reproduce."""
    from model_export.gpt2 import GPT2Config
    from model_export.runtime import OrtGPT2, greedy

    return greedy(OrtGPT2(graph, GPT2Config(**config)), [prompt], NEW_TOKENS)[0].tolist()


def link_peer(root: Path, folder: Path, name: str) -> None:
    """Serve the peer beside the site in `root`: peer/ (the bundle), peer/ort/ (the WASM files
    the bundle loads) and peer-models/<name>/ (the model folder)."""
    (root / "peer" / "ort").mkdir(parents=True)
    (root / "peer" / BUNDLE.name).symlink_to(BUNDLE.resolve())
    for file in ORT_FILES.values():
        (root / "peer" / "ort" / file).symlink_to((ORT_DIST / file).resolve())
    (root / "peer-models").mkdir()
    (root / "peer-models" / name).symlink_to(folder.resolve())


def measure_peer(url: str, name: str, folder: Path, dtype: str, threads: int, long_contexts, requests: list[str]) -> dict:
    """Transformers.js with `dtype` on WASM in a fresh browser profile.

    Args:
        url: The bench server's base URL.
        name: The model's name under ``peer-models/``.
        folder: The model folder served there (the download is the size of the files fetched).
        dtype: A key of ``PEER_FILES``.
        threads: WASM threads.
        long_contexts: (cached positions, new tokens) pairs to decode after, in the same page.
        requests: Every request's URL is appended here.

    Returns:
        The run's figures, named as in ``measure_browser``'s result where they mean the same.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
        context = profile_context(p, profile)
        context.on("request", lambda r: requests.append(r.url))
        try:
            page, errors = open_page(context, url + "index.html")
            args = [url + f"peer/{BUNDLE.name}", url + "peer/ort/", "/peer-models/", name, dtype, threads, TEXT, PROMPT_TOKENS, NEW_TOKENS]
            with MemorySampler() as memory:
                run = page.evaluate(PEER_JS, args)
            long_decode = {}
            with MemorySampler() as long_memory:
                for past, count in long_contexts:
                    long_decode[str(past)] = page.evaluate(PEER_LONG_JS, [past, count])
        finally:
            context.close()
    fetched = {u.split(f"/peer-models/{name}/", 1)[1] for u in requests if f"/peer-models/{name}/" in u}
    fetched = {path for path in fetched if (folder / path).is_file()}
    return {
        "user_agent": run["userAgent"],
        "threads": run["threads"],
        "cross_origin_isolated": run["crossOriginIsolated"],
        "onnxruntime_web": run["ortVersion"],
        "bytes": sum((folder / path).stat().st_size for path in fetched),
        "load_ms": run["loadMs"],
        "files": sorted(fetched),
        "first_generation_first_token_ms": run["decode"][0]["prefillMs"],
        "decode_tok_s": {
            "first_generation": run["decode"][0]["tokensPerSecond"],
            "warm": statistics.median(d["tokensPerSecond"] for d in run["decode"][1:]),
            "warm_runs": [d["tokensPerSecond"] for d in run["decode"][1:]],
        },
        "decode_after_cached_tok_s": {past: run["tokensPerSecond"] for past, run in long_decode.items()},
        "first_token_ms_by_prompt": {past: run["firstTokenMs"] for past, run in long_decode.items()},
        "peak_browser_private_bytes": memory.result(),
        "peak_browser_private_bytes_long_contexts": long_memory.result() if long_contexts else None,
        "prompt_ids": run["promptIds"],
        "greedy_ids": run["decode"][-1]["ids"],
        "page_errors": errors,
    }


# The summary's figures, read from one run of either side (measure_browser's or measure_peer's result).
FIGURES = {
    "decode_warm_tok_s": lambda m: m["decode_tok_s"]["warm"],
    LONG_KEY: lambda m: m["decode_after_cached_tok_s"].get(str(LONG_CONTEXT[0])),
    "peak_memory_long_mb": lambda m: m["peak_browser_private_bytes_long_contexts"] / 1e6 if str(LONG_CONTEXT[0]) in m["decode_after_cached_tok_s"] else None,
    FIRST_TOKEN_KEY: lambda m: m["first_token_ms_by_prompt"].get(str(FIRST_TOKEN_PROMPT)),
    "first_over_warm": lambda m: m["decode_tok_s"]["first_generation"] / m["decode_tok_s"]["warm"],
}


def rounds_table(results: list[dict]) -> list[dict]:
    """Per round and thread count: every browser run's warm decode, the faster peer dtype, and each
    site variant's ratio to it; native fp32's prefill and each site variant's prefill over it."""
    table: dict[tuple[int, int], dict] = {}
    for r in results:
        if "measured" not in r:
            continue
        entry = table.setdefault(
            (r["round"], r["threads"]), {"round": r["round"], "threads": r["threads"], "site": {}, "peer": {}, NATIVE_KEY: None, "site_prefill_ms": {}}
        )
        prefill = r["measured"]["prefill_ms"].get(str(PREFILL)) if r["runner"] != "peer" else None
        if r["runner"] == "native":
            entry[NATIVE_KEY] = prefill
            continue
        entry[r["runner"]][r["variant"]] = r["measured"]["decode_tok_s"]["warm"]
        if prefill is not None:
            entry["site_prefill_ms"][r["variant"]] = prefill
    for entry in table.values():
        entry["peer_best"] = max(entry["peer"], key=entry["peer"].get) if entry["peer"] else None
        best = entry["peer"].get(entry["peer_best"])
        entry["over_peer"] = {variant: round(tok_s / best, 3) for variant, tok_s in entry["site"].items()} if best else {}
        native = entry[NATIVE_KEY]
        entry["prefill_over_native_fp32"] = {variant: round(ms / native, 3) for variant, ms in entry["site_prefill_ms"].items()} if native else {}
    return list(table.values())


def summary(results: list[dict], rounds: list[dict]) -> tuple[list[dict], list[dict]]:
    """One row per site variant and thread count, and one per peer dtype and thread count: medians
    over the rounds, with their spread (median, min, max, n) under ``spread``."""
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for r in results:
        if "measured" in r and r["runner"] != "native":
            groups.setdefault((r["runner"], r["variant"], r["threads"]), []).append(r["measured"])
    site, peer = [], []
    for (runner, variant, threads), runs in groups.items():
        spreads = {key: spread(figure(m) for m in runs) for key, figure in FIGURES.items()}
        row = {"variant" if runner == "site" else "dtype": variant, "threads": threads, "download_mb": round(runs[0]["bytes"] / 1e6, 1)}
        row["decode_warm_tok_s"] = spreads["decode_warm_tok_s"]["median"]
        if runner == "site":
            mine = [e for e in rounds if e["threads"] == threads and variant in e["over_peer"]]
            spreads["peer_best_wasm_tok_s"] = spread(e["peer"][e["peer_best"]] for e in mine)
            spreads["over_peer"] = spread(e["over_peer"][variant] for e in mine)
            row["peer_best_wasm_tok_s"] = spreads["peer_best_wasm_tok_s"]["median"]
            row["over_peer"] = spreads["over_peer"]["median"]
        row[LONG_KEY] = spreads[LONG_KEY]["median"]
        row["peak_memory_long_mb"] = spreads["peak_memory_long_mb"]["median"]
        row[FIRST_TOKEN_KEY] = spreads[FIRST_TOKEN_KEY]["median"]
        row["first_over_warm"] = spreads["first_over_warm"]["median"]
        if runner == "site":
            spreads[PREFILL_KEY] = spread(m["prefill_ms"][str(PREFILL)] for m in runs)
            spreads[NATIVE_KEY] = spread(e[NATIVE_KEY] for e in rounds if e["threads"] == threads and e[NATIVE_KEY] is not None)
            spreads["prefill_over_native_fp32"] = spread(e["prefill_over_native_fp32"][variant] for e in mine if variant in e["prefill_over_native_fp32"])
            spreads["decode_in_session_run"] = spread((m["decode_in_session_run"] or {}).get("median") for m in runs)
            for key in (PREFILL_KEY, NATIVE_KEY, "prefill_over_native_fp32", "decode_in_session_run"):
                row[key] = spreads[key]["median"]
        row["spread"] = spreads
        (site if runner == "site" else peer).append(row)
    return site, peer


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two token lists differ (None when they are equal)."""
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def token_checks(results: list[dict], prompt: list[int], native: dict[str, list[int]]) -> dict:
    """The greedy tokens compared: each run's prompt with Python's tokenizer, each peer run with
    onnxruntime in Python on the same file, and each site run with the peer runs of its round."""
    done = [r for r in results if "measured" in r and r["runner"] != "native"]
    peers = [r for r in done if r["runner"] == "peer"]
    sites = [r for r in done if r["runner"] == "site"]
    peer_vs_native = []
    for r in peers:
        d = first_difference(r["measured"]["greedy_ids"], native[r["variant"]])
        peer_vs_native.append({"round": r["round"], "threads": r["threads"], "dtype": r["variant"], "match": d is None, "first_difference": d})
    site_vs_peer = []
    for s in sites:
        for p in (p for p in peers if (p["round"], p["threads"]) == (s["round"], s["threads"])):
            d = first_difference(s["measured"]["greedy_ids"], p["measured"]["greedy_ids"])
            site_vs_peer.append(
                {
                    "round": s["round"],
                    "threads": s["threads"],
                    "site": s["variant"],
                    "peer": p["variant"],
                    "same_weights": SAME_WEIGHTS.get(s["variant"]) == p["variant"],
                    "match": d is None,
                    "first_difference": d,
                }
            )
    return {
        "prompt_ids": prompt,
        "prompt_ids_agree": all(r["measured"]["prompt_ids"] == prompt for r in done),
        "native_greedy_ids": native,
        "peer_vs_native": peer_vs_native,
        "site_vs_peer": site_vs_peer,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a model-export build directory (with manifest.json and .build/reference.onnx)")
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="a built site providing the runtime files")
    ap.add_argument("--variants", default=None, help="comma-separated site variants (default: the manifest's WASM default, q8x); fp32 = the reference graph")
    ap.add_argument("--peer-dtypes", default=",".join(PEER_FILES), help="comma-separated Transformers.js dtypes")
    ap.add_argument("--threads", default="2", help="comma-separated WASM thread counts")
    ap.add_argument("--repeat", type=int, default=3, help="rounds: every site variant and peer dtype once per round, in a rotated order")
    ap.add_argument("--fp32-graph", type=Path, default=None, help="the fp32 graph (default: the build's .build/reference.onnx)")
    ap.add_argument("--no-long", action="store_true", help=f"skip decoding after {LONG_CONTEXT[0]} cached positions")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory, reused (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default: bench/results/peer.json, replaced)")
    args = ap.parse_args(argv)
    if not BUNDLE.exists():
        ap.error(f"{BUNDLE.relative_to(ROOT)} is missing: run `make bench-peer-deps`")

    manifest = json.loads((args.model / "manifest.json").read_text())
    config = manifest["config"]
    reference = args.fp32_graph or args.model / ".build" / "reference.onnx"
    if not reference.exists():
        ap.error(f"{reference} is missing: the peer's model is made from the fp32 reference graph (model-export all writes it)")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-peer-"))
    work.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",") if args.variants else [manifest["default_variants"]["wasm"]]
    dtypes = args.peer_dtypes.split(",")
    if unknown := [d for d in dtypes if d not in PEER_FILES]:
        ap.error(f"unknown peer dtypes {unknown}; choose from {list(PEER_FILES)}")
    local = set()
    if "fp32" in variants and not any(v["name"] == "fp32" for v in manifest["variants"]):
        local.add("fp32")
        manifest["variants"].append(graph_variant("fp32", reference, work))
    if unknown := [v for v in variants if v not in {v["name"] for v in manifest["variants"]}]:
        ap.error(f"unknown site variants {unknown}")
    threads_list = [int(t) for t in args.threads.split(",")]
    long_contexts = () if args.no_long else tuple(c for c in LONG_CONTEXTS if sum(c) <= config["n_positions"])

    from transformers import GPT2TokenizerFast

    folder = build_peer_model(reference, args.model, config, work / "peer-models" / manifest["name"])
    base = GPT2TokenizerFast.from_pretrained(args.model).encode(TEXT)
    prompt = [base[i % len(base)] for i in range(PROMPT_TOKENS)]
    native = {dtype: native_greedy(folder / "onnx" / PEER_FILES[dtype], config, prompt) for dtype in dtypes}

    root = serve_dir(args.site, args.model, manifest, work, local)
    link_peer(root, folder, manifest["name"])
    server, url = serve_in_thread(root)
    load_before = os.getloadavg()
    runs = [("site", v) for v in variants] + [("peer", d) for d in dtypes] + [("native", "fp32")]
    results = []
    try:
        for round_ in range(args.repeat):
            for threads in threads_list:
                for runner, variant in runs[round_ % len(runs) :] + runs[: round_ % len(runs)]:
                    label = f"round {round_ + 1}: {runner} {variant}, {threads} thread(s)"
                    print(f"{label} ...", flush=True)
                    row = {"round": round_ + 1, "threads": threads, "runner": runner, "variant": variant, "load_average_at_start": os.getloadavg()}
                    requests: list[str] = []
                    try:
                        if runner == "site":
                            row["measured"] = measure_browser(
                                url + "index.html",
                                manifest["name"],
                                variant,
                                threads,
                                {},
                                PREFILL_RUNS,
                                long_contexts,
                                prefill_lengths=(PREFILL,),
                                requests=requests,
                            )
                            del row["measured"]["_check_logits"]  # bench/browser.py's comparison with native logits
                        elif runner == "native":
                            row["measured"] = measure_native(reference, config, base, threads, PREFILL_RUNS, lengths=(PREFILL,))
                            del row["measured"]["_check_logits"]
                        else:
                            row["measured"] = measure_peer(url, manifest["name"], folder, variant, threads, long_contexts, requests)
                    except Exception as err:  # e.g. a page error: record it, go on
                        row["error"] = str(err).split("\n")[0][:400]
                        print(f"    failed: {row['error']}", flush=True)
                    local_only(requests, url)  # after a failure too: a request elsewhere ends the bench
                    row["requests"] = len(requests)
                    results.append(row)
                    if runner == "native" and "measured" in row:
                        print(f"    prefill of {PREFILL}: {row['measured']['prefill_ms'][str(PREFILL)]:.0f} ms", flush=True)
                    elif "measured" in row:
                        m = row["measured"]
                        long_mb = FIGURES["peak_memory_long_mb"](m)
                        print(
                            f"    warm {m['decode_tok_s']['warm']:.1f} tok/s (first generation {m['decode_tok_s']['first_generation']:.1f}), "
                            f"after {LONG_CONTEXT[0]} cached {FIGURES[LONG_KEY](m)}, peak memory then {long_mb and round(long_mb)} MB, "
                            f"download {m['bytes'] / 1e6:.1f} MB, {len(requests)} requests, "
                            f"first token of {FIRST_TOKEN_PROMPT} {FIGURES[FIRST_TOKEN_KEY](m)} ms"
                            + (f", prefill of {PREFILL} {m['prefill_ms'][str(PREFILL)]:.0f} ms" if runner == "site" else ""),
                            flush=True,
                        )
    finally:
        server.shutdown()

    import onnxruntime
    import transformers

    rounds = rounds_table(results)
    site_rows, peer_rows = summary(results, rounds)
    checks = token_checks(results, prompt, native)
    report = {
        **report_header("bench/peer.py", argv, manifest),
        "setup": {
            "backend": "wasm",
            "decoding": "greedy",
            "prompt_tokens": PROMPT_TOKENS,
            "new_tokens": NEW_TOKENS,
            "long_contexts": [list(c) for c in long_contexts],
            "repeat": args.repeat,
            "site_variants": variants,
            "site_tuning": "the site's own (site_src/runtime/tuning.js)",
            "peer_dtypes": {d: f"onnx/{PEER_FILES[d]}" for d in dtypes},
            "peer_model": "built from the fp32 reference graph without its attentions.*, hidden_states.* and new.* outputs; "
            "q8: model_export.quantize's int8-dynamic conversion (onnxruntime.quantization.quantize_dynamic), the site's q8 variant",
            "definitions": {
                "decode_warm_tok_s": "median over rounds of the median of two later generations (after a first one) in a cold page; "
                "(new tokens - 1) / (last new token - first new token)",
                "peer_best_wasm_tok_s": "median over rounds of the faster peer dtype's decode_warm_tok_s in that round",
                "over_peer": "median over rounds of decode_warm_tok_s / peer_best_wasm_tok_s of the same round",
                LONG_KEY: f"{LONG_CONTEXT[1]} new tokens after a {LONG_CONTEXT[0]}-token prompt, in the same page afterwards",
                FIRST_TOKEN_KEY: f"from the generate call to the first new token of a {FIRST_TOKEN_PROMPT}-token prompt, in the same page after the warm runs",
                "first_over_warm": "per run, the first generation's decode (right after the load) over decode_warm_tok_s; median over rounds",
                PREFILL_KEY: f"site: one forward pass over {PREFILL} tokens (model.forward, the median of {PREFILL_RUNS} after one untimed)",
                NATIVE_KEY: f"the fp32 reference graph in onnxruntime-Python, CPU provider, the same threads, the median of {PREFILL_RUNS} "
                "after one untimed, once per round in the rotation",
                "prefill_over_native_fp32": f"median over rounds of {PREFILL_KEY} / {NATIVE_KEY} of the same round",
                "decode_in_session_run": "site: the share of the warm decode steps' time inside onnxruntime's session.run "
                "(the worker's decodeRunMs over the decode window); median over rounds",
                "peak_memory_long_mb": "sum of the browser processes' private resident memory (browser.MemorySampler), peak during that long run",
                "download_mb": "site: the variant's files (info.bytes.total); peer: the files of its model folder it fetched",
                "spread": "median, min and max over the rounds",
            },
        },
        "machine": machine(load_before),
        "versions": {
            "transformers_js": npm_version(PEER_MODULES, "@huggingface/transformers"),
            "onnxruntime_web_peer": npm_version(PEER_MODULES, "onnxruntime-web"),
            "onnxruntime_web_peer_in_page": next((r["measured"]["onnxruntime_web"] for r in results if r["runner"] == "peer" and "measured" in r), None),
            "onnxruntime_web_site": json.loads((args.site / "assets" / "vendor" / "versions.json").read_text())["onnxruntime-web"],
            "chromium": next((r["measured"]["user_agent"] for r in results if "measured" in r and r["runner"] != "native"), None),
            "python": platform.python_version(),
            "onnxruntime_python": onnxruntime.__version__,
            "transformers_python": transformers.__version__,
        },
        "results": results,
        "rounds": rounds,
        "checks": checks,
        "summary": site_rows,
        "peer_summary": peer_rows,
    }
    out = args.out or ROOT / "bench" / "results" / "peer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for row in site_rows + peer_rows:
        print(json.dumps({k: v for k, v in row.items() if k != "spread"}))
    for check in checks["site_vs_peer"] + checks["peer_vs_native"]:
        print(f"tokens: {json.dumps(check)}")
    print(f"prompt ids agree: {checks['prompt_ids_agree']}")
    print(f"wrote {out}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
