"""Shared paths for the test suite."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
