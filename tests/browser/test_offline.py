"""The book offline after one visit: the service worker, its versioned cache, the offline page.

A fresh browser context visits pages as a reader does, in several orders: each page left as
soon as its widgets are ready, or as soon as it has started its runtime, while that still
loads, and never a wait for the service worker to control a page. The reader stays on the last page
until it says what is available offline (the notice of ``runtime/sw-register.js``). Then the
network goes away, in the most realistic way: the test server is shut down (its port refuses
connections). Playwright's ``context.set_offline`` is not used: it does not reach requests
that a service worker makes in every Playwright/Chromium version. Every visited page, and
never-visited pages with each kind of widget (Python, the model, the pipeline's figures),
must load and every widget on them reach ``data-state="ready"``: the first by loading it,
the others by a reader's click (Material's instant navigation). A runtime the visit never
used says so in one sentence offline instead of a download error.

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

from reader import PHONE_WIDTH, SHOTS, bad_values, overflow
from served import SITE
from sitebuild.serve import serve_in_thread
from tabs import SharedTab

pytestmark = pytest.mark.browser

TIMEOUT_MS = 180_000
OFFLINE_FACTS = (
    json.loads(re.search(r"export const OFFLINE = (\{.*\});", (SITE / "assets/tx/runtime/offline-build.js").read_text()).group(1))
    if (SITE / "assets/tx/runtime/offline-build.js").is_file()
    else {}
)

READY = "ready"  # the reader moves on as soon as the page's widgets are ready
# Or as soon as the page has started its runtime, while that still loads: once the page has
# recorded it for the offline copy (sw-register.js's lists in localStorage), Python's worker or
# the model's files. A fixed stay (it was one second) raced the page's start on a busy machine:
# left before it recorded anything, the visit had used nothing to store.
STARTED = {
    "python": "() => JSON.parse(localStorage.getItem('tx-offline-used') || '[]').some((url) => url.endsWith('/python-worker.js'))",
    "model": "() => JSON.parse(localStorage.getItem('tx-offline-files') || '[]').length > 0",
}
# The orders a reader visits in: (page, how long they stay: READY or a STARTED key); they stay
# on the last page until it says what is available offline.
ORDERS = {
    "figure, lab, inside, generate": ["pipeline/05c-attention/", "labs/attention/", "inside/induction-heads/", "generate/"],
    "model first, Python page left once Python starts": ["generate/", ("labs/model-size/", "python"), "reference/references/"],
    "Python first, model page left once its files are asked for": ["labs/model-size/", ("generate/", "model"), "offline/"],
}
# Never visited, then read offline: a Python widget, a model widget beside a Python one, a
# pipeline figure (the figures' weights and tables, beside a Python question) and a "Looking
# inside" widget (the inspect graph).
FIGURE, INSIDE = "pipeline/05e-mlp/", "inside/logit-lens/"
UNVISITED = ("attention/one-head/", "attention/parallelism/", FIGURE, INSIDE)
# What they say offline when no page of their kind was opened during the visit: the files they
# read (the figures' compact q4x weights, the inspect graph) were never used, so not stored.
NOT_SAVED = {
    FIGURE: ("tx-stage-mlp", "pipeline/", "The weights this figure reads are not saved for offline use yet: open this page once online."),
    INSIDE: ("tx-logit-lens", "inside/", "The model's “Looking inside” graph is not saved for offline use yet: open this page once online."),
}
# What the visits above use, by the service worker's group names (offline_hook.GROUPS), and
# the model's weights (runtime/download.js's cache), as the notice names them.
USED_GROUPS = ("pages", "python", "model-runtime", "model-data")
WEIGHTS = "Model weights"

ALL_READY = """() => {
  const els = [...document.querySelectorAll("*")].filter((e) => e.localName.startsWith("tx-") && e.localName !== "tx-embed-builder");
  return els.length > 0 && els.every((e) => e.dataset.state === "ready" || e.dataset.state === "error");
}"""
STATES = """() => [...document.querySelectorAll("*")].filter((e) => e.localName.startsWith("tx-") && e.localName !== "tx-embed-builder")
  .map((e) => ({ tag: e.localName, state: e.dataset.state,
                 text: e.shadowRoot ? (e.shadowRoot.querySelector(".status-text") || e.shadowRoot).textContent.trim().slice(0, 300) : "" }))"""
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
MODEL_CACHE_BYTES = """async () => { let n = 0; const c = await caches.open("tx-models-v1");
  for (const r of await c.keys()) n += (await (await c.match(r)).blob()).size; return n; }"""
NOTICE = ".tx-offline-notice"
# The notice names every part stored (their labels, from the build) once they all are.
NOTICE_NAMES = """labels => { const n = document.querySelector(".tx-offline-notice");
  return !!n && labels.every((l) => n.textContent.includes(l)); }"""


def wait_ready(p) -> list[dict]:
    """Until every widget on the page is ready or shows an error; returns their states."""
    p.wait_for_function(ALL_READY, timeout=TIMEOUT_MS)
    return p.evaluate(STATES)


def all_ready(p, path: str) -> None:
    states = wait_ready(p)
    assert all(s["state"] == "ready" for s in states), (path, states)


PHONE = {"viewport": {"width": PHONE_WIDTH, "height": 740}, "is_mobile": True, "has_touch": True, "device_scale_factor": 1}


@pytest.fixture
def offline_tab(browser, request):
    """A fresh tab (its own context, Cache Storage and service workers) and its server, stoppable;
    `request.param` (indirect parametrization) adds context options, such as a phone's."""
    if not OFFLINE_FACTS:
        pytest.fail(f"{SITE} has no offline build facts: rebuild the site")
    server, url = serve_in_thread(SITE)
    tab = SharedTab(browser, url, service_workers="allow", **getattr(request, "param", {}))
    state = {"server": server, "url": url, "tab": tab, "context": tab.context}
    yield state
    tab.context.close()
    state["server"].shutdown()
    state["server"].server_close()
    assert not tab.watched.external, tab.watched.external


