"""Browser-test fixtures: the built site on 127.0.0.1 and a headless Chromium.

Every page is watched: a request to any origin other than the test server, or an
error on the console, fails the test that caused it.
"""

from __future__ import annotations

import pytest

from bad_input_harness import WidgetPage
from served import SITE
from sitebuild.chromium import HEADLESS_ARGS, WEBGPU_ARGS, find_chromium
from sitebuild.serve import serve_in_thread
from tabs import SharedTab
from watched import NO_SERVICE_WORKER, WatchedPage

BASE_ARGS = HEADLESS_ARGS


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


@pytest.fixture(scope="session")
def shared_tabs():
    """The tabs that several test modules share, by the name in their ``SHARED_TAB``."""
    tabs: dict[str, SharedTab] = {}
    yield tabs
    for tab in tabs.values():
        tab.context.close()


@pytest.fixture(scope="module")
def shared_tab(request, browser, site_url, shared_tabs):
    """One tab for the whole test module (tabs.py): Python and the model start once in it. A
    module with ``SHARED_TAB = "<name>"`` shares the tab of that name with the other modules that
    name it (tests/conftest.py puts them in one xdist group, so on one worker, in turn)."""
    name = getattr(request.module, "SHARED_TAB", None)
    if name is None:
        with SharedTab(browser, site_url) as tab:
            yield tab
        return
    if name not in shared_tabs:
        shared_tabs[name] = SharedTab(browser, site_url)
    yield shared_tabs[name]


@pytest.fixture(scope="session")
def widget_page(browser, site_url):
    """One embed page per widget family for the bad-input and keyboard sweeps (bad_input_harness),
    shared by both files (``SHARED_TAB``): each test puts its widget in it, so Python and the model
    start once per family."""
    shared = WidgetPage(browser, site_url)
    yield shared
    shared.close()


@pytest.fixture
def tab(shared_tab):
    """The module's shared tab, for one test: fails it with what went wrong meanwhile."""
    with shared_tab.test():
        yield shared_tab
