"""Summarise one timed run of the suite (``make test-durations``).

Reads the per-test times that tests/conftest.py wrote (``TX_TEST_DURATIONS``: node id ->
its xdist group and the seconds of its setup, call and teardown) and writes

* ``tests/durations.json``: seconds per xdist group, which tests/conftest.py uses to hand the
  longest groups out first;
* the table between the ``durations`` markers of ``tests/README.md``: tests and seconds per
  test file, slowest first.

Usage: ``python tests/durations.py build/test-durations.json``
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
GROUPS = HERE / "durations.json"
BEGIN, END = "<!-- durations: written by `make test-durations` -->", "<!-- /durations -->"


def summarise(times: dict[str, dict]) -> tuple[dict[str, float], list[tuple[str, int, float]]]:
    """Seconds per group, and (file, tests, seconds) per file, slowest first."""
    groups: dict[str, float] = defaultdict(float)
    files: dict[str, list[float]] = defaultdict(list)
    for nodeid, entry in times.items():
        path = nodeid.split("::")[0]
        groups[entry["group"] or path] += entry["seconds"]
        files[path].append(entry["seconds"])
    rows = sorted(((path, len(s), sum(s)) for path, s in files.items()), key=lambda r: -r[2])
    return {g: round(s, 1) for g, s in sorted(groups.items())}, rows


def table(rows: list[tuple[str, int, float]]) -> str:
    total = sum(r[2] for r in rows)
    lines = ["| file | tests | seconds | share |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{path}` | {n} | {s:.1f} | {100 * s / total:.1f}% |" for path, n, s in rows]
    lines.append(f"| **all** | **{sum(r[1] for r in rows)}** | **{total:.1f}** | |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    times = json.loads(Path(argv[0]).read_text())
    groups, rows = summarise(times)
    GROUPS.write_text(json.dumps(groups, indent=1) + "\n")
    readme = README.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        print(f"{README} has no {BEGIN} … {END} section", file=sys.stderr)
        return 1
    README.write_text(pattern.sub(lambda _: f"{BEGIN}\n{table(rows)}\n{END}", readme), encoding="utf-8")
    print(f"{len(times)} tests, {sum(e['seconds'] for e in times.values()):.0f} s of test time: {GROUPS.name} and the table in {README.name} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
