"""Every page of the built site loads cleanly, mounts its widgets and passes axe-core.

For every HTML page of the site under test (``TX_SITE``, default ``site/``), one test:

* the page loads with no console error, no failed request and no request to another
  origin (the same ``WatchedPage`` checks as the ``page`` fixture of ``conftest.py``,
  attributed to the page that caused them);
* every ``tx-*`` element on it is a defined custom element and reaches
  ``data-state="ready"``; a widget that shows an error fails the test with its message;
* every formula renders (no KaTeX error element);
* axe-core finds no violation of impact "serious" or "critical", inside the widgets'
  shadow roots included.

Speed: one browser context and one tab visit all pages. The first page is loaded
normally; the others are reached through MkDocs Material's *instant navigation* (a click
on a same-site link), which swaps the page content without reloading the window, so the
Pyodide worker and the model session start once instead of once per page. Material only
navigates instantly to URLs listed in ``sitemap.xml``, whose addresses come from
``site_url``; the test therefore answers the sitemap request with the site's own pages at
the test server's address. Pages missing from that list (such as ``404.html``) are
loaded normally.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("TX_SITE", ROOT / "site"))
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
FIRST_TIMEOUT_MS = 180_000  # the first page starts Pyodide and the model: allow the cold start
PAGE_TIMEOUT_MS = 90_000
BLOCKING_IMPACTS = ("serious", "critical")
TITLE = re.compile(r"<title>(.*?)</title>", re.S)


def site_pages(site: Path = SITE) -> list[str]:
    """URL paths of every HTML page, relative to the site root: "" for the home page."""
    if not site.is_dir():
        return []
    paths = []
    for file in sorted(site.rglob("*.html")):
        rel = file.relative_to(site).as_posix()
        if rel.startswith("assets/"):
            continue  # vendored runtime files, not pages
        if rel.startswith("embed/"):
            continue  # bare iframe pages without the theme: tests/browser/test_embed.py opens each
        paths.append(rel.removesuffix("index.html"))
    return sorted(paths, key=lambda p: (p != "", p))  # the home page first


def page_title(path: str) -> str:
    file = SITE / (path + "index.html" if path == "" or path.endswith("/") else path)
    match = TITLE.search(file.read_text(encoding="utf-8"))
    return html.unescape(match.group(1).strip()) if match else ""


def local_sitemap(base_url: str, pages: list[str]) -> str:
    urls = "".join(f"<url><loc>{base_url}{p}</loc></url>" for p in pages if p == "" or p.endswith("/"))
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')


PAGES = site_pages()


def _watched_page_class(config):
    """The `WatchedPage` of tests/browser/conftest.py, the class behind the `page` fixture."""
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", "") and hasattr(plugin, "WatchedPage") \
                and Path(plugin.__file__).resolve().parent == Path(__file__).resolve().parent:
            return plugin.WatchedPage
    raise RuntimeError("tests/browser/conftest.py with WatchedPage not loaded")


def widget_states(page) -> list[dict]:
    """Every tx-* element of the page: tag, whether it is defined, its state and status text."""
    return page.evaluate("""() => [...document.querySelectorAll("*")]
        .filter(el => el.localName.startsWith("tx-"))
        .map(el => ({tag: el.localName, defined: customElements.get(el.localName) !== undefined,
                     state: el.dataset.state || "",
                     message: (el.shadowRoot && el.shadowRoot.querySelector(".status-text") || {}).textContent || ""}))""")


def wait_for_widgets(page, timeout_ms: int) -> None:
    """Until every tx-* element is ready or shows an error (all waited for together).

    An element that is not a defined custom element never changes state; it is reported
    at once instead of being waited for (the widgets' module has run by the `load` event).
    """
    try:
        page.wait_for_function("""() => [...document.querySelectorAll("*")]
            .filter(el => el.localName.startsWith("tx-"))
            .every(el => customElements.get(el.localName) === undefined
                         || el.dataset.state === "ready" || el.dataset.state === "error")""", timeout=timeout_ms)
    except Exception:  # the caller reports the widgets that are not ready, one by one
        pass


def blocking_axe_violations(page) -> list[dict]:
    """axe-core's violations of impact serious or critical (axe must be on the page)."""
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ["violations"]});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       targets: v.nodes.slice(0, 5).map(n => n.target),
                                       count: v.nodes.length}));
    }""")
    return [v for v in result if v["impact"] in BLOCKING_IMPACTS]


def problems_on(page, timeout_ms: int) -> list[str]:
    """Widgets that are undefined, failed or not ready, formulas KaTeX rejected, and blocking axe violations."""
    wait_for_widgets(page, timeout_ms)
    problems = []
    for w in widget_states(page):
        if not w["defined"]:
            problems.append(f"<{w['tag']}> is not a defined custom element")
        elif w["state"] == "error":
            problems.append(f"<{w['tag']}> shows an error: {w['message'].strip()}")
        elif w["state"] != "ready":
            problems.append(f"<{w['tag']}> did not become ready (state {w['state']!r}: {w['message'].strip()!r})")
    for formula in page.evaluate("""() => [...document.querySelectorAll(".katex-error")]
                                        .map(el => el.getAttribute("title") || el.textContent)"""):
        problems.append(f"KaTeX could not render a formula: {formula}")
    for v in blocking_axe_violations(page):
        problems.append(f"axe {v['impact']} '{v['id']}' ({v['help']}) on {v['count']} element(s), e.g. "
                        f"{json.dumps(v['targets'])}")
    return problems


class Tour:
    """One tab that visits the pages one after the other."""

    def __init__(self, watched, site_url: str):
        self.watched, self.page, self.site_url = watched, watched.page, site_url.rstrip("/") + "/"
        self.instant = {p for p in PAGES if p == "" or p.endswith("/")}
        self.loaded = False

    def _axe_ready(self) -> None:
        if not self.page.evaluate("typeof window.axe === 'object'"):
            self.page.add_script_tag(path=str(AXE))

    def visit(self, path: str) -> None:
        target = "/" + path
        if not self.loaded or path not in self.instant:
            self.page.goto(self.site_url + path)
            self.loaded = True
        elif self.page.evaluate("location.pathname") != target:
            # Mark the current content, click a same-site link, and wait below until the mark is
            # gone: the new page's content has replaced the old one (or a full load happened).
            self.page.evaluate("""href => {
                document.querySelectorAll("article").forEach(a => a.setAttribute("data-tx-previous-page", ""));
                const a = document.createElement("a"); a.href = href;
                document.body.appendChild(a); a.click(); a.remove(); }""", self.site_url + path)
        self.page.wait_for_function("""([p, t]) => location.pathname === p && document.title === t
                                       && !document.querySelector("[data-tx-previous-page]")""",
                                    arg=[target, page_title(path)], timeout=PAGE_TIMEOUT_MS)
        self.page.wait_for_load_state("load")
        self._axe_ready()


@pytest.fixture(scope="module")
def tour(browser, site_url, request):
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed: {AXE} (run npm ci)")
    watched_page = _watched_page_class(request.config)
    context = browser.new_context()
    watched = watched_page(context, site_url)
    sitemap = local_sitemap(site_url.rstrip("/") + "/", PAGES)
    # Registered after WatchedPage's catch-all route, so it takes precedence for the sitemap.
    context.route("**/sitemap.xml", lambda route: route.fulfill(status=200, content_type="application/xml",
                                                                 body=sitemap))
    yield Tour(watched, site_url)
    context.close()
    watched.check()  # anything that happened after the last page's own check


def test_the_site_has_pages():
    assert len(PAGES) > 3, f"no pages found under {SITE}: build the site first (make site)"


@pytest.mark.parametrize("path", PAGES, ids=[p or "index" for p in PAGES])
def test_page(tour, path):
    start = time.monotonic()
    errors_before, external_before = len(tour.watched.errors), len(tour.watched.external)
    first = not tour.loaded
    tour.visit(path)
    problems = problems_on(tour.page, FIRST_TIMEOUT_MS if first else PAGE_TIMEOUT_MS)
    errors = tour.watched.errors[errors_before:]
    external = tour.watched.external[external_before:]
    problems += [f"console error: {e}" for e in errors]
    problems += [f"request to another origin: {u}" for u in sorted(set(external))]
    # Reported here, for this page; the fixture's final check must not report them again.
    del tour.watched.errors[errors_before:]
    del tour.watched.external[external_before:]
    assert not problems, f"/{path} ({time.monotonic() - start:.1f} s):\n  " + "\n  ".join(problems)


def test_the_checks_catch_what_they_should(page):
    """An undefined tx-* element, a widget in error, a broken formula and an image without text are caught."""
    p = page.goto("sampling/")
    p.add_script_tag(path=str(AXE))
    wait_for_widgets(p, FIRST_TIMEOUT_MS)
    p.evaluate("""() => {
        const article = document.querySelector("article");
        article.insertAdjacentHTML("beforeend",
            '<tx-no-such-widget></tx-no-such-widget><tx-sampling logits="1,x" labels="a,b"></tx-sampling>' +
            '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">');
        const formula = document.createElement("span");
        formula.className = "arithmatex";
        formula.textContent = "\\(\\frac{1}\\)";
        article.appendChild(formula);
        renderMathInElement(formula, {delimiters: [{left: "\\(", right: "\\)", display: false}],
                                      throwOnError: false});
    }""")
    problems = problems_on(p, PAGE_TIMEOUT_MS)
    assert "<tx-no-such-widget> is not a defined custom element" in problems
    assert any(x.startswith("<tx-sampling> shows an error: ⚠ The logits attribute") for x in problems), problems
    assert any("'image-alt'" in x for x in problems), problems
    assert any(x.startswith("KaTeX could not render a formula") for x in problems), problems
