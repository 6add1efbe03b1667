"""MkDocs hook: the docs' performance figures, written from the committed benchmark JSON.

The pages never type a speed by hand. They hold markers that this hook replaces, at build
time, with numbers from ``bench/results/<file>.json`` (written by ``bench/browser.py``,
``bench/worker.py``, ``bench/export.py``, ``bench/inside.py``, ``bench/training.py`` and ``bench/peer.py``; a file named ``browser-<anything>`` has the
browser tables too):

* a table, on a line of its own::

      <!-- bench: browser decode -->      one row per variant, tuning and thread count
      <!-- bench: browser prefill -->     prefill of 128 and 512 tokens against native
      <!-- bench: browser context -->     decode after 32, 512 and 1,000 cached positions
      <!-- bench: browser cache -->       the same for every tuning, with the memory then
      <!-- bench: browser setup -->       one line: machine, versions, commit, repeats, date
      <!-- bench: worker python -->       the Python runtime's cold start and call round trip
      <!-- bench: export native -->       every exported variant's size and native decode speed
      <!-- bench: inside speed -->        the "Looking inside" recipes against their targets (bench/inside.py)
      <!-- bench: inside setup -->        one line: machine, versions, commit, repeats, date
      <!-- bench: training speed -->      <tx-train>'s steps per second, browser against CPython (bench/training.py)
      <!-- bench: training setup -->      one line: machine, commit, repeats, date
      <!-- bench: peer compare -->        the site's runtime beside Transformers.js (bench/peer.py)
      <!-- bench: peer setup -->          one line: machine, versions, commit, repeats, date

* one number inside a sentence, ``[[bench: FILE VARIANT/TUNING/THREADS FIELD]]`` for a
  summary row of ``browser.json`` (a field holding a spread gives its median), or
  ``[[bench: worker FIELD]]`` for ``worker.json``'s summary::

      q4x decodes [[bench: browser q4x/site/2 decode_warm_tok_s]] tokens per second

A marker naming a missing file, row or field stops the build (``PluginError``), so a page
cannot quote a number the benchmark did not produce.
"""

from __future__ import annotations

import json
import re
from functools import cache

from mkdocs.exceptions import PluginError

from sitebuild.paths import BENCH_RESULTS, ROOT

TABLE = re.compile(r"^<!--\s*bench:\s*(?P<file>[\w-]+)\s+(?P<table>[\w-]+)\s*-->$", re.M)
VALUE = re.compile(r"\[\[bench:\s*(?P<file>[\w-]+)\s+(?:(?P<row>[\w.-]+/[\w.-]+/\d+)\s+)?(?P<field>[\w.]+)\]\]")


@cache
def results(name: str) -> dict:
    """The parsed ``bench/results/<name>.json``."""
    path = BENCH_RESULTS / f"{name}.json"
    if not path.exists():
        raise PluginError(f"bench_hook: {path.relative_to(ROOT)} is missing; run bench/{name.split('-')[0]}.py")
    return json.loads(path.read_text())


def row_of(report: dict, key: str) -> dict:
    """The summary row ``VARIANT/TUNING/THREADS`` of a browser report (a row without a tuning,
    as ``peer.json``'s, ran the site's own: ``site``); ``DTYPE/peer/THREADS`` is a row of
    ``peer.json``'s ``peer_summary`` (Transformers.js on that file)."""
    variant, tuning, threads = key.split("/")
    if tuning == "peer":
        for row in report.get("peer_summary", []):
            if row["dtype"] == variant and row["threads"] == int(threads):
                return row
    for row in report["summary"]:
        if row["variant"] == variant and row.get("tuning", "site") == tuning and row["threads"] == int(threads):
            return row
    raise PluginError(f"bench_hook: no summary row {key} in the browser results")


def median(value):
    """A spread's median, or the value itself."""
    return value["median"] if isinstance(value, dict) else value


def number(value, digits: int = 1) -> str:
    """`value` for a sentence or a cell: thousands separated, `digits` decimals, "–" when None."""
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def ranged(spread: dict, digits: int = 1) -> str:
    """ "median (min–max)" of a spread, or the median alone when the runs agree to the digit."""
    low, mid, high = (number(spread[k], digits) for k in ("min", "median", "max"))
    return mid if low == high else f"{mid} ({low}–{high})"


