"""The built site the browser tests serve, and its default model's files."""

from __future__ import annotations

import json
from pathlib import Path

from site_under_test import ROOT, SITE

__all__ = ["ROOT", "SITE", "manifest", "model_dir", "record_other_origins"]


def model_dir() -> Path:
    """The site's default model directory (models/<name>/)."""
    name = json.loads((SITE / "models" / "index.json").read_text())["default"]
    return SITE / "models" / name


def manifest() -> dict:
    """The default model's manifest.json."""
    return json.loads((model_dir() / "manifest.json").read_text())


def record_other_origins(context, origins, external: list[str]) -> None:
    """Append to `external` the URL of every request of `context` to an origin not in `origins`
    (data: and blob: URLs pass), so the test can fail on it.

    Such a request cannot succeed: the browser resolves no host but 127.0.0.1
    (``sitebuild.chromium.HEADLESS_ARGS``). It is watched, not intercepted: a route on every
    request would pass each one through Playwright and this process before it goes on (most of
    a browser test's CPU, on two cores) and turn off the context's HTTP cache."""
    allowed = tuple(o.rstrip("/") for o in origins) + ("data:", "blob:")
    context.on("request", lambda req: None if req.url.startswith(allowed) else external.append(req.url))
