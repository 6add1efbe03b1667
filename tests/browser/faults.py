"""Faults on purpose: Playwright routes that break the built site's files, for the tests of
what the runtime and the widgets do about them (test_runtime.py, test_faults.py).

A fault is named by a kind:

* ``"404"`` / ``"500"``: the server answers with that status;
* ``"garbage"``: 200 with bytes that are not the file (same content type as the real one);
* ``"corrupt"``: the real file with one byte flipped (its sha256 no longer matches);
* ``"truncate"``: the first half of the real file;
* ``"stall"``: no answer at all (the handler never responds);
* ``bytes``: 200 with exactly these bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

from served import SITE, manifest, model_dir
from sitebuild.serve import MIME_TYPES

#: What a "garbage" fault serves: not a script, not WebAssembly, not JSON, not a zip.
GARBAGE = b"this is not the file you are looking for\n" * 64


def model_file_urls() -> set[str]:
    """Paths (below models/<name>/) of every variant file."""
    return {f["path"] for v in manifest()["variants"] for f in v["files"]}


def content_type(path: str | Path) -> str:
    """The content type the site's server sends for a file name."""
    return MIME_TYPES.get(Path(path).suffix, "application/octet-stream")


def respond(route, kind, path: Path):
    """Answer `route`, a request for the site file at `path`, with the fault `kind`."""
    if kind == "stall":
        return None  # never answer: the runtime must notice on its own
    if kind in ("404", "500"):
        return route.fulfill(status=int(kind), body="fault injected by the test")
    headers = {"content-type": content_type(path)}
    if isinstance(kind, bytes):
        return route.fulfill(status=200, body=kind, headers=headers)
    if kind == "garbage":
        return route.fulfill(status=200, body=GARBAGE, headers=headers)
    body = path.read_bytes()
    if kind == "corrupt":
        broken = bytearray(body)
        broken[len(broken) // 2] ^= 0xFF
        return route.fulfill(status=200, body=bytes(broken), headers=headers)
    if kind == "truncate":
        return route.fulfill(status=200, body=body[: len(body) // 2], headers=headers)
    raise ValueError(f"unknown fault {kind!r}")


class FileFault:
    """Break the site's files below `pattern` that `select` picks, while `kind` is set.

    Set ``kind`` to another fault to change it, or call ``clear()`` to let requests through
    again (a stalled request stays unanswered). ``hits`` lists the site paths it broke.
    """

    def __init__(self, p, pattern: str, kind, select=lambda path: True):
        self.kind = kind
        self.hits: list[str] = []

        def handler(route):
            path = urlparse(route.request.url).path.lstrip("/")
            if self.kind is None or not select(path):
                return route.continue_()
            self.hits.append(path)
            return respond(route, self.kind, SITE / path)

        p.route(pattern, handler)

    def clear(self):
        """Stop breaking: later requests reach the server."""
        self.kind = None


def model_fault_route(p, kind, hits):
    """Route every variant file of the default model through a fault of `kind`; `hits` collects
    the paths it broke. Returns the route's pattern (for ``p.unroute``)."""
    files = model_file_urls()
    prefix = f"/models/{model_dir().name}/"

    def handler(route):
        path = route.request.url.split(prefix, 1)[1].split("?")[0]
        if path not in files:
            return route.continue_()
        hits.append(path)
        return respond(route, kind, model_dir() / path)

    pattern = f"**{prefix}**"
    p.route(pattern, handler)
    return pattern


def serve_patched_manifest(p, patched: dict | bytes, extra_files: dict[str, bytes] | None = None):
    """Serve `patched` as the default model's manifest.json (a dict as JSON, bytes as they are),
    and `extra_files` (paths below the model directory) from memory."""
    prefix = f"/models/{model_dir().name}/"
    extra_files = extra_files or {}
    body = patched if isinstance(patched, bytes) else json.dumps(patched).encode()

    def serve(route):
        path = route.request.url.split(prefix, 1)[1].split("?")[0]
        if path == "manifest.json":
            return route.fulfill(status=200, body=body, headers={"content-type": "application/json"})
        if path in extra_files:
            return route.fulfill(status=200, body=extra_files[path], headers={"content-type": "application/octet-stream"})
        return route.continue_()

    pattern = f"**{prefix}**"
    p.route(pattern, serve)
    return pattern
