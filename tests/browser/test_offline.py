"""The book offline after one visit: the service worker, its versioned cache, the offline page.

One browser context visits a page with a Python widget and a page with the model, as a
reader would, until the service worker controls the page and has stored the runtimes. Then
the network goes away, in the most realistic way: the test server is shut down (its port
refuses connections). Playwright's ``context.set_offline`` is not used: it does not reach
requests that a service worker makes in every Playwright/Chromium version. The visited
pages, and pages never opened before, must load and every widget on them reach
``data-state="ready"``.

A second server on the same port (the same origin, so the same registration and caches)
then serves the site with another build version: the browser installs the new service
worker, which deletes the previous build's cache and keeps download.js's model cache.

The site under test is ``TX_SITE`` (default ``site/``), as for the other browser tests.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import Error as PlaywrightError

from served import SITE
from sitebuild.serve import serve_in_thread

pytestmark = pytest.mark.browser

PYTHON_PAGE = "labs/model-size/"  # <tx-size-calc>
MODEL_PAGE = "generate/"  # <tx-generate>
UNVISITED = ("labs/bpe/", "offline/", "attention/one-head/")
TIMEOUT_MS = 180_000
OFFLINE_FACTS = (
    json.loads(re.search(r"export const OFFLINE = (\{.*\});", (SITE / "assets/tx/runtime/offline-build.js").read_text()).group(1))
    if (SITE / "assets/tx/runtime/offline-build.js").is_file()
    else {}
)

ALL_READY = """() => {
  const els = [...document.querySelectorAll("*")].filter((e) => e.localName.startsWith("tx-") && e.localName !== "tx-embed-builder");
  return els.length > 0 && els.every((e) => e.dataset.state === "ready" || e.dataset.state === "error");
}"""
STATES = """() => [...document.querySelectorAll("*")].filter((e) => e.localName.startsWith("tx-") && e.localName !== "tx-embed-builder")
  .map((e) => ({ tag: e.localName, state: e.dataset.state, text: e.shadowRoot ? e.shadowRoot.textContent.slice(0, 300) : "" }))"""
GROUPS_STORED = """async (groups) => {
  const { OFFLINE } = await import(location.origin + "/assets/tx/runtime/offline-build.js");
  const out = {};
  for (const name of groups) {
    let have = 0;
    for (const [path] of OFFLINE.groups[name].files) if (await caches.match(new URL(path, location.origin + "/").href)) have++;
    out[name] = [have, OFFLINE.groups[name].files.length];
  }
  return out;
}"""


def open_ready(p, url: str) -> list[dict]:
    """Load a page and wait until every widget on it is ready; returns their states."""
    p.goto(url)
    p.wait_for_function(ALL_READY, timeout=TIMEOUT_MS)
    states = p.evaluate(STATES)
    assert all(s["state"] == "ready" for s in states), states
    return states


def wait_stored(p, groups, timeout_s: float = 120) -> dict:
    """Until the service worker's cache holds every file of these groups."""
    deadline = time.monotonic() + timeout_s
    while True:
        stored = p.evaluate(GROUPS_STORED, list(groups))
        if all(have == want for have, want in stored.values()) or time.monotonic() > deadline:
            return stored
        time.sleep(0.5)


@pytest.fixture
def offline_context(browser):
    """A fresh context (its own Cache Storage and service workers) and its server, stoppable."""
    if not OFFLINE_FACTS:
        pytest.fail(f"{SITE} has no offline build facts: rebuild the site")
    server, url = serve_in_thread(SITE)
    context = browser.new_context()
    external = []
    context.on("request", lambda r: None if r.url.startswith((url.rstrip("/"), "data:", "blob:")) else external.append(r.url))
    state = {"server": server, "url": url, "context": context}
    yield state
    context.close()
    state["server"].shutdown()
    state["server"].server_close()
    assert not external, external


def stop(server) -> None:
    """The network is gone: the server stops and its port refuses connections."""
    server.shutdown()
    server.server_close()