def label(row: dict, report: dict) -> str:
    """How a row's variant and tuning are named in tables (the site's own settings in bold)."""
    if row["tuning"] == "site":
        return f"**{row['variant']}**"
    return f"{row['variant']}, {row['tuning']}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def decode_table(report: dict) -> str:
    rows = []
    for r in report["summary"]:
        if "error" in r:
            rows.append([label(r, report), str(r["threads"]), "–", f"failed: {r['error']}", "", "", "", "", "", "", ""])
            continue
        fp32 = r.get("native_fp32_tok_s")  # native fp32 on the same threads, same rounds
        rows.append(
            [
                label(r, report),
                str(r["threads"]),
                f"{number(r['download_mb'], 0)} MB",
                ranged(r["decode_warm_tok_s_spread"]),
                ranged(r["native_same_graph_tok_s_spread"]),
                number(r["warm_over_native_same_graph"], 2),
                number(fp32) if fp32 else "–",
                number(r["decode_warm_tok_s"] / fp32, 2) if fp32 else "–",
                number(r["first_generation_over_warm"], 2),
                ranged(r["first_token_after_cold_load_s"], 2),
                ranged(r["peak_browser_memory_mb"], 0),
            ]
        )
    return table(
        [
            "form, settings",
            "threads",
            "download",
            "browser tok/s (warm)",
            "native tok/s, same graph",
            "browser / native",
            "native fp32 tok/s",
            "browser / native fp32",
            "first generation / warm",
            "first token after cold load, s",
            "peak memory, MB",
        ],
        rows,
    )


def prefill_table(report: dict) -> str:
    rows = []
    for r in report["summary"]:
        if "error" in r or r["tuning"] != "site":
            continue
        cells = [label(r, report), str(r["threads"])]
        for n in ("128", "512"):
            if f"prefill_{n}_ms" not in r:
                cells += ["–", "–", "–"]
                continue
            cells += [ranged(r[f"prefill_{n}_ms"], 0), ranged(r[f"prefill_{n}_native_ms"], 0), number(r[f"prefill_{n}_over_native"], 2)]
        rows.append(cells)
    return table(["form", "threads", "128 tokens, ms", "native, ms", "browser / native", "512 tokens, ms", "native, ms", "browser / native"], rows)


def context_table(report: dict) -> str:
    rows = []
    for r in report["summary"]:
        if "error" in r or r["tuning"] != "site" or "decode_after_512_tok_s" not in r:
            continue
        rows.append(
            [
                label(r, report),
                str(r["threads"]),
                number(r["decode_warm_tok_s"]),
                ranged(r["decode_after_512_tok_s"]),
                ranged(r["decode_after_1000_tok_s"]),
                number(r["decode_after_1000_tok_s"]["median"] / r["decode_warm_tok_s"], 2),
                f"{number(median(r['decode_after_512_native_tok_s']))} / {number(median(r['decode_after_1000_native_tok_s']))}",
            ]
        )
    return table(["form", "threads", "tok/s after 32", "after 512", "after 1,000", "1,000 / 32", "native after 512 / 1,000"], rows)


def cache_table(report: dict) -> str:
    """Every tuning's decoding after long cached contexts and its memory then (the key-value
    cache's settings side by side: tuning.js heldCache, prefillChunk)."""
    rows = []
    for r in report["summary"]:
        if "error" in r or "decode_after_1000_tok_s" not in r:
            continue
        rows.append(
            [
                label(r, report),
                str(r["threads"]),
                ranged(r["decode_warm_tok_s_spread"]),
                ranged(r["decode_after_512_tok_s"]),
                ranged(r["decode_after_1000_tok_s"]),
                number(r["decode_after_1000_tok_s"]["median"] / r["decode_warm_tok_s"], 2),
                ranged(r["peak_browser_memory_long_contexts_mb"], 0),
                ranged(r["prefill_512_ms"], 0),
            ]
        )
    header = ["form, settings", "threads", "tok/s after 32", "after 512", "after 1,000", "1,000 / 32", "peak memory then, MB", "prefill of 512, ms"]
    return table(header, rows)


def measured_by(report: dict, what: str, runtimes: str) -> str:
    """The italic line under a browser benchmark's table: script, date, commit, `what` ran, machine load, `runtimes`."""
    m = report["machine"]
    load = f"{m['load_average_before'][0]:.1f} before, {m['load_average_after'][0]:.1f} after"
    return (
        f"*Measured by `{report['benchmark']}` on {report['date'][:10]}, commit `{(report.get('commit') or '?')[:12]}`: "
        f"{what}; {m['cores']} cores, load average {load}; {runtimes}; medians with (min–max) over the rounds.*"
    )


def setup_line(report: dict) -> str:
    v, s, c = report["versions"], report["setup"], report["model"]["config"]
    what = (
        f"{report['model']['name']} ({c['n_layer']} layers, width {c['n_embd']}), {s['repeat']} interleaved rounds, "
        f"prompt {s['prompt_tokens']} + {s['new_tokens']} greedy tokens"
    )
    return measured_by(report, what, f"onnxruntime-web {v['onnxruntime_web']}, onnxruntime {v['onnxruntime_python']} natively")


