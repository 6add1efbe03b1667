"""Every internal link and #anchor of the built site resolves.

The site checked is the one `make test` built with `mkdocs build --strict` (site/, or
TX_SITE), which the browser tests serve too. Every HTML page is parsed, and each
same-site URL in `href`/`src` must name an existing file; a `#fragment` on a link to an
HTML page must name an element `id` (or `<a name>`) in that page. MkDocs itself checks
links between Markdown files, but not anchors, and not links written as raw HTML.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from site_under_test import SITE

BASE = "http://site.invalid/"  # stand-in origin for resolving relative URLs
URL_ATTRIBUTES = {"a": "href", "link": "href", "area": "href", "script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src", "audio": "src"}


class PageScan(HTMLParser):
    """Collects a page's element ids and the URLs it refers to."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str]] = []  # (tag, url)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if tag == "a" and attributes.get("name"):
            self.ids.add(attributes["name"])
        name = URL_ATTRIBUTES.get(tag)
        if name and attributes.get(name) is not None:
            self.urls.append((tag, attributes[name]))

    handle_startendtag = handle_starttag


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} is not built: run `make site` (make test does it)")
    return SITE


@pytest.fixture(scope="module")
def scans(site) -> dict[str, PageScan]:
    """Every HTML page of the site, keyed by its path relative to the site root."""
    pages = {}
    for path in sorted(site.rglob("*.html")):
        scan = PageScan()
        scan.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(site).as_posix()] = scan
    return pages


def is_internal(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and bool(url.strip())


def target_file(site: Path, page: str, url: str) -> tuple[Path, str]:
    """The file a same-site URL on `page` points to, and its fragment."""
    absolute = urlsplit(urljoin(BASE + page, url))
    path = unquote(absolute.path).lstrip("/")
    target = site / PurePosixPath(path)
    if path == "" or path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(absolute.fragment)


def test_the_site_has_pages(scans):
    assert "index.html" in scans and len(scans) > 3


def test_internal_links_and_anchors_resolve(site, scans):
    broken = []
    for page, scan in scans.items():
        for tag, url in scan.urls:
            if not is_internal(url):
                continue
            target, fragment = target_file(site, page, url)
            if not target.is_file():
                broken.append(f"{page}: <{tag}> {url} -> missing {target.relative_to(site)}")
                continue
            if fragment and target.suffix == ".html":
                ids = scans[target.relative_to(site).as_posix()].ids
                if fragment not in ids:
                    broken.append(f"{page}: <{tag}> {url} -> no id {fragment!r} in {target.relative_to(site)}")
    assert not broken, "\n".join(broken)


def test_checker_reports_a_broken_anchor(site, scans):
    """The check itself: a made-up anchor on a real page is caught, a real one is not."""
    target, fragment = target_file(site, "index.html", "start/how-to-read/#no-such-heading")
    assert target.is_file() and fragment not in scans[target.relative_to(site).as_posix()].ids
    target, fragment = target_file(site, "index.html", "start/how-to-read/#the-sections")
    assert fragment in scans[target.relative_to(site).as_posix()].ids
