"""What the benchmarks share: Chromium's flags, the spread of repeated measurements, and the
facts every result file records (commit, machine load, versions)."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from pathlib import Path

from sitebuild.chromium import HEADLESS_ARGS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

BROWSER_ARGS = HEADLESS_ARGS


def spread(values) -> dict:
    """Median, smallest and largest of `values` (None ignored), rounded, and how many."""
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2), "n": len(values)}


def git_commit() -> str | None:
    """The checkout's commit (with "+dirty" when tracked files differ from it), or None outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def profile_context(playwright, profile: str):
    """Headless Chromium with a persistent profile in `profile`, which keeps Cache Storage on
    disk (an incognito context may lack the quota)."""
    from sitebuild.chromium import find_chromium

    return playwright.chromium.launch_persistent_context(profile, executable_path=find_chromium(), headless=True, args=BROWSER_ARGS)


def open_page(context, url: str):
    """A new tab of `context` at `url`, loaded; returns it and the list its uncaught errors go into."""
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_load_state()
    return page, errors


def report_header(benchmark: str, argv: list[str] | None, manifest: dict) -> dict:
    """The first keys of a browser benchmark's JSON: which script, arguments, commit, date, model."""
    import sys
    from datetime import UTC, datetime

    return {
        "benchmark": benchmark,
        "argv": sys.argv[1:] if argv is None else argv,
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"name": manifest["name"], "source": manifest.get("source"), "config": manifest["config"]},
    }


def machine(load_before: tuple[float, float, float]) -> dict:
    """The machine and its load average before and now (the benchmarks compare ratios
    measured in one run because this machine is noisy)."""
    return {"platform": platform.platform(), "cores": os.cpu_count(), "load_average_before": list(load_before), "load_average_after": list(os.getloadavg())}
