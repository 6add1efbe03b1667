"""The tables the textbook takes from the source documents match both the pages and the seeds.

`docs/data/seed_tables.json` holds every such table, transcribed cell by cell. Each test
below ties it to one side:

* the page: the Markdown table with the same header must have exactly these rows;
* the seed: a "rows" table must appear in the seed file row by row (the seed keeps these
  tables as tab-separated or Markdown lines), a "phrases" table was assembled from prose,
  so each row names the seed phrases its numbers come from; and every number in the data
  must occur in the seed file as a number of its own.

So neither the page nor the data can drift from the source. The last section recomputes
the figures the pages derive from those tables (ratios, parameter estimates, sums).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from source_tables import NUMBER, ROOT, assert_page_shows, assert_phrase_rows, assert_well_formed, flat, load_tables, occurs_as_number, page_text, table_lines

SEED_DIRS = [Path(os.environ["TX_SEEDS"])] if os.environ.get("TX_SEEDS") else []
SEED_DIRS += [ROOT / "shared" / "seeds", ROOT.parent / "shared" / "seeds"]
SEEDS = next((d for d in SEED_DIRS if d.is_dir()), SEED_DIRS[-1])  # TX_SEEDS=/path overrides
DATA, TABLES = load_tables("seed_tables.json")

needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason=f"seed documents not found at {SEEDS}")


# --- helpers -----------------------------------------------------------------------------


def seed_text(name: str) -> str:
    return (SEEDS / name).read_text(encoding="utf-8")


def seed_columns(table: dict) -> list[int]:
    skipped = set(table.get("not_in_seed", {}).get("columns", []))
    return [i for i in range(len(table["header"])) if i not in skipped]


# --- the data file -----------------------------------------------------------------------


def test_data_file_is_well_formed():
    assert_well_formed(DATA, TABLES, "seed_phrases")
    for table in DATA["tables"]:
        for column in table.get("not_in_seed", {}).get("columns", []):
            assert 0 <= column < len(table["header"]) and table["not_in_seed"]["source"], table["id"]


# --- (a) data against the pages -----------------------------------------------------------


@pytest.mark.parametrize("table_id", sorted(TABLES))
def test_page_shows_the_table_cell_by_cell(table_id):
    assert_page_shows(TABLES[table_id])


# --- (b) data against the seeds -----------------------------------------------------------


@needs_seeds
@pytest.mark.parametrize("table_id", sorted(t for t in TABLES if TABLES[t]["check"] == "rows"))
def test_rows_appear_in_the_seed(table_id):
    table = TABLES[table_id]
    lines = table_lines(seed_text(table["seed"]))
    keep = seed_columns(table)
    expected = [table["header"]] if table.get("header_in_seed") else []
    expected += table["rows"]
    for row in expected:
        cells = [row[i] for i in keep]
        assert cells in lines, f"{table['seed']} has no line with the cells {cells}"


@needs_seeds
@pytest.mark.parametrize("table_id", sorted(t for t in TABLES if TABLES[t]["check"] == "phrases"))
def test_phrase_rows_come_from_the_seed_prose(table_id):
    table = TABLES[table_id]
    assert_phrase_rows(table, "seed_phrases", flat(seed_text(table["seed"])), table["seed"])


@needs_seeds
@pytest.mark.parametrize("table_id", sorted(TABLES))
def test_every_number_occurs_in_the_seed(table_id):
    table = TABLES[table_id]
    text = seed_text(table["seed"])
    for row in table["rows"]:
        for i in seed_columns(table):
            for number in NUMBER.findall(row[i]):
                assert occurs_as_number(number, text), f"{table_id}: {number} (in {row[i]!r}) not in {table['seed']}"


# --- internal consistency of the transcribed tables ---------------------------------------


def _count(cell: str) -> float:
    """'125M' -> 125e6, '1.4T' -> 1.4e12, '60%' -> 60, '0.44' -> 0.44."""
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12, "%": 1}.get(cell[-1], None)
    return float(cell[:-1]) * scale if scale else float(cell)


def test_syllabus_is_seven_two_hour_sessions():
    rows = TABLES["syllabus"]["rows"]
    assert [r[0] for r in rows] == [str(i) for i in range(1, 8)]
    assert sum(float(r[3].removesuffix(" h")) for r in rows) == 14


def test_head_widths_multiply_out_except_gpt3_13b():
    gpt3 = TABLES["gpt3_family"]["rows"]
    mismatched = {r[0]: int(r[4]) * int(r[5]) for r in gpt3 if int(r[4]) * int(r[5]) != int(r[3])}
    assert mismatched == {"XL": 3072, "13B": 5120}  # published widths 2048 and 5140; the page says so
    page = page_text("families/gpt3.md")
    assert all(s in page for s in ("24 \\times 128 = 3{,}072", "2,048", "40 \\times 128 = 5{,}120", "5,140"))
    for row in TABLES["llama_sizes"]["rows"]:
        assert int(row[2]) == 128 * int(row[3])
    for row in TABLES["bert_sizes"]["rows"]:
        assert int(row[2]) == 64 * int(row[3])


def test_mixture_weights_sum_as_the_pages_say():
    gpt3 = sum(_count(r[2]) for r in TABLES["gpt3_data_mixture"]["rows"])
    llama = sum(_count(r[1]) for r in TABLES["llama_data_mixture"]["rows"])
    assert gpt3 == pytest.approx(101) and "101 %" in page_text("families/gpt3-data.md")
    assert llama == pytest.approx(100) and "exactly 100 %" in page_text("families/llama.md")


# --- figures the pages derive -------------------------------------------------------------


def _row(table_id: str, name: str) -> list[str]:
    return next(r for r in TABLES[table_id]["rows"] if r[0] == name)


def _derived() -> list[tuple[str, str, float, float, float]]:
    """(page, text shown on the page, value it states, value recomputed here, tolerance)."""
    gpt3_175, gpt3_xl = _row("gpt3_family", "175B"), _row("gpt3_family", "XL")
    layers, width = int(gpt3_175[2]), int(gpt3_175[3])
    xl_layers, xl_width = int(gpt3_xl[2]), int(gpt3_xl[3])
    llama_7, llama_65 = _row("llama_sizes", "7B"), _row("llama_sizes", "65B")
    mix = {r[0]: r for r in TABLES["gpt3_data_mixture"]["rows"]}

    def epochs(source: str) -> float:
        return _count(mix[source][2]) / 100 * 300e9 / _count(mix[source][1])

    vocab, d, ctx, heads, n_layers = 50257, 768, 1024, 12, 12  # GPT-2 small
    weights = [math.exp(s) for s in (0.0, math.log(2), math.log(5))]
    alpha = [w / sum(weights) for w in weights]
    code_share = sum(_count(_row("llama_data_mixture", s)[1]) for s in ("GitHub", "arXiv", "StackExchange"))
    return [
        ("foundations/one-hot-and-embeddings.md", "38.6 million", 38.6, vocab * d / 1e6, 0.05),
        ("attention/cost.md", "$n = 4{,}608$", 4608, 6 * d, 0),
        ("attention/cost.md", "about 18 %", 18, 100 * ctx / (ctx + 6 * d), 0.5),
        ("attention/cost.md", "about four times", 4, 100_000 / (6 * 4096), 0.5),
        ("attention/cost.md", "12.6$ million", 12.6, heads * ctx**2 / 1e6, 0.05),
        ("attention/cost.md", "about 50 MB", 50, heads * ctx**2 * 4 / 1e6, 0.5),
        ("attention/cost.md", "about 604 MB", 604, n_layers * heads * ctx**2 * 4 / 1e6, 0.5),
        ("attention/cost.md", "$n = 6d = 6{,}144$", 6144, 6 * 1024, 0),
        ("attention/one-head.md", r"\alpha_{3,3} = \tfrac{5}{8} = 0.625", 0.625, alpha[2], 1e-12),
        ("attention/one-head.md", "= 0.5 + 0.5 + 0 = 1", 1.0, sum(a * v for a, v in zip(alpha, (4, 2, 0))), 1e-12),
        ("attention/one-head.md", r"(1,\; 1.5)", 1.5, alpha[1] * 1 + alpha[2] * 2, 1e-12),
        ("families/bert-pretraining.md", "12 % become `[MASK]`", 12, 15 * 0.80, 1e-9),
        ("families/bert-pretraining.md", "1.5 % become a random token", 1.5, 15 * 0.10, 1e-9),
        ("families/gpt3.md", r"\approx 174$ billion", 174, 12 * layers * width**2 / 1e9, 0.5),
        ("families/gpt3.md", "about 0.6 billion", 0.6, vocab * width / 1e9, 0.05),
        ("families/gpt3.md", r"300 / 175 \approx 1.7", 1.7, 300e9 / _count(gpt3_175[1]), 0.05),
        ("families/gpt3.md", r"\approx 1.21$ billion", 1.21, 12 * xl_layers * xl_width**2 / 1e9, 0.005),
        ("families/gpt3.md", r"\approx 0.10$ billion", 0.10, vocab * xl_width / 1e9, 0.005),
        ("families/gpt3-data.md", "2,400 tokens per parameter", 2400, 300e9 / _count(_row("gpt3_family", "Small")[1]), 0),
        ("families/gpt3-data.md", r"0.60 \times 300 / 410 \approx 0.44", 0.44, epochs("Filtered Common Crawl"), 0.005),
        ("families/gpt3-data.md", r"0.08 \times 300 / 55 \approx 0.44", 0.44, epochs("Books2"), 0.005),
        ("families/gpt3-data.md", "gives about 3.5", 3.5, epochs("WebText2"), 0.05),
        ("families/gpt3-data.md", "Wikipedia about 3.0", 3.0, epochs("Wikipedia"), 0.05),
        ("families/gpt3-data.md", "about 9 billion tokens", 9, _count(mix["Wikipedia"][2]) / 100 * 300, 1e-9),
        ("families/llama.md", "| GPT-3 175B | about 1.7 |", 1.7, 300e9 / _count(gpt3_175[1]), 0.05),
        ("families/llama.md", "| LLaMA 65B | about 21 |", 21, _count(llama_65[7]) / _count(llama_65[1]), 0.5),
        ("families/llama.md", "| LLaMA 7B | about 150 |", 150, _count(llama_7[7]) / _count(llama_7[1]), 1),
        ("families/llama.md", "make up 9 %", 9, code_share, 1e-9),
        ("families/moe-training.md", "allows 120 combinations", 120, math.comb(16, 2), 0),
        ("families/moe-training.md", "about 4.4 billion", 4.4, math.comb(64, 8) / 1e9, 0.05),
    ]


@pytest.mark.parametrize("page, shown, value, computed, tolerance", _derived(), ids=[f"{page}:{shown}" for page, shown, *_ in _derived()])
def test_derived_figure(page, shown, value, computed, tolerance):
    assert shown in " ".join(page_text(page).split()), f"{page} no longer says {shown!r}"
    assert abs(computed - value) <= tolerance, f"{page}: {shown!r} but the data give {computed:.6g}"


# --- parameter counts the pages quote, checked against the size calculator -----------------


def test_parameter_figures_match_the_size_calculator():
    size = pytest.importorskip("demos.size")

    def count(preset: str) -> dict:
        return size.count_parameters(**size.preset(preset))

    gpt2, gpt3, xl = count("gpt2-small"), count("gpt3-175b"), count("gpt3-xl")
    bert_base, bert_large = count("bert-base"), count("bert-large")
    pages = {p: " ".join(page_text(p).split()) for p in ("foundations/one-hot-and-embeddings.md", "start/keywords.md", "families/gpt3.md", "families/bert.md")}

    # GPT-2 small: the (50257, 768) token table, the 124M total, the FFN's share of a block
    assert "38.6 million parameters, a sizeable share of the model's 124 million" in pages["foundations/one-hot-and-embeddings.md"]
    assert round(gpt2["token_embedding"] / 1e6, 1) == 38.6 and round(gpt2["total"] / 1e6) == 124
    assert "about 39 million numbers" in pages["start/keywords.md"] and round(gpt2["token_embedding"] / 1e6) == 39
    assert "about two thirds of a block's parameters" in pages["start/keywords.md"]
    assert gpt2["ffn_per_layer"] / gpt2["per_layer"] == pytest.approx(2 / 3, abs=0.01)

    # GPT-3: the blocks of 175B and XL, their token tables, and the totals of the table
    assert r"\approx 174$ billion" in pages["families/gpt3.md"] and round(gpt3["layers"] / 1e9) == 174
    assert "about 0.6 billion" in pages["families/gpt3.md"] and round(gpt3["token_embedding"] / 1e9, 1) == 0.6
    assert round(gpt3["total"] / 1e9) == 175
    assert round(xl["layers"] / 1e9, 2) == 1.21 and round(xl["token_embedding"] / 1e9, 2) == 0.10
    assert round(xl["total"] / 1e9, 1) == 1.3

    # BERT: about 110M and 340M, "roughly triples" from Base to Large
    assert bert_base["total"] == pytest.approx(110e6, rel=0.02)
    assert bert_large["total"] == pytest.approx(340e6, rel=0.02)
    assert "roughly triples the parameter count" in pages["families/bert.md"]
    assert 2.5 < bert_large["total"] / bert_base["total"] < 3.5
