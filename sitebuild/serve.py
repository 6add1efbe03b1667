"""Serve the built site on 127.0.0.1 with cross-origin isolation and correct MIME types.

Cross-origin isolation (COOP ``same-origin`` + COEP ``require-corp``) makes
``SharedArrayBuffer`` available, which onnxruntime-web needs for WASM threads. The
MIME table is set here because a bare machine may lack ``/etc/mime.types``, and
browsers refuse ES modules or streaming WASM compilation served with the wrong type.

``sitemap.xml`` is served with its addresses moved to the address the server answers on:
MkDocs writes them at ``site_url`` (``http://127.0.0.1:8000/`` by default), and Material's
instant navigation only follows links the sitemap lists, so a site served on another port
(a second ``make serve``, the browser tests' server) would otherwise reload every page.

Every response also carries ``Access-Control-Allow-Origin: *`` (as GitHub Pages sends)
and ``Cross-Origin-Resource-Policy: cross-origin``, so that course pages on other
origins can import the widget modules and fetch the runtime files and the model.

Usage: ``python -m sitebuild.serve [DIR] [--port 8000] [--no-coi]``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import os
import re
import sys
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


SITEMAP = "/sitemap.xml"
LOC = re.compile(r"<loc>(.*?)</loc>")


def sitemap_at(xml: str, base: str) -> str:
    """`xml` (a sitemap) with every address moved from the site's root it was built for (the
    addresses' common folder) to `base`."""
    locs = LOC.findall(xml)
    if not locs:
        return xml
    root = os.path.commonprefix(locs)
    root = root[: root.rindex("/") + 1]
    return LOC.sub(lambda m: f"<loc>{base}{m.group(1)[len(root) :]}</loc>", xml)


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

    def send_head(self):
        """The sitemap at this server's own address (see the module's docstring); any other
        file as it is."""
        if self.path.split("?", 1)[0] != SITEMAP or not self.headers.get("Host"):
            return super().send_head()
        try:
            xml = Path(self.translate_path(SITEMAP)).read_text(encoding="utf-8")
        except OSError:
            return super().send_head()  # the 404 as usual
        body = sitemap_at(xml, f"http://{self.headers['Host']}/").encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", MIME_TYPES[".xml"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)


class SiteServer(http.server.ThreadingHTTPServer):
    """A thread per request, daemon threads, and a listen backlog a browser cannot fill.

    The standard library's backlog is 5: a page that opens its scripts, styles, fonts and
    model pieces at once, in several tabs, overflows it, and the kernel drops the surplus
    connections, which the browser retries only after a second or more.
    """

    request_queue_size = 128
    daemon_threads = True
    verbose = False

    def handle_error(self, request, client_address) -> None:
        """Stay quiet when the browser hangs up mid-response (it left the page, or cancelled a
        download it no longer needs): that is the reader's choice, not a server fault. Any
        other error gets the standard library's traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipeError, ConnectionResetError
            if self.verbose:
                print(f"{client_address[0]}: the client closed the connection", file=sys.stderr)
            return
        super().handle_error(request, client_address)


def make_server(directory: Path, port: int = 0, host: str = "127.0.0.1", coi: bool = True, verbose: bool = False) -> SiteServer:
    """Create (not start) a threaded server for ``directory``; port 0 picks a free port."""
    handler_class = type("SiteHandler", (SiteHandler,), {"cross_origin_isolated": coi})
    handler = functools.partial(handler_class, directory=str(directory))
    server = SiteServer((host, port), handler)
    server.verbose = verbose
    return server


def serve_in_thread(directory: Path, **kwargs) -> tuple[SiteServer, str]:
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
