"""Word-run overlap between the book's prose and its source documents.

A page's prose is what a reader reads as sentences: the Markdown with its code blocks,
inline code, math, HTML tags, comments, link targets and front matter taken out. Each
Markdown table cell is a unit of its own, so a run never joins two cells. Text is compared
as words: lowercase `[a-z0-9]+` tokens, so punctuation and formatting do not hide a copy.

A shingle is a run of `N` consecutive words. The sources' shingles are kept only as
hashes (`shingle_hash`), in `fixtures/seed_shingles.txt`, which `make_seed_shingles.py`
writes; so the check runs where the sources are not (CI), without copying their text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

N = 12  # a run this long is a sentence's worth of someone else's words
CELL_N = 5  # in a table cell, a run this long of a source's table cell is copied prose, not a fact
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "seed_shingles.txt"
CELL_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "seed_cell_shingles.txt"
WORD = re.compile(r"[a-z0-9]+")

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", re.S | re.M)
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]+?(?<!\s)\$|\\\(.*?\\\)")
_INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
_ATTRS = re.compile(r"\{[:.#][^}]*\}")
_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingle_hash(run: Iterable[str]) -> str:
    """The first 16 hex digits of the SHA-1 of the words joined by single spaces."""
    return hashlib.sha1(" ".join(run).encode("utf-8")).hexdigest()[:16]


def shingles(tokens: list[str], n: int = N) -> Iterator[tuple[int, str]]:
    """(start, hash) of every run of `n` consecutive words."""
    for i in range(len(tokens) - n + 1):
        yield i, shingle_hash(tokens[i : i + n])


def seed_hashes(seed_dir: Path, n: int = N) -> list[str]:
    """Sorted, distinct hashes of every `n`-word run of every `.txt` source in `seed_dir`."""
    found: set[str] = set()
    for path in sorted(seed_dir.glob("*.txt")):
        found.update(h for _, h in shingles(words(path.read_text(encoding="utf-8")), n))
    return sorted(found)


def seed_cell_hashes(seed_dir: Path, n: int = CELL_N) -> list[str]:
    """Sorted, distinct hashes of every `n`-word run inside one cell of a source's table line."""
    from source_tables import table_lines

    found: set[str] = set()
    for path in sorted(seed_dir.glob("*.txt")):
        for row in table_lines(path.read_text(encoding="utf-8")):
            for cell in row:
                found.update(h for _, h in shingles(words(cell), n))
    return sorted(found)


def copied_cells(markdown: str, seed_cells: set[str], n: int = CELL_N) -> list[tuple[list[str], str]]:
    """(table header, cell) of every table cell sharing an `n`-word run with a source's table cell."""
    from source_tables import markdown_tables

    found = []
    for header, rows in markdown_tables(markdown):
        for row in [header] + rows:
            for cell in row:
                if any(h in seed_cells for _, h in shingles(words(cell), n)):
                    found.append((header, cell))
    return found


def read_fixture(path: Path = FIXTURE) -> set[str]:
    return {line.strip() for line in path.read_text(encoding="ascii").splitlines() if line.strip() and not line.startswith("#")}


def prose_units(markdown: str) -> list[str]:
    """The page's prose as separate units: one per paragraph-like block, one per table cell."""
    text = _FRONT_MATTER.sub("", markdown)
    text = _FENCE.sub("\n", text)
    text = _COMMENT.sub(" ", text)
    text = _DISPLAY_MATH.sub(" ", text)
    units: list[str] = []
    block: list[str] = []

    def close() -> None:
        if block:
            units.append(" ".join(block))
            block.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            close()
            if stripped:
                units.append(stripped.lstrip("#"))
        elif stripped.startswith("|"):
            close()
            if not _TABLE_RULE.match(stripped):
                units.extend(cell for cell in re.split(r"(?<!\\)\|", stripped.strip("|")))
        else:
            block.append(stripped)
    close()
    cleaned = []
    for unit in units:
        unit = _INLINE_CODE.sub(" ", unit)
        unit = _INLINE_MATH.sub(" ", unit)
        unit = _IMAGE.sub(r"\1", unit)
        unit = _LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), unit)
        unit = _TAG.sub(" ", unit)
        unit = _ATTRS.sub(" ", unit)
        cleaned.append(unit)
    return cleaned


def shared_runs(markdown: str, seed: set[str], n: int = N) -> list[str]:
    """The page's maximal word runs of at least `n` words whose every `n`-word shingle is in `seed`."""
    runs = []
    for unit in prose_units(markdown):
        tokens = words(unit)
        hits = [i for i, h in shingles(tokens, n) if h in seed]
        start = end = None
        for i in hits + [None]:
            if i is not None and end is not None and i <= end - n + 1:
                end = i + n
                continue
            if start is not None:
                runs.append(" ".join(tokens[start:end]))
            if i is not None:
                start, end = i, i + n
    return runs


def pages(docs: Path = DOCS) -> list[Path]:
    return sorted(docs.rglob("*.md"))
