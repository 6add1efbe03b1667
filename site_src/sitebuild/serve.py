"""Serve the built site on 127.0.0.1 with cross-origin isolation and correct MIME types.

Cross-origin isolation (COOP ``same-origin`` + COEP ``require-corp``) makes
``SharedArrayBuffer`` available, which onnxruntime-web needs for WASM threads. The
MIME table is set here because a bare machine may lack ``/etc/mime.types``, and
browsers refuse ES modules or streaming WASM compilation served with the wrong type.

Every response also carries ``Access-Control-Allow-Origin: *`` (as GitHub Pages sends)
and ``Cross-Origin-Resource-Policy: cross-origin``, so that course pages on other
origins can import the widget modules and fetch the runtime files and the model.

Usage: ``python -m sitebuild.serve [DIR] [--port 8000] [--no-coi]``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
from pathlib import Path

MIME_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".txt": "text/plain",
    ".xml": "application/xml",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".onnx": "application/octet-stream",
    ".bin": "application/octet-stream",
    ".gz": "application/gzip",
}


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with COOP/COEP/CORP/CORS headers and an explicit MIME table.

    ``cross_origin_isolated`` decides whether COOP/COEP are sent; ``make_server`` gives each
    server its own subclass, so servers with and without isolation can run side by side.
    """

    extensions_map = {"": "application/octet-stream", **MIME_TYPES}
    cross_origin_isolated = True

    def end_headers(self) -> None:
        if self.cross_origin_isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        # Lets pages on other origins (course pages embedding widgets) load these files:
        # CORP for no-cors loads under COEP, CORS for module imports, workers and fetch().
        self.send_header("Cross-Origin-Resource-Policy", "cross-origin")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)


def make_server(directory: Path, port: int = 0, host: str = "127.0.0.1", coi: bool = True, verbose: bool = False) -> http.server.ThreadingHTTPServer:
    """Create (not start) a threaded server for ``directory``; port 0 picks a free port."""
    handler_class = type("SiteHandler", (SiteHandler,), {"cross_origin_isolated": coi})
    handler = functools.partial(handler_class, directory=str(directory))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.verbose = verbose
    return server


def serve_in_thread(directory: Path, **kwargs) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Start a server in a daemon thread; returns it and its base URL."""
    server = make_server(directory, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve the built site with COOP/COEP headers.")
    ap.add_argument("directory", nargs="?", default="site", type=Path)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--no-coi", action="store_true", help="omit COOP/COEP (WASM then runs on one thread)")
    ap.add_argument("--verbose", action="store_true", help="log every request")
    args = ap.parse_args(argv)
    if not (args.directory / "index.html").exists():
        raise SystemExit(f"{args.directory}/index.html not found: build the site first (make site)")
    server = make_server(args.directory, args.port, args.host, coi=not args.no_coi, verbose=args.verbose)
    print(f"Serving {args.directory}/ at http://{args.host}:{server.server_address[1]}/ (cross-origin isolated: {not args.no_coi}); Ctrl-C stops.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
