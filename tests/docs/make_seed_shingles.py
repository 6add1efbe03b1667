"""Write `fixtures/seed_shingles.txt` and `seed_cell_shingles.txt`: hashes of the sources' word runs.

The first holds every 12-word run of the source documents, the second every 5-word run
inside one cell of their tables.

    python tests/docs/make_seed_shingles.py [SEED_DIR]

SEED_DIR defaults to `$TX_SEEDS` or `../shared/seeds` (beside the repository). The file
holds hashes only (see `overlap.shingle_hash`), never the sources' words, so it can be
committed; `test_overlap.py` checks the pages against it and, where the sources are
present, that it is up to date.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overlap import CELL_FIXTURE, CELL_N, FIXTURE, ROOT, N, seed_cell_hashes, seed_hashes  # noqa: E402

HEADER = "# sha1(' '.join(words))[:16] of every {n}-word run {where}; written by tests/docs/make_seed_shingles.py\n"
FILES = [  # (path, hashes, header)
    (FIXTURE, seed_hashes, HEADER.format(n=N, where="of the source documents")),
    (CELL_FIXTURE, seed_cell_hashes, HEADER.format(n=CELL_N, where="inside one table cell of the source documents")),
]


def default_seed_dir() -> Path:
    return Path(os.environ["TX_SEEDS"]) if os.environ.get("TX_SEEDS") else ROOT.parent / "shared" / "seeds"


def render(seed_dir: Path) -> dict[Path, str]:
    """The text of each fixture file, by path."""
    return {path: header + "".join(h + "\n" for h in hashes(seed_dir)) for path, hashes, header in FILES}


def main(argv: list[str]) -> int:
    seed_dir = Path(argv[1]) if len(argv) > 1 else default_seed_dir()
    if not any(seed_dir.glob("*.txt")):
        print(f"no source documents (*.txt) in {seed_dir}", file=sys.stderr)
        return 1
    for path, text in render(seed_dir).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="ascii")
        print(f"{path.relative_to(ROOT)}: {len(text.splitlines()) - 1} hashes from {seed_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
