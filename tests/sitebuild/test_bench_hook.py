"""The docs' performance figures come from the committed benchmark JSON (sitebuild/bench_hook.py).

Checked against the JSON files themselves (read here independently of the hook): every marker
in the docs renders; each rendered table cell is the JSON's median; the pages that report the
runtime's speed type no speed by hand; and the "site" rows were measured with the settings the
site ships (site_src/runtime/tuning.js), so the docs describe the runtime readers get.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from sitebuild import bench_hook
from sitebuild.paths import BENCH_RESULTS, ROOT

DOCS = ROOT / "docs"
# Pages that report measured speeds of this site's runtime: every such number is a marker.
SPEED_PAGES = ["model/export-report.md", "model/runtime.md", "embed-in-your-course.md"]
SPEED = re.compile(r"\d[\d,.]*\s*(?:tok/s|tokens per second)")


def marked_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "bench:" in p.read_text())


def test_docs_use_the_markers_and_every_marker_renders():
    pages = marked_pages()
    assert {p.relative_to(DOCS).as_posix() for p in pages} >= set(SPEED_PAGES)
    for page in pages:
        out = bench_hook.render(page.read_text())
        assert "bench:" not in out, page


@pytest.mark.parametrize("name", SPEED_PAGES)
def test_speed_pages_type_no_speed_by_hand(name):
    text = (DOCS / name).read_text()
    without_markers = bench_hook.VALUE.sub("", bench_hook.TABLE.sub("", text))
    assert not SPEED.findall(without_markers), f"{name} types speeds by hand: {SPEED.findall(without_markers)}"


def summary_rows(name: str) -> list[dict]:
    return json.loads((BENCH_RESULTS / f"{name}.json").read_text())["summary"]


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCH_RESULTS.glob("browser*.json")))
def test_decode_table_cells_are_the_json_medians(name):
    rendered = bench_hook.decode_table(json.loads((BENCH_RESULTS / f"{name}.json").read_text()))
    body = rendered.splitlines()[2:]
    rows = [r for r in summary_rows(name) if "error" not in r]
    assert len(body) == len(summary_rows(name))
    for line, row in zip(body, rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == str(row["threads"])
        assert cells[3].split(" ")[0] == f"{row['decode_warm_tok_s']:,.1f}"
        assert cells[4].split(" ")[0] == f"{row['native_same_graph_tok_s']:,.1f}"
        assert cells[5] == f"{row['warm_over_native_same_graph']:.2f}"
        assert cells[6] == f"{row['native_fp32_tok_s']:,.1f}"
        assert cells[7] == f"{row['decode_warm_tok_s'] / row['native_fp32_tok_s']:.2f}"


def test_a_value_marker_gives_the_median_and_a_wrong_one_stops_the_build():
    row = next(r for r in summary_rows("browser") if "error" not in r)
    key = f"{row['variant']}/{row['tuning']}/{row['threads']}"
    assert bench_hook.render(f"[[bench: browser {key} decode_warm_tok_s]]") == f"{row['decode_warm_tok_s']:,.1f}"
    with pytest.raises(PluginError):
        bench_hook.render("[[bench: browser nothing/site/2 decode_warm_tok_s]]")
    with pytest.raises(PluginError):
        bench_hook.render(f"[[bench: browser {key} no_such_field]]")


def shipped_tuning() -> dict:
    """TUNING of site_src/runtime/tuning.js, read by node (the file is an ES module)."""
    url = (ROOT / "site_src" / "runtime" / "tuning.js").as_uri()
    script = f'import("{url}").then((m) => console.log(JSON.stringify(m.TUNING)))'
    return json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)


# Session options added to tuning.js after some benchmark files were measured, with the value
# that leaves the runtime those files measured unchanged (a no-op). A file that lacks such an
# option still measured the site's runtime while the site ships that value.
ADDED_OFF = {"warmupBeforeReady": 0}  # 0: the load does not wait for a warm-up


def assert_shipped(measured: dict, tuning: dict, name: str) -> None:
    """`measured` (a run's tuning) is the shipped `tuning`, up to options added since, left off."""
    later = {key: value for key, value in tuning.items() if key not in measured}
    assert later.items() <= ADDED_OFF.items(), f"{name} predates {sorted(later)}, which the site does not ship off: rerun it"
    assert measured | later == tuning, f"{name}: measured with {measured}, the site ships {tuning}"


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCH_RESULTS.glob("browser*.json")))
def test_site_rows_were_measured_with_the_shipped_settings(name):
    report = json.loads((BENCH_RESULTS / f"{name}.json").read_text())
    site = [r for r in report["results"] if r["tuning_name"] == "site" and "browser" in r]
    assert site, f"{name} has no measurement of the site's own settings"
    tuning = shipped_tuning()
    for r in site:
        assert_shipped(r["browser"]["tuning"], tuning, name)


