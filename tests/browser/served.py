"""The built site the browser tests serve, and its default model's files."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("TX_SITE", ROOT / "site"))  # another built site: TX_SITE=/path


def model_dir() -> Path:
    """The site's default model directory (models/<name>/)."""
    name = json.loads((SITE / "models" / "index.json").read_text())["default"]
    return SITE / "models" / name


def manifest() -> dict:
    """The default model's manifest.json."""
    return json.loads((model_dir() / "manifest.json").read_text())


def block_other_origins(context, origins, external: list[str]) -> None:
    """Abort every request of `context` to an origin not in `origins` (data: and blob: URLs
    pass), and append its URL to `external` so the test can fail on it."""
    allowed = tuple(o.rstrip("/") for o in origins) + ("data:", "blob:")

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    context.on("request", lambda req: None if req.url.startswith(allowed) else external.append(req.url))
