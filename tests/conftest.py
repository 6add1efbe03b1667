"""Shared paths for the test suite, and how ``pytest -n 2`` (pytest-xdist) shares it out.

Under ``--dist loadgroup`` each *group* of tests runs on one worker, in order: a group is a
test file, so its module fixtures (one browser tab for a whole sweep, a model built once) are
set up once. A test file can split itself into several groups with a function
``xdist_group(item) -> str`` (the reader-view tour: one group per device; the bad-input and
keyboard sweeps: one per widget family, each with its own page), so that its parts run side
by side; several files can form one group (``SHARED_TAB = "<name>"``) to share a tab whose
Python or model has started. The groups are handed out longest first (``tests/durations.json``, written by
``make test-durations``), which keeps both workers busy to the end. Without xdist the same
order applies and changes nothing else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = Path(__file__).with_name("durations.json")  # group -> seconds, from `make test-durations`


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def group_of(item) -> str:
    """The xdist group of a test: its file (or the group its file's ``SHARED_TAB`` names, which
    several files join to share a browser tab or page on one worker), and the part its file's
    ``xdist_group`` names."""
    module = getattr(item, "module", None)
    shared = getattr(module, "SHARED_TAB", None)
    base = shared if isinstance(shared, str) else item.nodeid.split("::")[0]  # xdist sends it: a str
    split = getattr(module, "xdist_group", None)
    part = split(item) if callable(split) else ""
    return f"{base}[{part}]" if part else base


def expected_seconds() -> dict[str, float]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test with its xdist group (before xdist reads the marks), then, once pytest
    has ordered the tests by their fixtures, put the longest groups first."""
    group = {item: group_of(item) for item in items}
    for item, name in group.items():
        item.add_marker(pytest.mark.xdist_group(name))
        item.user_properties.append(("group", name))  # reaches the xdist controller with each report
    yield
    seconds = expected_seconds()
    items.sort(key=lambda item: -seconds.get(group.get(item, ""), 0.0))  # stable: a group stays in order


# `make test-durations`: every test's time (setup, call and teardown) and group, written by the
# process that reports (the xdist controller, or pytest itself) into TX_TEST_DURATIONS.
_times: dict[str, dict] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("TX_TEST_DURATIONS"):
        entry = _times.setdefault(report.nodeid, {"group": dict(report.user_properties).get("group"), "seconds": 0.0})
        entry["seconds"] += report.duration


def pytest_sessionfinish(session):
    out = os.environ.get("TX_TEST_DURATIONS")
    if out and not hasattr(session.config, "workerinput"):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(_times, indent=0, sort_keys=True) + "\n")
