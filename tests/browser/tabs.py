"""One tab kept for many tests, moved from page to page as a reader's clicks move it.

Most browser tests are about what a widget shows, not about how Python or the model start;
yet a fresh browser context per test starts them again every time (Pyodide with NumPy takes
about 7 s of CPU here, the model runtime 2 to 3 s), which was most of the suite's time. A
``SharedTab`` opens one context for a test module and goes from page to page with MkDocs
Material's *instant navigation*, as a reader's click on a link does: the page content is
swapped without reloading the window, so the page's Python worker and model sessions
carry over. The tests whose subject *is* a start (a missing file, a retry, a first load on
a phone, the service worker) keep a fresh context of their own (``page`` in conftest.py).

Each test sees only what happened during it: ``SharedTab.test()`` reports the console
errors, uncaught errors, failed requests and requests to other origins since the test
began, and forgets the errors it expected.

    @pytest.fixture(scope="module")
    def shared(browser, site_url):
        with SharedTab(browser, site_url) as tab:
            yield tab

    @pytest.fixture
    def tab(shared):
        with shared.test():
            yield shared

    def test_something(tab):
        p = tab.visit("labs/attention/")
"""

from __future__ import annotations

import html
import re
from contextlib import contextmanager

from served import SITE
from watched import NO_SERVICE_WORKER, WatchedPage

PAGE_TIMEOUT_MS = 90_000  # one page's content in place, on a busy 2-core machine
TITLE = re.compile(r"<title>(.*?)</title>", re.S)


def site_pages(site=SITE) -> list[str]:
    """URL paths of every HTML page of the book, relative to the site root ("" for the home page),
    the home page first; not the vendored runtime files nor the bare embed pages."""
    if not site.is_dir():
        return []
    paths = []
    for file in sorted(site.rglob("*.html")):
        rel = file.relative_to(site).as_posix()
        if rel.startswith(("assets/", "embed/")):
            continue
        paths.append(rel.removesuffix("index.html"))
    return sorted(paths, key=lambda p: (p != "", p))


def page_title(path: str) -> str:
    """The <title> of a built page."""
    file = SITE / (path + "index.html" if path == "" or path.endswith("/") else path)
    match = TITLE.search(file.read_text(encoding="utf-8"))
    return html.unescape(match.group(1).strip()) if match else ""


# Pages that instant navigation reaches: those in sitemap.xml (directory pages, not 404.html).
INSTANT = {p for p in site_pages() if p == "" or p.endswith("/")}
# A page without widgets, passed through to show a page afresh that is already shown.
HOP = "reference/references/"


class SharedTab:
    """A watched tab (``WatchedPage``) in a context of its own, kept for many tests."""

    def __init__(self, browser, site_url: str, *, init_scripts: tuple[str, ...] = (), **context_options):
        self.context = browser.new_context(**{**NO_SERVICE_WORKER, **context_options})
        self.watched = WatchedPage(self.context, site_url)
        self.page = self.watched.page
        for script in init_scripts:
            self.page.add_init_script(script)
        self.site_url = site_url.rstrip("/") + "/"
        self.loaded = False

    def __enter__(self) -> SharedTab:
        return self

    def __exit__(self, *exc) -> None:
        self.context.close()

    def expect_errors(self, marker: str) -> None:
        """Ignore errors containing `marker` until the end of this test."""
        self.watched.expect_errors(marker)

    @contextmanager
    def test(self):
        """One test's use of the tab: fails it with what went wrong on the page meanwhile."""
        self.watched.expected.clear()
        mark = self.watched.mark()
        yield self
        problems = self.watched.take_since(mark)
        self.watched.expected.clear()
        assert not problems, "\n".join(problems)

    def visit(self, path: str):
        """Show the page at `path` (relative to the site root) as a reader's click on a link does:
        by instant navigation when a page is already loaded and the sitemap lists `path`, else by
        loading it. A page already shown is left and shown again, so its widgets start afresh.
        Returns the Playwright page once the new page's content is in place."""
        target = "/" + path
        if not self.loaded or path not in INSTANT:
            self.page.goto(self.site_url + path)
            self.loaded = True
        else:
            if self.page.evaluate("location.pathname + location.search") == target:
                self.visit(HOP)
            # Mark the current content, click a same-site link, and wait below until the mark is
            # gone: the new page's content has replaced the old one (or a full load happened).
            self.page.evaluate(
                """href => {
                document.querySelectorAll("article").forEach(a => a.setAttribute("data-tx-previous-page", ""));
                const a = document.createElement("a"); a.href = href;
                document.body.appendChild(a); a.click(); a.remove(); }""",
                self.site_url + path,
            )
        self.page.wait_for_function(
            """([p, t]) => location.pathname === p && document.title === t
                                       && !document.querySelector("[data-tx-previous-page]")""",
            arg=[target, page_title(path)],
            timeout=PAGE_TIMEOUT_MS,
        )
        self.page.wait_for_load_state("load")
        return self.page

    def embed(self, name: str, query: str = ""):
        """Show the bare embed page ``embed/<name>/?<query>``: loaded in full the first time;
        afterwards the embed page already shown becomes it in place, as frame.js makes it from
        that address (its title, body, theme and the widget ``widgetFromParams`` makes), so
        Python and the model carry over. Every embed page is one template
        (test_reader_view.test_embed_pages_differ_only_in_their_widget_title_and_credit); a
        parameter the widget does not take is not reported above it here (a full load does
        that: test_embed.py)."""
        path = f"embed/{name}/" + (f"?{query}" if query else "")
        if not self.loaded or "/embed/" not in self.page.url:
            self.reload(path)
        else:
            self._embed_in_place(path, name)
        self.page.wait_for_function("() => !!document.querySelector('#tx-frame > [data-state]')", timeout=PAGE_TIMEOUT_MS)
        return self.page

    def _embed_in_place(self, path: str, name: str) -> None:
        self.page.evaluate(
            """async ([base, path, html]) => {
            const { widgetFromParams } = await import(base + "assets/tx/embed/v1/frame.js");
            const { define } = await import(base + "assets/tx/embed/v1/widgets.js");
            history.replaceState(null, "", base + path);
            const next = new DOMParser().parseFromString(html, "text/html");
            const tag = next.documentElement.dataset.widget;
            const params = new URLSearchParams(location.search);
            document.title = next.title;
            document.documentElement.dataset.widget = tag;
            document.documentElement.dataset.theme = ["light", "dark"].includes(params.get("theme")) ? params.get("theme") : "auto";
            document.body.replaceWith(document.adoptNode(next.body));
            document.getElementById("tx-frame").replaceChildren(widgetFromParams(tag, params).element);
            define(tag);
        }""",
            [self.site_url, path, (SITE / "embed" / name / "index.html").read_text(encoding="utf-8")],
        )

    def reload(self, path: str):
        """Load the page at `path` in full (a fresh document: its workers start again)."""
        self.page.goto(self.site_url + path)
        self.loaded = True
        return self.page