PYTHON_ROWS = [  # (worker.json summary field, what it is, decimals)
    ("cold_first_result_s", "cold start: page to first result (fresh profile), s", 2),
    ("cold_python_ms", "of which Pyodide starting (cold), ms", 0),
    ("cold_packages_ms", "of which NumPy and demos loading (cold), ms", 0),
    ("warm_first_result_s", "warm start: page to first result (files cached), s", 2),
    ("round_trip_ms", "later calls: round trip, ms", 1),
]
PYTHON_CASES = [  # (worker.json summary case, column heading)
    ("alone", "page without widgets"),
    ("beside_model", "page whose widget loads the model"),
]


def python_table(report: dict) -> str:
    """One row per PYTHON_ROWS field, one column per case: median (min–max)."""
    rows = []
    for field, what, digits in PYTHON_ROWS:
        cells = [ranged(report["summary"][case][field], digits) for case, _ in PYTHON_CASES]
        rows.append([what, *cells, str(report["summary"][PYTHON_CASES[0][0]][field]["n"])])
    return table(["", *(f"{heading}, median (min–max)" for _, heading in PYTHON_CASES), "rounds"], rows)


def native_table(report: dict) -> str:
    """Sizes and native CPU decode speed of every exported variant (bench/export.py)."""
    d = report["decode"]
    rows = []
    for name, size in report["sizes_mb"].items():
        runs = d["tok_per_s_runs"].get(name)
        if not runs:
            continue
        rows.append([name, number(size, 0), ranged({"median": d["tok_per_s_median"][name], "min": min(runs), "max": max(runs)}, 0)])
    return table(["variant", "MB", f"native tok/s, median (min–max) of {d['runs']} runs"], rows)


def export_line(report: dict) -> str:
    d, m = report["decode"], report["machine"]
    return (
        f"*Measured by `bench/export.py` on {report['when'][:10]}: {report['model']}, onnxruntime "
        f"{report['versions'].get('onnxruntime', '?')} on the CPU ({m['cpus']} cores, "
        f"{d['threads'] or 'onnxruntime’s default'} threads), prompt {d['prompt']} + {d['new_tokens']} greedy tokens.*"
    )


INSIDE_ROWS = [  # (inside.json summary field, what it is, scale to the shown unit, unit, decimals)
    ("forward_plain_ms", "one forward pass, the variant's own graph", 1, "ms", 0),
    ("forward_inspect_neutral_ms", "one forward pass, the inspect graph (probes neutral)", 1, "ms", 0),
    ("lens_after_forward_with_top1_ms", "logit lens after the forward pass, every cell's top token included", 1e-3, "s", 2),
    ("ablation_run_ms", "one ablation run", 1e-3, "s", 2),
    ("patched_run_ms", "one patched run", 1e-3, "s", 2),
    ("head_map_s", "the map of every head (one run per head)", 1, "s", 1),
    ("residual_patching_s", "residual patching, every layer × position", 1, "s", 1),
    ("head_map_max_tick_gap_ms", "longest the page went without a 50 ms tick during the head map", 1, "ms", 0),
    ("cancel_abort_to_error_ms", "Cancel to stopped", 1, "ms", 0),
    ("memory_plain_peak_mb", "peak browser memory, plain model page", 1, "MB", 0),
    ("memory_inspect_peak_mb", "peak browser memory, inspect model page", 1, "MB", 0),
]
INSIDE_TARGETS = {  # summary field -> its entry in the row's targets
    "lens_after_forward_with_top1_ms": "lens_after_forward_s",
    "ablation_run_ms": "ablation_run_s",
    "patched_run_ms": "patched_run_s",
    "head_map_s": "head_map_s",
    "residual_patching_s": "residual_patching_s",
}


def inside_table(report: dict) -> str:
    """One row per INSIDE_ROWS field, one column per variant: median (min–max), and the target."""
    variants = [r for r in report["summary"] if "error" not in r]
    rows = []
    for field, what, scale, unit, digits in INSIDE_ROWS:
        cells = []
        for r in variants:
            spread = {k: r[field][k] * scale for k in ("median", "min", "max")}
            cells.append(f"{ranged(spread, digits)} {unit}")
        target = INSIDE_TARGETS.get(field)
        goal = f"≤ {number(variants[0]['targets'][target]['target_s'], 1)} s" if target else ""
        rows.append([what, *cells, goal])
    heads = [f"{r['variant']}, {r['threads']} threads" for r in variants]
    return table(["", *heads, "target"], rows)


def inside_line(report: dict) -> str:
    s, c = report["setup"], report["model"]["config"]
    what = f"{report['model']['name']} ({c['n_layer']} layers × {c['n_head']} heads), WASM, a {s['prompt_tokens']}-token prompt, {s['repeat']} rounds"
    return measured_by(report, what, f"onnxruntime-web {report['versions'].get('onnxruntime_web', '?')}")