def test_widgets_reach_ready_offline_after_one_visit(offline_context):
    url, context = offline_context["url"], offline_context["context"]
    p = context.new_page()
    errors = []
    p.on("pageerror", lambda e: errors.append(str(e)))

    # The first visit: a Python page, then a model page (taken over by the service worker).
    open_ready(p, url + PYTHON_PAGE)
    p.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    open_ready(p, url + MODEL_PAGE)
    stored = wait_stored(p, ["pages", "python", "model-runtime"])
    assert all(have == want for have, want in stored.values()), stored
    cache = OFFLINE_FACTS["cache"]
    assert cache in p.evaluate("caches.keys()")
    assert p.evaluate("crossOriginIsolated") is True
    sizes = p.evaluate("""async () => {
      const out = {};
      for (const name of await caches.keys()) {
        let bytes = 0;
        const c = await caches.open(name);
        for (const r of await c.keys()) bytes += (await (await c.match(r)).blob()).size;
        out[name] = bytes;
      }
      return out; }""")
    print("Cache Storage after one visit (MB):", {k: round(v / 1e6, 2) for k, v in sizes.items()})

    stop(offline_context["server"])
    with pytest.raises(PlaywrightError):  # really offline: nothing answers on the port
        context.request.get(url + "index.html", timeout=5_000)

    # Offline: the visited pages, then pages never opened, with their widgets.
    for path in (PYTHON_PAGE, MODEL_PAGE, *UNVISITED):
        states = open_ready(p, url + path)
        assert p.evaluate("crossOriginIsolated") is True, path  # the worker's headers
        assert len(p.locator("article h1").inner_text()) > 3, path
        if path == MODEL_PAGE:
            out = p.locator("tx-generate")
            assert out.get_attribute("data-state") == "ready"
        if path == "offline/":
            rows = {
                r["group"]: r
                for r in p.evaluate("""() => [...document.querySelector("tx-offline").shadowRoot
                .querySelectorAll("tr[data-group]")].map((r) => ({ group: r.dataset.group, offline: r.dataset.offline, bytes: +r.dataset.bytes }))""")
            }
            assert {g: rows[g]["offline"] for g in ("pages", "python", "model-runtime", "model-weights")} == {
                "pages": "yes",
                "python": "yes",
                "model-runtime": "yes",
                "model-weights": "yes",
            }, rows
            assert p.locator("tx-offline").get_attribute("data-worker") == "active"
            print("Offline page, bytes per part (MB):", {g: round(r["bytes"] / 1e6, 2) for g, r in rows.items()})
        print(path, [s["tag"] for s in states])
    # A page the build does not have: the worker's own offline notice, not the browser's error page.
    p.goto(url + "no-such-page/")
    assert "You are offline" in p.locator("h1").inner_text()
    assert not errors, errors


def test_a_new_build_replaces_the_old_cache(offline_context, tmp_path):
    """Same origin, another build version: the new worker deletes the old build's cache."""
    url, context = offline_context["url"], offline_context["context"]
    p = context.new_page()
    p.goto(url + "offline/")
    p.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    old = OFFLINE_FACTS["cache"]
    assert old in p.evaluate("caches.keys()")
    p.evaluate("""async () => { const c = await caches.open("tx-models-v1"); await c.put("/tx-test-model-entry", new Response("x")); }""")

    # The "next build": every file the same but sw.js, whose version and cache name differ.
    new_version = "0123456789abcdef"
    for entry in SITE.iterdir():
        if entry.name != "sw.js":
            (tmp_path / entry.name).symlink_to(entry)
    source = (SITE / "sw.js").read_text()
    (tmp_path / "sw.js").write_text(source.replace(OFFLINE_FACTS["version"], new_version))
    port = offline_context["server"].server_address[1]
    stop(offline_context["server"])
    offline_context["server"], url2 = serve_in_thread(tmp_path, port=port)
    assert url2 == url

    p.reload()  # the browser checks sw.js on navigation, finds new bytes and installs them
    deadline = time.monotonic() + 60
    while True:
        names = p.evaluate("caches.keys()")
        if old not in names and "tx-site-" + new_version in names or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "tx-models-v1" in names, names  # download.js's model cache is not the worker's to delete
    assert [n for n in names if n.startswith(OFFLINE_FACTS["cachePrefix"])] == ["tx-site-" + new_version], names


def test_the_button_makes_everything_available_offline(offline_context):
    """On the offline page of a fresh browser: every part "no" or "partly", then the button."""
    url, context = offline_context["url"], offline_context["context"]
    p = context.new_page()
    p.goto(url + "offline/")
    widget = p.locator("tx-offline")
    p.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    p.wait_for_function(
        "() => document.querySelector('tx-offline').dataset.worker === 'active' && document.querySelector('tx-offline').dataset.state === 'ready'",
        timeout=60_000,
    )
    button = widget.locator("button.fill")
    assert button.inner_text() in ("Make everything available offline", "Check again for missing files")
    button.click()
    p.wait_for_function(
        "() => document.querySelector('tx-offline').dataset.state === 'ready'"
        " && !document.querySelector('tx-offline').shadowRoot.querySelector('button.fill').disabled",
        timeout=TIMEOUT_MS,
    )
    rows = p.evaluate("""() => Object.fromEntries([...document.querySelector("tx-offline").shadowRoot
        .querySelectorAll("tr[data-group]")].map((r) => [r.dataset.group, [r.dataset.offline, +r.dataset.bytes]]))""")
    assert all(offline == "yes" for offline, _ in rows.values()), rows
    assert "Everything is available offline." in widget.locator(".status-text").inner_text()
    print("After the button (MB):", {g: round(b / 1e6, 2) for g, (_, b) in rows.items()})