def stop(server) -> None:
    """The network is gone: the server stops and its port refuses connections."""
    server.shutdown()
    server.server_close()


def go_offline(state) -> None:
    stop(state["server"])
    with pytest.raises(PlaywrightError):  # really offline: nothing answers on the port
        state["context"].request.get(state["url"] + "index.html", timeout=5_000)


def visit(state, order: list) -> dict:
    """The reader's visit in `order`, without waiting for the service worker; returns the
    notice's text on the last page and how long the visit took until it (seconds)."""
    p = state["tab"].page
    labels = [OFFLINE_FACTS["groups"][g]["label"] for g in USED_GROUPS] + [WEIGHTS]
    t0 = time.monotonic()
    for i, step in enumerate(order):
        path, stay = step if isinstance(step, tuple) else (step, READY)
        p.goto(state["url"] + path)
        if i == len(order) - 1:
            p.wait_for_function(NOTICE_NAMES, arg=labels, timeout=TIMEOUT_MS)
        elif stay == READY:
            all_ready(p, path)
        else:
            p.wait_for_function(STARTED[stay], timeout=TIMEOUT_MS)
    return {"notice": p.locator(NOTICE).inner_text(), "seconds": round(time.monotonic() - t0, 1)}


@pytest.mark.parametrize("order", list(ORDERS))
def test_what_a_visit_used_works_offline_whatever_the_order(offline_tab, order):
    tab = offline_tab["tab"]
    seen = visit(offline_tab, ORDERS[order])
    p = tab.page
    stored = p.evaluate(GROUPS_STORED, list(USED_GROUPS))
    assert all(have == want for have, want in stored.values()), stored
    weights = p.evaluate(MODEL_CACHE_BYTES)
    size = re.search(r"\(([\d.]+) MB in this browser\)", seen["notice"])
    assert size and float(size.group(1)) == pytest.approx((sum(OFFLINE_FACTS["groups"][g]["bytes"] for g in USED_GROUPS) + weights) / 1e6, abs=0.05), seen[
        "notice"
    ]
    print(f"\n{order}: notice after {seen['seconds']} s: {seen['notice']!r}")

    go_offline(offline_tab)
    visited = [step[0] if isinstance(step, tuple) else step for step in ORDERS[order]]
    for i, path in enumerate(dict.fromkeys([*visited, *UNVISITED])):
        if i == 0:
            p.goto(offline_tab["url"] + path)  # a page opened afresh, from the offline copy
            assert p.evaluate("crossOriginIsolated") is True, path  # the worker's headers
        else:
            tab.visit(path)
        assert len(p.locator("article h1").inner_text()) > 3, path
        tag, section, sentence = NOT_SAVED.get(path, (None, None, None))
        if tag and not any(v.startswith(section) for v in visited):
            tab.expect_errors("net::ERR_CONNECTION_REFUSED")  # its files, asked of the server that is gone
            states = wait_ready(p)
            said = [s for s in states if s["tag"] == tag]
            assert said and all(s["state"] == "error" and sentence in s["text"] for s in said), states
            assert all(s["state"] == "ready" for s in states if s["tag"] != tag), states
        elif path != "reference/references/":
            all_ready(p, path)
        if path == "offline/":
            rows = p.evaluate("""() => Object.fromEntries([...document.querySelector("tx-offline").shadowRoot
                .querySelectorAll("tr[data-group]")].map((r) => [r.dataset.group, r.dataset.offline]))""")
            assert rows == {**{g: "yes" for g in USED_GROUPS}, "model-weights": "yes"}, rows
            assert p.locator("tx-offline").get_attribute("data-worker") == "active"
    problems = tab.watched.take_since((0, 0))
    assert not problems, problems
    # A page the build does not have: the worker's own offline notice (HTTP 503), not the browser's error page.
    tab.expect_errors("503")
    p.goto(offline_tab["url"] + "no-such-page/")
    assert "You are offline" in p.locator("h1").inner_text()