def training_table(report: dict) -> str:
    """One row per task: steps per second in the browser and in CPython, and the browser's wall time."""
    rows = []
    for task in report["setup"]["settings"]:
        browser, cpython = report["summary"][f"{task}/browser"], report["summary"][f"{task}/cpython"]
        slower = median(cpython["steps_per_second"]) / median(browser["steps_per_second"])
        rows.append([task, ranged(browser["steps_per_second"]), ranged(cpython["steps_per_second"]), f"{slower:.1f}×", ranged(browser["wall_s"])])
    steps = report["setup"]["steps"]
    return table(["task", "browser steps/s", "CPython steps/s", "browser slower by", f"browser wall time for {steps} steps, s"], rows)


def training_line(report: dict) -> str:
    s = report["setup"]
    what = f"`<tx-train>` with each task's default model, {s['steps']} steps, {s['repeat']} interleaved rounds"
    return measured_by(report, what, "the site's Pyodide worker against `demos.training` in CPython")


def peer_table(report: dict) -> str:
    """The site's variants and the peer's dtypes, per thread count: download, warm decode, decode
    after 1,000 cached positions (and its share of the warm speed), peak memory then, and the
    site over the peer's faster dtype (median of the per-round ratios)."""
    rows = []
    for site in report["summary"]:
        threads = site["threads"]
        peers = [p for p in report["peer_summary"] if p["threads"] == threads]
        entries = [(f"**this site, {site['variant']}**", site), *((f"Transformers.js, {p['dtype']}", p) for p in peers)]
        for name, r in entries:
            spread = r["spread"]
            long = r["decode_after_1000_tok_s"]
            rows.append(
                [
                    name,
                    str(threads),
                    f"{number(r['download_mb'], 0)} MB",
                    ranged(spread["decode_warm_tok_s"]),
                    ranged(spread["decode_after_1000_tok_s"]) if long else "–",
                    number(long / r["decode_warm_tok_s"], 2) if long else "–",
                    ranged(spread["peak_memory_long_mb"], 0) if long else "–",
                    ranged(spread["over_peer"], 2) if r is site else "",
                ]
            )
    return table(
        ["runtime, file", "threads", "download", "tok/s (warm)", "tok/s after 1,000 cached", "1,000 / warm", "peak memory then, MB", "site / faster peer"],
        rows,
    )


def peer_line(report: dict) -> str:
    v, s, c = report["versions"], report["setup"], report["model"]["config"]
    what = (
        f"{report['model']['name']} ({c['n_layer']} layers, width {c['n_embd']}), {s['repeat']} rounds in a rotated order, "
        f"prompt {s['prompt_tokens']} + {s['new_tokens']} greedy tokens, the same greedy tokens on both sides where the weights are the same"
    )
    runtimes = (
        f"this site on onnxruntime-web {v['onnxruntime_web_site']}, Transformers.js {v['transformers_js']} on onnxruntime-web {v['onnxruntime_web_peer']}"
    )
    return measured_by(report, what, runtimes)


TABLES = {
    ("peer", "compare"): peer_table,
    ("peer", "setup"): peer_line,
    ("training", "speed"): training_table,
    ("training", "setup"): training_line,
    ("inside", "speed"): inside_table,
    ("inside", "setup"): inside_line,
    ("export", "native"): native_table,
    ("export", "setup"): export_line,
    ("browser", "decode"): decode_table,
    ("browser", "prefill"): prefill_table,
    ("browser", "context"): context_table,
    ("browser", "cache"): cache_table,
    ("browser", "setup"): setup_line,
    ("worker", "python"): python_table,
}


def render_table(match: re.Match) -> str:
    key = (match["file"].split("-")[0], match["table"])  # browser-variants.json has browser's tables
    if key not in TABLES:
        raise PluginError(f"bench_hook: unknown table {' '.join(key)}; known: {', '.join(' '.join(k) for k in TABLES)}")
    return TABLES[key](results(match["file"]))


def render_value(match: re.Match) -> str:
    report = results(match["file"])
    source = row_of(report, match["row"]) if match["row"] else report["summary"]
    value = source
    for part in match["field"].split("."):
        if not isinstance(value, dict) or part not in value:
            raise PluginError(f"bench_hook: {match['file']} {match['row'] or ''} has no field {match['field']}")
        value = value[part]
    value = median(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    digits = 0 if isinstance(value, int) or abs(value) >= 100 else (2 if abs(value) < 10 else 1)
    return number(value, digits)


def render(markdown: str) -> str:
    """`markdown` with every bench marker replaced."""
    return VALUE.sub(render_value, TABLE.sub(render_table, markdown))


def on_page_markdown(markdown, page, config, files):
    if "bench:" not in markdown:
        return markdown
    return render(markdown)