def test_python_and_prefill_tables_are_the_json_medians():
    worker = json.loads((BENCH_RESULTS / "worker.json").read_text())
    body = bench_hook.python_table(worker).splitlines()[2:]
    assert len(body) == len(bench_hook.PYTHON_ROWS)
    for line, (field, _, digits) in zip(body, bench_hook.PYTHON_ROWS):
        cells = [c.strip() for c in line.strip("|").split("|")]
        for cell, (case, _) in zip(cells[1:], bench_hook.PYTHON_CASES):
            assert cell.split(" ")[0] == f"{worker['summary'][case][field]['median']:,.{digits}f}", (field, case)
    browser = json.loads((BENCH_RESULTS / "browser.json").read_text())
    site = [r for r in browser["summary"] if r.get("tuning") == "site" and "error" not in r]
    rows = bench_hook.prefill_table(browser).splitlines()[2:]
    assert len(rows) == len(site)
    for line, row in zip(rows, site):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2].split(" ")[0] == f"{row['prefill_128_ms']['median']:,.0f}"
        assert cells[4] == f"{row['prefill_128_over_native']:.2f}"


def test_inside_table_cells_are_the_json_medians():
    """Every cell of the "Looking inside" speed table is the median (and range) of inside.json."""
    report = json.loads((BENCH_RESULTS / "inside.json").read_text())
    rendered = bench_hook.inside_table(report).splitlines()
    assert len(rendered) == 2 + len(bench_hook.INSIDE_ROWS)
    for line, (field, _, scale, unit, digits) in zip(rendered[2:], bench_hook.INSIDE_ROWS, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        for cell, row in zip(cells[1:-1], [r for r in report["summary"] if "error" not in r], strict=True):
            assert cell.startswith(f"{row[field]['median'] * scale:,.{digits}f}") and cell.endswith(unit), (field, cell)
        target = bench_hook.INSIDE_TARGETS.get(field)
        assert cells[-1] == (f"≤ {report['summary'][0]['targets'][target]['target_s']:,.1f} s" if target else "")


def test_peer_table_cells_are_the_json_medians_and_the_ratio_is_the_rounds():
    """The peer comparison: each row's warm decode is the median over the per-run values of
    peer.json's results, and "site / faster peer" the median of each round's site over that
    round's faster peer dtype, recomputed here from the runs (not from the summary)."""
    report = json.loads((BENCH_RESULTS / "peer.json").read_text())
    assert report["versions"]["transformers_js"] and report["setup"]["repeat"] >= 3
    runs = [r for r in report["results"] if "error" not in r]
    warm = lambda r: r["measured"]["decode_tok_s"]["warm"]  # noqa: E731
    for site in report["summary"]:
        threads = site["threads"]
        mine = [r for r in runs if r["runner"] == "site" and r["variant"] == site["variant"] and r["threads"] == threads]
        assert statistics.median(warm(r) for r in mine) == pytest.approx(site["decode_warm_tok_s"], abs=0.01)
        ratios = []
        for r in mine:
            peers = [warm(p) for p in runs if p["runner"] == "peer" and p["threads"] == threads and p["round"] == r["round"]]
            ratios.append(warm(r) / max(peers))
        assert statistics.median(ratios) == pytest.approx(site["over_peer"], abs=0.01)
    for r in runs:
        if r["runner"] == "site":
            assert_shipped(r["measured"]["tuning"], shipped_tuning(), "peer.json")  # the site's own settings
    body = bench_hook.peer_table(report).splitlines()[2:]
    assert len(body) == len(report["summary"]) + len(report["peer_summary"])
    by_name = {}
    for line in body:
        cells = [c.strip() for c in line.strip("|").split("|")]
        by_name[(cells[0], cells[1])] = cells
    for site in report["summary"]:
        cells = by_name[(f"**this site, {site['variant']}**", str(site["threads"]))]
        assert cells[3].split(" ")[0] == f"{site['decode_warm_tok_s']:,.1f}"
        assert cells[7].split(" ")[0] == f"{site['over_peer']:.2f}"
    for peer in report["peer_summary"]:
        cells = by_name[(f"Transformers.js, {peer['dtype']}", str(peer["threads"]))]
        assert cells[3].split(" ")[0] == f"{peer['decode_warm_tok_s']:,.1f}"
        assert cells[6].split(" ")[0] == f"{peer['peak_memory_long_mb']:,.0f}"


def test_the_runtime_page_says_of_the_peer_what_peer_json_shows():
    """The prose around the peer table: the site's download is under half the peer's smaller
    file; after 1,000 cached positions the site keeps a larger share of its speed than either
    peer file (the gap widens) and peaks lowest in memory."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    report = json.loads((BENCH_RESULTS / "peer.json").read_text())
    site = next(r for r in report["summary"] if r["threads"] == 2)
    peers = [p for p in report["peer_summary"] if p["threads"] == 2]
    assert "from less than half its download" in text and site["download_mb"] < 0.5 * min(p["download_mb"] for p in peers)
    assert "After 1,000 cached positions the gap widens" in text
    kept = lambda r: r["decode_after_1000_tok_s"] / r["decode_warm_tok_s"]  # noqa: E731
    assert all(kept(site) > kept(p) for p in peers)
    assert all(site["decode_after_1000_tok_s"] > p["decode_after_1000_tok_s"] for p in peers)
    assert "the site holds the least memory there" in text
    assert site["peak_memory_long_mb"] < min(p["peak_memory_long_mb"] for p in peers)
    assert bench_hook.row_of(report, "q8/peer/2") is next(p for p in peers if p["dtype"] == "q8")


def test_the_runtime_page_says_of_prefill_and_the_first_token_what_peer_json_shows():
    """The list after the peer table: the prefill ratio is the median of each round's site
    prefill over that round's native fp32 prefill (recomputed from the runs), the first-token,
    first-generation and in-run figures are quoted from peer.json, and the in-run share is a
    share."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    report = json.loads((BENCH_RESULTS / "peer.json").read_text())
    for marker in (
        "[[bench: peer q8x/site/2 prefill_over_native_fp32]]",
        "[[bench: peer q8x/site/2 native_fp32_prefill_128_ms]]",
        "[[bench: peer q8x/site/2 first_token_512_ms]]",
        "[[bench: peer q8/peer/2 first_token_512_ms]]",
        "[[bench: peer q8x/site/2 first_over_warm]]",
        "[[bench: peer q8x/site/2 decode_in_session_run]]",
    ):
        assert marker in text, marker
    runs = [r for r in report["results"] if "error" not in r]
    for site in report["summary"]:
        ratios = []
        for r in runs:
            if r["runner"] == "site" and r["threads"] == site["threads"]:
                (native,) = (n for n in runs if n["runner"] == "native" and (n["round"], n["threads"]) == (r["round"], r["threads"]))
                ratios.append(r["measured"]["prefill_ms"]["128"] / native["measured"]["prefill_ms"]["128"])
        assert len(ratios) == report["setup"]["repeat"]
        assert statistics.median(ratios) == pytest.approx(site["prefill_over_native_fp32"], abs=0.01)
        assert 0 < site["decode_in_session_run"] < 1
    assert "Both compute the logits of every position" in text  # model.forward and measure_native fetch the logits of the whole pass


def test_the_runtime_page_says_of_the_session_settings_what_browser_variants_json_shows():
    """The paragraph "None of them decoded clearly faster": each other setting's spread of warm decoding
    overlaps the site's own, so the rounds do not support adopting any."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    report = json.loads((BENCH_RESULTS / "browser-variants.json").read_text())
    site = bench_hook.row_of(report, "q8x/site/2")["decode_warm_tok_s_spread"]
    assert "None of them decoded clearly faster than the site's own settings" in text
    assert "every other row's spread overlaps that range" in text
    for tuning in ("fix-batch", "opt-extended", "bundle-webgpu", "no-spin"):
        other = bench_hook.row_of(report, f"q8x/{tuning}/2")["decode_warm_tok_s_spread"]
        assert other["min"] <= site["max"] and other["max"] >= site["min"], tuning


def test_the_runtime_page_says_of_the_held_cache_what_browser_json_shows():
    """The section "Where the cache lives between steps": holding the cache decodes after 1,000 cached
    positions at least 1.5 times as fast as feeding present back (medians), and prompts in
    passes peak lower in memory than one pass in every round (the spreads do not overlap); the
    pass and growth sizes it names are the shipped ones (tuning.js, kv-cache.js)."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    report = json.loads((BENCH_RESULTS / "browser.json").read_text())
    site, present, whole = (bench_hook.row_of(report, f"q8x/{tuning}/2") for tuning in ("site", "present-cache", "one-pass-prefill"))
    assert "**Holding the cache** keeps" in text
    assert site["decode_after_1000_tok_s"]["median"] >= 1.5 * present["decode_after_1000_tok_s"]["median"]
    assert "**Passes of 256 tokens** bring the browser's peak memory" in text
    assert site["peak_browser_memory_long_contexts_mb"]["max"] < whole["peak_browser_memory_long_contexts_mb"]["min"]
    assert shipped_tuning()["prefillChunk"] == 256 and "runs in passes of at most 256 tokens" in text
    growth = re.search(r"export const KV_GROWTH = (\d+);", (ROOT / "site_src/runtime/kv-cache.js").read_text())
    assert growth and f"grow {growth[1]} positions at a time" in text


def test_the_runtime_page_says_of_the_decoding_methods_what_decoding_json_shows():
    """The prose of "Decoding methods, step by step": beam search's cost per step grows more
    slowly than its number of beams (every round's ratio to greedy below k, rising with k), and
    the mask of guided JSON costs a small part of a step once a state is known."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    report = json.loads((BENCH_RESULTS / "decoding.json").read_text())
    assert "the cost grows more slowly than the number of beams" in text
    assert report["repeat"] >= 3 and len({r["round"] for r in report["runs"]}) == report["repeat"]
    rows = {r["variant"]: r for r in report["summary"]}
    ratios = []
    for k in (2, 4, 8):
        mine = [r for r in report["runs"] if r["method"] == f"beam-{k}"]
        per_round = [r["step_ms"] / next(g["step_ms"] for g in report["runs"] if g["method"] == "greedy" and g["round"] == r["round"]) for r in mine]
        assert rows[f"beam-{k}"]["over_greedy"] == round(statistics.median(per_round), 2)
        assert max(per_round) < k, (k, per_round)
        ratios.append(rows[f"beam-{k}"]["over_greedy"])
    assert ratios == sorted(ratios), ratios
    guided = rows["guided"]
    assert guided["mask_ms"]["max"] < 0.1 * rows["greedy"]["step_ms"]["median"]
    assert all(r["reason"] == "complete" for r in report["runs"] if r["method"] == "guided")


@pytest.mark.parametrize("name", ["decoding-speculative-book", "decoding-speculative-small-random"])
def test_the_runtime_page_says_of_speculative_decoding_what_its_json_shows(name):
    """The prose under the speculative table: every greedy run wrote the model's own greedy
    tokens; the runs are interleaved rounds (each with its own baseline run of the model alone)
    on a batch-invariant variant; each summary ratio is the median of its rounds' ratios."""
    text = " ".join((DOCS / "model/runtime.md").read_text().split())
    assert "Every greedy run wrote the model's own greedy tokens" in text
    report = json.loads((BENCH_RESULTS / f"{name}.json").read_text())
    manifest_variant = report["variant"]
    assert manifest_variant == "q4x"
    assert report["repeat"] >= 3 and len({r["round"] for r in report["runs"]}) == report["repeat"]
    rows = {r["variant"]: r for r in report["summary"]}
    for method, row in rows.items():
        if not method.startswith("speculative-"):
            continue
        alone = "sampled" if method.endswith("-sampled") else "greedy"
        mine = [r for r in report["runs"] if r["method"] == method]
        assert len(mine) == report["repeat"]
        per_round = [r["token_ms"] / next(g["token_ms"] for g in report["runs"] if g["method"] == alone and g["round"] == r["round"]) for r in mine]
        assert row["over_greedy"] == round(statistics.median(per_round), 2)
        assert row["kept_pct"] == round(100 * sum(r["accepted"] for r in mine) / sum(r["proposed"] for r in mine))
        assert all(r["steps"] == report["new_tokens"] for r in mine)
        if alone == "greedy":
            assert row["same_as_greedy"] and all(r["same_as_greedy"] for r in mine)
    if name == "decoding-speculative-small-random":  # "less than twice", "about a third", "no faster"
        step = rows["greedy"]["step_ms"]["median"]
        assert rows["speculative-4"]["target_pass_ms"]["median"] < 2 * step
        assert 0.25 < rows["speculative-4"]["draft_pass_ms"]["median"] / step < 0.42
        assert rows["speculative-4-sampled"]["speedup"] < 1.05


def test_the_wait_for_a_warm_up_prose_is_the_json():
    """runtime.md: awaiting a warm-up before "ready" makes the first generation as fast as later
    ones but every token of it later, so the site does not wait (browser-first.json)."""
    report = json.loads((BENCH_RESULTS / "browser-first.json").read_text())
    rows = {r["tuning"]: r for r in report["summary"] if r["variant"] == "q8x" and r["threads"] == 2}
    new_tokens = report["setup"]["new_tokens"]

    def last_token_s(row):  # when the first generation's last token arrives, from the load call
        return row["first_token_after_cold_load_s"]["median"] + (new_tokens - 1) / row["decode_first_generation_tok_s"]

    site = rows["site"]
    for name, steps in (("ready-16", 16), ("ready-48", 48)):
        assert report["setup"]["tunings"][name] == {"warmupBeforeReady": steps}
        assert rows[name]["first_generation_over_warm"] >= 0.85 > site["first_generation_over_warm"]
        assert rows[name]["first_token_after_cold_load_s"]["min"] > site["first_token_after_cold_load_s"]["max"]
        assert last_token_s(rows[name]) > last_token_s(site)
    text = " ".join((DOCS / "model" / "runtime.md").read_text().split())
    assert f"even the {new_tokens}th token comes later than without the wait" in text
    assert shipped_tuning()["warmupBeforeReady"] == 0 and "The site does not wait" in text
