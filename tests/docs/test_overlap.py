"""The book is written in its own words: no page repeats a sentence's worth of a source document.

The source documents (`../shared/seeds/`, beside the repository) are not part of the
repository, so the check reads hashes of their word runs from `fixtures/` (see
`overlap.py`; `make_seed_shingles.py` writes them):

* prose: no run of 12 or more consecutive words (lowercase `[a-z0-9]+` tokens, code, math
  and markup taken out) is shared with a source; each table cell counts as its own text;
* tables: no cell repeats a run of 5 words of a source's table cell, except in the tables
  of facts below, whose cells are the names of sessions and topics, quoted as facts.

Where the sources are present, the fixtures must be the ones they give.
"""

from __future__ import annotations

import pytest
from make_seed_shingles import default_seed_dir, render
from overlap import CELL_FIXTURE, DOCS, FIXTURE, N, copied_cells, pages, read_fixture, shared_runs

# (page, first header cell): tables whose cells are facts taken from a source on purpose
FACT_TABLES = {
    ("start/syllabus.md", "#"),  # the sessions' titles and topic lists, as the course names them
    ("attention/three-kinds.md", "Location"),  # which positions each kind of attention reads
}
SEEDS = default_seed_dir()
PAGES = [p.relative_to(DOCS).as_posix() for p in pages()]


@pytest.fixture(scope="module")
def seed() -> set[str]:
    return read_fixture(FIXTURE)


@pytest.fixture(scope="module")
def seed_cells() -> set[str]:
    return read_fixture(CELL_FIXTURE)


def test_fixture_holds_hashes(seed, seed_cells):
    assert len(seed) > 20_000 and len(seed_cells) > 50
    assert all(len(h) == 16 and int(h, 16) >= 0 for h in seed | seed_cells)


@pytest.mark.parametrize("page", PAGES)
def test_page_prose_is_its_own(page, seed):
    runs = shared_runs((DOCS / page).read_text(encoding="utf-8"), seed)
    assert not runs, f"{page} shares {len(runs)} run(s) of {N}+ words with a source:\n" + "\n".join(f"  {r}" for r in runs)


@pytest.mark.parametrize("page", PAGES)
def test_table_cells_are_its_own(page, seed_cells):
    found = [(h, c) for h, c in copied_cells((DOCS / page).read_text(encoding="utf-8"), seed_cells) if (page, h[0]) not in FACT_TABLES]
    assert not found, f"{page}: table cells copied from a source's table:\n" + "\n".join(f"  {c!r}" for _, c in found)


def test_the_check_finds_a_copied_run(seed):
    """The check itself: a made-up page quoting 12 words of a source fails, one word less passes."""
    quote = "the chicken didn t cross the road because it was too tired"  # a source's example sentence
    assert shared_runs(f"# A page\n\nIt said: `x` *{quote}*, said the page.\n", seed) == [quote]
    assert shared_runs(" ".join(quote.split()[1:]), seed) == []


@pytest.mark.skipif(not any(SEEDS.glob("*.txt")), reason=f"source documents not found at {SEEDS} (set TX_SEEDS): the committed fixtures are used as they are")
def test_fixtures_match_the_sources():
    for path, text in render(SEEDS).items():
        assert path.read_text(encoding="ascii") == text, f"{path.name} is stale: run python tests/docs/make_seed_shingles.py"
