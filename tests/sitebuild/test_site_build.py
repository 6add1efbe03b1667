"""The site builds with `mkdocs build --strict` and serves only its own files."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


URL = "https://example.org/book/"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One `mkdocs build --strict` into a fresh directory, at another site_url (SITE_URL): the
    build `make site` does, checked from scratch, and the address every check below reads."""
    out = tmp_path_factory.mktemp("build") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "SITE_URL": URL},  # NO_MKDOCS_2_WARNING: no end-of-life banner from Material
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return out


def test_strict_build_is_clean(built):
    out = built
    for required in [
        "assets/vendor/pyodide/pyodide.mjs",
        "assets/vendor/ort/ort.webgpu.min.mjs",
        "assets/vendor/ort/ort-wasm-simd-threaded.asyncify.wasm",
        "assets/vendor/katex/katex.min.js",
        "assets/tx/widgets/index.js",
        "models/index.json",
    ]:
        assert (out / required).is_file(), required
    # Pages load scripts, styles and fonts only from their own origin.
    loaded = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(https?:)?//[^"]+"')
    for page in out.rglob("*.html"):
        html = page.read_text()
        external = [m.group(0) for m in loaded.finditer(html) if 'rel="canonical"' not in m.group(0)]
        assert not external, (page, external)
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html


def test_sitemap_lists_every_page_at_the_site_url(built):
    """sitemap.xml (what Material's instant navigation follows) names every page of the nav
    at SITE_URL; the pages link to the previous and the next page (navigation.footer)."""
    out, url = built, URL
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [e.text for e in ET.parse(out / "sitemap.xml").getroot().findall("s:url/s:loc", ns)]
    pages = sorted(
        p.relative_to(out).as_posix().removesuffix("index.html")
        for p in out.rglob("index.html")
        if not p.relative_to(out).as_posix().startswith(("assets/", "embed/"))
    )
    assert sorted(loc.removeprefix(url) for loc in locs) == pages
    assert all(loc.startswith(url) for loc in locs)
    start = (out / "start" / "how-to-read" / "index.html").read_text()
    assert 'class="md-footer__link md-footer__link--prev"' in start and "md-footer__link--next" in start
