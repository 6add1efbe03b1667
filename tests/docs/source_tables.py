"""Helpers of the source-table tests: the pages' Markdown tables, the sources' table lines, the checks both files run.

`docs/data/seed_tables.json` (first half of the book) and `seed_tables_2.json` (second half)
hold the tables the pages take from their sources, transcribed cell by cell; the two test
files tie them to the pages and to the sources with these helpers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def load_tables(name: str) -> tuple[dict, dict[str, dict]]:
    """A data file of `docs/data/` and its tables by id."""
    data = json.loads((DOCS / "data" / name).read_text(encoding="utf-8"))
    return data, {table["id"]: table for table in data["tables"]}


def flat(text: str) -> str:
    """`text` with every run of white space made one space."""
    return " ".join(text.split())


def page_text(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


def _pipe_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """All pipe tables of a Markdown text as (header, rows), cells stripped."""
    tables, block = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            block.append(line.strip())
            continue
        if len(block) >= 2 and set(block[1]) <= set("|-: "):
            cells = [_pipe_cells(row) for row in block]
            tables.append((cells[0], cells[2:]))
        block = []
    return tables


def table_lines(text: str) -> list[list[str]]:
    """Table-like lines of a source: tab-separated or Markdown rows, empty cells dropped."""
    rows = []
    for line in text.splitlines():
        if "\t" in line:
            cells = line.split("\t")
        elif line.lstrip().startswith("|"):
            cells = _pipe_cells(line)
        else:
            continue
        rows.append([c.strip() for c in cells if c.strip()])
    return rows


def occurs_as_number(number: str, text: str) -> bool:
    return re.search(rf"(?<![0-9.]){re.escape(number)}(?![0-9]|\.[0-9])", text) is not None


def assert_well_formed(data: dict, tables: dict[str, dict], phrases_key: str) -> None:
    """Unique ids, a known check, rows as wide as the header, an existing page, one phrase list a row."""
    assert len(tables) == len(data["tables"]), "table ids must be unique"
    for table in data["tables"]:
        width = len(table["header"])
        assert table["check"] in {"rows", "phrases"}, table["id"]
        assert all(len(row) == width for row in table["rows"]), table["id"]
        assert (DOCS / table["page"]).is_file(), table["page"]
        if table["check"] == "phrases":
            assert len(table[phrases_key]) == len(table["rows"]), table["id"]


def assert_page_shows(table: dict) -> None:
    """The page has exactly one table with this header, and it shows these rows cell by cell."""
    found = [rows for header, rows in markdown_tables(page_text(table["page"])) if header == table["header"]]
    assert len(found) == 1, f"{table['page']}: expected one table with header {table['header']}, found {len(found)}"
    rows = found[0]
    assert len(rows) == len(table["rows"]), f"{table['page']}: {len(rows)} rows, data has {len(table['rows'])}"
    for r, (shown, expected) in enumerate(zip(rows, table["rows"])):
        assert len(shown) == len(expected), f"{table['page']} row {r + 1} has {len(shown)} cells"
        for c, (cell, want) in enumerate(zip(shown, expected)):
            assert cell == want, f"{table['page']} row {r + 1}, column {table['header'][c]!r}: {cell!r} != {want!r}"


def assert_phrase_rows(table: dict, phrases_key: str, text: str, source: str) -> None:
    """Every phrase of a row is in the source's `text`, and every number of the row is in its phrases."""
    for row, phrases in zip(table["rows"], table[phrases_key]):
        for phrase in phrases:
            assert phrase in text, f"{source} does not contain {phrase!r}"
        for cell in row:
            for number in NUMBER.findall(cell):
                assert any(occurs_as_number(number, p) for p in phrases), f"{table['id']}: {number} (in {cell!r}) is not in the row's phrases {phrases}"
