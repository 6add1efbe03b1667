"""Check a built site against GitHub Pages' limits and report its sizes.

GitHub Pages refuses files of 100 MB or more and wants a published site under 1 GB. This
walks the site directory, prints the total, the largest files and the size of each part
(the model, Pyodide, ONNX Runtime, the pages), and exits with status 1 when a limit is
broken. In GitHub Actions the same report goes to the job summary.

Usage: ``python -m sitebuild.check_budgets [SITE_DIR] [--json PATH]`` (``make check-budgets``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from model_export.layout import PAGES_FILE_LIMIT

MAX_SITE_BYTES = 1_000_000_000  # GitHub Pages: published sites may be no larger than 1 GB
LARGEST = 10
# Parts of the site reported on their own (the rest is "pages and theme").
PARTS = {
    "models": "models/",
    "Pyodide, NumPy and demos": "assets/vendor/pyodide/",
    "ONNX Runtime Web": "assets/vendor/ort/",
    "KaTeX": "assets/vendor/katex/",
    "widgets and runtime": "assets/tx/",
    "embed pages": "embed/",
    "search index": "search/",
}


@dataclass
class Report:
    """Sizes of a site and what breaks the limits."""

    total: int
    files: int
    largest: list[tuple[str, int]]
    parts: dict[str, int]
    models: dict[str, int]
    problems: list[str]

    def to_dict(self) -> dict:
        return {
            "total_bytes": self.total,
            "files": self.files,
            "largest": [{"path": p, "bytes": b} for p, b in self.largest],
            "parts": self.parts,
            "models": self.models,
            "limits": {"file_bytes": PAGES_FILE_LIMIT, "site_bytes": MAX_SITE_BYTES},
            "problems": self.problems,
        }


def measure(site: Path, max_file: int = PAGES_FILE_LIMIT, max_site: int = MAX_SITE_BYTES) -> Report:
    """Walk ``site`` (symbolic links are followed, as the Pages artifact does)."""
    sizes: list[tuple[str, int]] = []
    for dirpath, _dirnames, filenames in os.walk(site, followlinks=True):
        for name in filenames:
            path = Path(dirpath) / name
            sizes.append((path.relative_to(site).as_posix(), path.stat().st_size))
    total = sum(b for _, b in sizes)
    parts = {label: 0 for label in PARTS}
    parts["pages and theme"] = 0
    models: dict[str, int] = {}
    for rel, size in sizes:
        label = next((label for label, prefix in PARTS.items() if rel.startswith(prefix)), "pages and theme")
        parts[label] += size
        if rel.startswith("models/") and rel.count("/") >= 2:
            name = rel.split("/")[1]
            models[name] = models.get(name, 0) + size
    problems = [f"{rel} is {mb(size)}: GitHub refuses files of {mb(max_file)} or more" for rel, size in sorted(sizes) if size >= max_file]
    if total >= max_site:
        problems.append(f"the site is {mb(total)}: GitHub Pages sites must stay under {mb(max_site)}")
    largest = sorted(sizes, key=lambda item: (-item[1], item[0]))[:LARGEST]
    return Report(total, len(sizes), largest, parts, models, problems)


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def markdown(report: Report, site: Path) -> str:
    """The report as Markdown (for the terminal and the Actions job summary)."""
    status = "within GitHub Pages' limits" if not report.problems else "OVER GitHub Pages' limits"
    lines = [
        f"### Site `{site}`: {mb(report.total)} in {report.files:,} files, {status}",
        "",
        f"Limits: every file under {mb(PAGES_FILE_LIMIT)}, the site under {mb(MAX_SITE_BYTES)}.",
        "",
        "| part | size |",
        "|---|---:|",
    ]
    lines += [f"| {label} | {mb(size)} |" for label, size in report.parts.items() if size]
    for name, size in sorted(report.models.items()):
        lines.append(f"| model `{name}` | {mb(size)} |")
    lines += ["", "| largest files | size |", "|---|---:|"]
    lines += [f"| `{rel}` | {mb(size)} |" for rel, size in report.largest]
    if report.problems:
        lines += ["", "**Problems:**", ""] + [f"- {p}" for p in report.problems]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Check a built site against GitHub Pages' size limits.")
    ap.add_argument("site", nargs="?", default="site", type=Path, help="the built site (default: site)")
    ap.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = ap.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"error: {args.site}/index.html not found: build the site first (make site)", file=sys.stderr)
        return 2
    report = measure(args.site)
    text = markdown(report, args.site)
    print(text, end="")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(text)
    if args.json:
        args.json.write_text(json.dumps(report.to_dict(), indent=1))
    if report.problems:
        print(f"\nbudget check FAILED: {len(report.problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