@pytest.mark.parametrize("offline_tab", [PHONE], ids=["phone"], indirect=True)
def test_a_runtime_never_used_says_so_offline(offline_tab):
    """On a phone, only the model used: the notice fits the screen and closes; offline, a Python
    widget says in one sentence that Python is not stored, instead of naming a download that
    failed; the model's page still works."""
    tab = offline_tab["tab"]
    p = tab.page
    p.goto(offline_tab["url"] + "generate/")
    labels = [OFFLINE_FACTS["groups"][g]["label"] for g in ("pages", "model-runtime", "model-data")] + [WEIGHTS]
    p.wait_for_function(NOTICE_NAMES, arg=labels, timeout=TIMEOUT_MS)
    notice = p.locator(NOTICE)
    assert OFFLINE_FACTS["groups"]["python"]["label"] not in notice.inner_text()
    assert not overflow(p) and not bad_values(p), (overflow(p), bad_values(p))
    box = notice.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE_WIDTH, box
    SHOTS.mkdir(parents=True, exist_ok=True)
    p.screenshot(path=str(SHOTS / "offline-notice-phone.png"))
    notice.get_by_role("button", name="Close this notice").click()
    notice.wait_for(state="detached")

    go_offline(offline_tab)
    tab.expect_errors("Failed to load resource")  # the Python files the worker does not hold
    tab.expect_errors("python-worker.js")
    tab.visit("attention/one-head/")
    states = wait_ready(p)
    assert [s["state"] for s in states] == ["error"], states
    assert states[0]["text"].startswith("⚠ Python is not saved for offline use yet: open this page once online.") or (
        "Python is not saved for offline use yet: open this page once online." in states[0]["text"]
    ), states
    tab.visit("generate/")
    all_ready(p, "generate/")
    # Speculative decoding loads another variant and a draft, neither stored by this visit: said so too.
    tab.visit("decoding/speculative/")
    states = [s for s in wait_ready(p) if s["tag"] == "tx-speculative"]
    assert states and all(s["state"] == "error" and "not saved for offline use yet: open this page once online." in s["text"] for s in states), states


def test_a_new_build_replaces_the_old_cache(offline_tab, tmp_path):
    """Same origin, another build version: the new worker deletes the old build's cache."""
    url = offline_tab["url"]
    p = offline_tab["tab"].page
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
    port = offline_tab["server"].server_address[1]
    stop(offline_tab["server"])
    offline_tab["server"], url2 = serve_in_thread(tmp_path, port=port)
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


def test_the_button_makes_everything_available_offline(offline_tab):
    """On the offline page of a fresh browser: every part "no" or "partly", then the button."""
    url = offline_tab["url"]
    p = offline_tab["tab"].page
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
    weights = widget.locator('tr[data-group="model-weights"]')
    assert weights.get_attribute("data-draft") == "yes" and "; draft: q" in weights.inner_text()

    # On a phone the table fits, and a header wraps only between its words (it used to read
    # "Availabl e" and "Sto red"): each header's text takes at most one line per word.
    size = p.viewport_size
    p.set_viewport_size({"width": PHONE_WIDTH, "height": 740})
    assert not overflow(p), overflow(p)
    headers = p.evaluate("""() => [...document.querySelector("tx-offline").shadowRoot.querySelectorAll("thead th")].map((th) => {
        const range = document.createRange();
        range.selectNodeContents(th);
        return [th.textContent.trim(), new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
    })""")
    p.set_viewport_size(size)
    assert [name for name, _ in headers] == ["Part", "Available offline", "Stored", "Full size"]
    for name, lines in headers:
        assert lines <= len(name.split()), f"the header {name!r} takes {lines} lines at {PHONE_WIDTH} px"

    # The button stored what a never-visited model widget needs beyond the default variant:
    # speculative decoding's batch-invariant variant and its draft, which run offline.
    go_offline(offline_tab)
    tab = offline_tab["tab"]
    tab.visit("decoding/speculative/")
    spec = p.locator("tx-speculative")
    p.wait_for_function("() => document.querySelector('tx-speculative').dataset.state === 'ready'", timeout=TIMEOUT_MS)
    spec.locator('[name="maxNewTokens"]').fill("4")
    spec.locator("button.go").click()
    p.wait_for_function("() => Number(document.querySelector('tx-speculative').dataset.runs) > 0", timeout=TIMEOUT_MS)
    assert spec.get_attribute("data-state") == "ready", spec.locator(".status").inner_text()
    assert len(json.loads(spec.get_attribute("data-tokens"))) == 4
