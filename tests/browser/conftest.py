"""Browser-test fixtures: the built site on 127.0.0.1 and a headless Chromium.

Every page is watched: a request to any origin other than the test server, or an
error on the console, fails the test that caused it.
"""

from __future__ import annotations

import json

import pytest

from served import SITE, record_other_origins
from sitebuild.chromium import HEADLESS_ARGS, find_chromium
from sitebuild.serve import serve_in_thread

BASE_ARGS = HEADLESS_ARGS
WEBGPU_ARGS = [
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-angle=swiftshader",
    "--use-webgpu-adapter=swiftshader",
    "--enable-unsafe-swiftshader",
]


@pytest.fixture(scope="session")
def site_url():
    if not (SITE / "index.html").exists():
        pytest.fail("site/ is not built: run `make site` (make test does it)")
    server, url = serve_in_thread(SITE)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


def _launch(playwright_instance, extra_args):
    path = find_chromium()
    if path is None:
        pytest.fail("no Chromium found: run `make browser` or set CHROMIUM")
    return playwright_instance.chromium.launch(executable_path=path, headless=True, args=BASE_ARGS + extra_args)


@pytest.fixture(scope="session")
def browser(playwright_instance):
    b = _launch(playwright_instance, [])
    yield b
    b.close()


@pytest.fixture(scope="session")
def webgpu_browser(playwright_instance):
    b = _launch(playwright_instance, WEBGPU_ARGS)
    yield b
    b.close()


class WatchedPage:
    """A page plus what it did that a test must not allow."""

    def __init__(self, context, site_url):
        self.external: list[str] = []
        self.errors: list[str] = []
        self.expected: list[str] = []  # markers of errors a test provoked on purpose
        record_other_origins(context, [site_url], self.external)
        self.page = context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("response", lambda r: self.errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
        self.site_url = site_url

    def goto(self, path: str):
        self.page.goto(self.site_url + path)
        return self.page

    def expect_errors(self, marker: str):
        """Ignore, until the page closes, errors containing `marker` (ones a test provokes on
        purpose). Late ones count too: parallel downloads can report after the test moved on."""
        self.expected.append(marker)

    def check(self):
        assert not self.external, f"requests to other origins: {json.dumps(sorted(set(self.external)), indent=1)}"
        self.errors[:] = [e for e in self.errors if not any(m in e for m in self.expected)]
        assert not self.errors, f"console errors: {json.dumps(self.errors, indent=1)}"


# Test contexts block the site's service worker (sw.js): it would precache the pages in every
# test, and requests it makes do not pass Playwright's routes, which the fault tests rely on.
# The tests of the worker itself (test_offline.py, `sw_page`) let it run.
NO_SERVICE_WORKER = {"service_workers": "block"}


def _watched(browser, site_url, **options):
    context = browser.new_context(**{**NO_SERVICE_WORKER, **options})
    watched = WatchedPage(context, site_url)
    yield watched
    context.close()
    watched.check()


@pytest.fixture
def page(browser, site_url):
    yield from _watched(browser, site_url)


@pytest.fixture
def sw_page(browser, site_url):
    """A watched page whose context lets the site's service worker run."""
    yield from _watched(browser, site_url, service_workers="allow")


@pytest.fixture
def webgpu_page(webgpu_browser, site_url):
    yield from _watched(webgpu_browser, site_url)
