"""The widgets embedded in a course page on another origin compute what the site computes.

The course page (``tests/fixtures/course/``) is served on ``localhost`` while the site is on
``127.0.0.1``: another origin and another site, as a course platform is for GitHub Pages.
It embeds three widgets by script tag (``widgets.js``) and three by iframe
(``embed/<name>/``), with the snippets of the "Embed in your course" page, in which the
course server writes the site's address for ``https://SITE``. Each widget's numbers are
compared with CPython or with the same widget on the site's own page; every request must
go to one of the two origins and the console must stay clean.
"""

from __future__ import annotations

import http.server
import json
import math
import re
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from site_under_test import SITE

from demos import attention, bpe, rope, sampling
from served import record_other_origins
from sitebuild.chromium import QUIET_ARGS, find_chromium, resolver_rule
from sitebuild.serve import SiteServer, make_server
from sitebuild.widget_docs import DEFINE
from widget_checks import TOL, assert_close, shown_attention

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "tests" / "fixtures" / "course"
SITE_TOKEN = "https://SITE"
TIMEOUT = 180_000  # ms: three Pythons and two models start at once on a 2-core machine
SCRIPT_TAG = ("tx-sampling", "tx-bpe", "tx-next-token")
IFRAMES = {"rope": "tx-rope", "attention": "tx-attention", "generate": "tx-generate"}
MODEL_JS = SITE / "assets" / "tx" / "runtime" / "model.js"  # as built into the site under test

# conftest.py's arguments, with localhost resolved too (Chromium must reach no other host).
BROWSER_ARGS = [*QUIET_ARGS, resolver_rule("127.0.0.1", "localhost")]
LOOP = "def causal_attention(q, k, v):\n    while True:\n        pass\n"


# ---------------------------------------------------------------- servers and browser


def course_handler(site_url: str, isolated: bool):
    """Serves tests/fixtures/course with the site's address in place of https://SITE."""

    class CourseHandler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - stdlib name
            name = self.path.split("?")[0].lstrip("/") or "index.html"
            path = (COURSE / name).resolve()
            if COURSE.resolve() not in path.parents or not path.is_file():
                self.send_error(404)
                return
            text = path.read_text(encoding="utf-8")
            body = text.replace(SITE_TOKEN + "/", site_url).replace(SITE_TOKEN, site_url.rstrip("/")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            if isolated:
                self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 - stdlib signature
            pass

    return CourseHandler


def serve_course(site_url: str, isolated: bool = False):
    server = SiteServer(("127.0.0.1", 0), course_handler(site_url, isolated))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://localhost:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def course_url(site_url):
    server, url = serve_course(site_url)
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def embed_browser(playwright_instance):
    """Chromium that also resolves localhost (the course page's host)."""
    path = find_chromium()
    if path is None:
        pytest.fail("no Chromium found: run `make browser` or set CHROMIUM")
    b = playwright_instance.chromium.launch(executable_path=path, headless=True, args=BROWSER_ARGS)
    yield b
    b.close()


def _frame_url(request) -> str:
    try:
        return request.frame.url
    except Exception:  # a worker's request has no frame
        return ""


class Watch:
    """Requests to any origin but the allowed ones, console errors and HTTP errors of a context."""

    def __init__(self, context, origins):
        self.external, self.errors = [], []
        record_other_origins(context, origins, self.external)
        context.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        context.on("weberror", lambda e: self.errors.append(f"uncaught: {e.error}"))
        context.on("response", lambda r: self.errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
        self.requests: list[tuple[str, str]] = []  # (url, url of the frame that asked, "" for workers)
        context.on("request", lambda req: self.requests.append((req.url, _frame_url(req))))

    def check(self):
        assert not self.external, f"requests to other origins: {json.dumps(sorted(set(self.external)), indent=1)}"
        assert not self.errors, f"console errors: {json.dumps(self.errors, indent=1)}"


@pytest.fixture(scope="module")
def course(embed_browser, site_url, course_url):
    """The course page, loaded once, every iframe scrolled into view so that it loads."""
    context = embed_browser.new_context()
    watch = Watch(context, [site_url, course_url])
    page = context.new_page()
    page.goto(course_url)
    for frame_id in IFRAMES:
        page.locator(f"#{frame_id}").scroll_into_view_if_needed()
    page.evaluate("() => window.scrollTo(0, 0)")
    yield page, watch
    context.close()
    watch.check()


@pytest.fixture(scope="module")
def site_page(embed_browser, site_url):
    """A page of the site itself, to run the same widgets on their own origin."""
    context = embed_browser.new_context()
    watch = Watch(context, [site_url])
    page = context.new_page()
    page.goto(site_url + "404.html")  # a page of the site with every widget defined and none shown
    page.wait_for_function("() => customElements.get('tx-next-token') && customElements.get('tx-generate')")
    yield page
    context.close()
    watch.check()


def on_site(page, tag, attributes):
    """Put a widget with these attributes on the site's own page; returns its locator."""
    element_id = f"site-{tag}"
    page.evaluate(
        """([tag, id, attributes]) => {
        const el = document.createElement(tag);
        el.id = id;
        for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, v);
        document.querySelector("article").append(el);
    }""",
        [tag, element_id, attributes],
    )
    return page.locator(f"#{element_id}")


def frame_of(page, frame_id):
    return page.frame_locator(f"#{frame_id}")


def wait_widget(scope, selector, condition="true", timeout=TIMEOUT):
    """Wait until the widget is ready (and `condition` holds for it as `el`); errors fail at once."""
    el = scope.locator(selector)
    el.wait_for(state="attached", timeout=timeout)
    el.evaluate(
        f"""(el, timeout) => new Promise((resolve, reject) => {{
        const done = () => {{
            if (el.dataset.state === "error") reject(new Error(el.shadowRoot?.querySelector(".status-text")?.textContent
                                                             || el.textContent));
            else if (el.dataset.state === "ready" && ({condition})) resolve();
            else return false;
            return true;
        }};
        if (done()) return;
        const observer = new MutationObserver(() => {{ if (done()) observer.disconnect(); }});
        observer.observe(el, {{ attributes: true, subtree: true, childList: true }});
        if (el.shadowRoot) observer.observe(el.shadowRoot, {{ attributes: true, subtree: true, childList: true }});
        setTimeout(() => {{
            observer.disconnect();
            const status = el.shadowRoot?.querySelector(".status-text")?.textContent || "";
            reject(new Error(`timed out: ${{el.dataset.state}} ${{JSON.stringify({{...el.dataset}})}} “${{status}}”`));
        }}, timeout);
    }})""",
        timeout,
    )
    return el


def request_of(el):
    return json.loads(el.get_attribute("data-request"))


def widget_tags() -> list[str]:
    """Tags of the custom elements defined by the widget files (some tx-*.js define none)."""
    found = (DEFINE.search(p.read_text(encoding="utf-8")) for p in (ROOT / "site_src" / "widgets").glob("tx-*.js"))
    return sorted(m.group(1) for m in found if m)


def site_merges() -> str:
    """GPT-2's merges.txt as the site serves it."""
    index = json.loads((SITE / "models" / "index.json").read_text())
    model = SITE / "models" / index["default"]
    manifest = json.loads((model / "manifest.json").read_text())
    return (model / manifest["tokenizer"]["merges"]["path"]).read_text(encoding="utf-8")


# ---------------------------------------------------------------- the site's files


def test_site_has_widgets_js_and_a_bare_page_for_every_widget():
    catalog = (SITE / "assets" / "tx" / "embed" / "v1" / "catalog.js").read_text()
    tags = sorted(re.findall(r'^ "(tx-[a-z0-9-]+)": \{', catalog, re.M))
    assert tags == widget_tags()
    assert (SITE / "assets" / "tx" / "embed" / "v1" / "widgets.js").is_file()
    for tag in tags:
        page = (SITE / "embed" / tag.removeprefix("tx-") / "index.html").read_text()
        assert f'data-widget="{tag}"' in page
        assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # only relative addresses
    index = (SITE / "embed" / "index.html").read_text()
    assert all(f'href="{t.removeprefix("tx-")}/"' in index for t in tags)


def test_server_allows_other_origins_and_keeps_isolation_per_server(tmp_path):
    (tmp_path / "index.html").write_text("ok")
    plain, isolated = make_server(tmp_path, coi=False), make_server(tmp_path, coi=True)
    try:
        for server in (plain, isolated):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        headers = {}
        for name, server in (("plain", plain), ("isolated", isolated)):
            with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/index.html") as response:
                headers[name] = response.headers
    finally:
        plain.shutdown()
        isolated.shutdown()
    for h in headers.values():
        assert h["Access-Control-Allow-Origin"] == "*"
        assert h["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert headers["plain"]["Cross-Origin-Embedder-Policy"] is None
    assert headers["isolated"]["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert headers["isolated"]["Cross-Origin-Opener-Policy"] == "same-origin"


# ---------------------------------------------------------------- by script tag


def test_script_tag_loads_only_the_widgets_in_the_page(course, course_url):
    page, watch = course
    for element_id in ("sampling", "bpe"):
        wait_widget(page, f"#{element_id}")
    assert page.evaluate("() => crossOriginIsolated") is False
    widget_module = re.compile(r"/assets/tx/widgets/(tx-[a-z0-9-]+)\.js$")
    modules = {widget_module.search(url).group(1) for url, frame in watch.requests if frame == course_url and widget_module.search(url)}
    assert modules == set(SCRIPT_TAG)
    assert not [url for url, _ in watch.requests if url.endswith("/assets/tx/widgets/index.js")]
    assert page.evaluate("() => customElements.get('tx-rope')") is None  # only in its iframe


def test_sampling_by_script_tag_matches_cpython(course):
    page, _ = course
    widget = wait_widget(page, "#sampling")
    request = request_of(widget)
    assert request == {"temperature": 0.7, "top_k": 5, "top_p": 1}  # from the tag's attributes
    logits = widget.evaluate("el => el.widget.logits")
    probs = [float(x) for x in widget.evaluate("el => [...el.shadowRoot.querySelectorAll('.bar-row')].map(r => r.dataset.prob)")]
    assert probs == pytest.approx(sampling.next_token_distribution(logits=logits, **request)["probs"], abs=TOL)

    # A reader lowers the temperature by keyboard.
    widget.locator('input[name="temperature"]').focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    widget = wait_widget(page, "#sampling", "JSON.parse(el.dataset.request).temperature === 0.6")
    probs = [float(x) for x in widget.evaluate("el => [...el.shadowRoot.querySelectorAll('.bar-row')].map(r => r.dataset.prob)")]
    expected = sampling.next_token_distribution(logits=logits, **request_of(widget))["probs"]
    assert probs == pytest.approx(expected, abs=TOL)


def test_bpe_by_script_tag_matches_cpython(course):
    page, _ = course
    widget = wait_widget(page, "#bpe")
    request = request_of(widget)
    assert request["text"] == " embedding"
    assert json.loads(widget.get_attribute("data-tokens")) == bpe.apply_merges(" embedding", site_merges())["tokens"]


@pytest.mark.xfail(
    MODEL_JS.is_file() and "createModuleWorker" not in MODEL_JS.read_text(encoding="utf-8"),
    strict=True,
    reason="site_src/runtime/model.js still starts its worker with new Worker(...), which "
    "browsers refuse for a script on another origin; switch it to createModuleWorker",
)
def test_next_token_by_script_tag_matches_the_site(course, site_page):
    page, _ = course
    rows = "el => [...el.shadowRoot.querySelectorAll('tbody tr')].map(r => [Number(r.dataset.id), Number(r.dataset.prob)])"
    filled = "el.shadowRoot.querySelectorAll('tbody tr').length > 0"
    widget = wait_widget(page, "#next-token", filled)
    assert widget.get_attribute("data-backend") == "wasm"
    embedded = widget.evaluate(rows)
    on_site(site_page, "tx-next-token", {"prompt": "The course starts with", "backend": "wasm"})
    expected = wait_widget(site_page, "#site-tx-next-token", filled).evaluate(rows)
    assert [i for i, _ in embedded] == [i for i, _ in expected]
    assert [p for _, p in embedded] == pytest.approx([p for _, p in expected], abs=1e-6)


def test_widgets_never_write_into_the_course_pages_address(course):
    """On the site a widget keeps its inputs in the address (url-state.js); a course page's is its own."""
    page, _ = course
    before = page.url
    widget = wait_widget(page, "#next-token", "el.shadowRoot.querySelectorAll('tbody tr').length > 0")
    widget.locator("textarea").fill("The course goes on")
    # The widget keeps its state in the same step as it reruns, 250 ms after typing: once its
    # table is the new prompt's, it has written (or not) to the address. Waiting for that also
    # leaves no redraw under way to move the iframes below while a later test clicks in them.
    wait_widget(page, "#next-token", "el.shadowRoot.querySelector('.tokens').textContent.includes('goes') && el.dataset.state === 'ready'")
    assert page.url == before


# ---------------------------------------------------------------- by iframe


def wait_sized(page, frame_id):
    """Scroll the iframe into view and wait until its height is its content's (resize messages)."""
    page.locator(f"#{frame_id}").scroll_into_view_if_needed()
    content = frame_of(page, frame_id).locator("html")
    page.wait_for_function(
        """([id, h]) => Math.abs(document.getElementById(id).getBoundingClientRect().height - h) <= 1""",
        arg=[frame_id, math.ceil(content.evaluate("el => el.getBoundingClientRect().height"))],
        timeout=30_000,
    )


def test_rope_iframe_matches_cpython_in_dark_and_fits_its_content(course):
    page, _ = course
    frame = frame_of(page, "rope")
    widget = wait_widget(frame, "tx-rope")
    request = request_of(widget)
    assert (request["d"], request["m"], request["n"]) == (16, 9, 3)  # from the query string
    expected = rope.rope_view(**request)
    for attr, key in (("data-theta", "theta"), ("data-score", "score"), ("data-relative-score", "relative_score")):
        assert float(widget.locator(f"[{attr}]").get_attribute(attr)) == pytest.approx(expected[key], rel=TOL, abs=TOL)
    points = widget.evaluate("""el => [...el.shadowRoot.querySelectorAll('circle.pt')].map(c => c.dataset.similarity)""")
    assert_close([float(s) for s in points], expected["similarity"])

    scheme = frame.locator("html").evaluate("el => [el.dataset.theme, getComputedStyle(el).colorScheme]")
    assert scheme == ["dark", "dark"]
    card = widget.evaluate("el => getComputedStyle(el.shadowRoot.querySelector('.card')).backgroundColor")
    assert sum(int(c) for c in re.findall(r"\d+", card)[:3]) < 3 * 80, card  # a dark card
    wait_sized(page, "rope")


def test_attention_iframe_takes_query_parameters_and_matches_cpython(course):
    page, _ = course
    frame = frame_of(page, "attention")
    widget = wait_widget(frame, "tx-attention")
    request = request_of(widget)
    assert request["sentence"] == "the model reads every word" and request["heads"] == 3 and request["causal"] is True
    expected = attention.explore(**request)
    weights, masked = shown_attention(widget)
    assert_close(weights, expected["heads"][0]["weights"])
    assert masked.tolist() == (~np.array(expected["allowed"])).tolist()
    assert frame.locator("html").evaluate("el => getComputedStyle(el).colorScheme") == "light"
    wait_sized(page, "attention")


def test_generate_iframe_matches_the_site(course, site_page):
    page, _ = course
    frame = frame_of(page, "generate")
    widget = wait_widget(frame, "tx-generate")
    wait_sized(page, "generate")  # in view, at its content's height: nothing moves under the click
    widget.locator("button.go").click()
    widget = wait_widget(frame, "tx-generate", "el.dataset.runs === '1' && el.dataset.running === 'false'")
    embedded = json.loads(widget.get_attribute("data-ids"))
    assert len(embedded) == 8 and widget.get_attribute("data-backend") == "wasm"

    reference = on_site(site_page, "tx-generate", {"prompt": "The course starts with", "temperature": "0", "max-new-tokens": "8", "backend": "wasm"})
    wait_widget(site_page, "#site-tx-generate")
    reference.locator("button.go").click()
    reference = wait_widget(site_page, "#site-tx-generate", "el.dataset.runs === '1' && el.dataset.running === 'false'")
    assert embedded == json.loads(reference.get_attribute("data-ids"))
    wait_sized(page, "generate")


# ---------------------------------------------------------------- the bare pages and the docs page


# Every bare page reaching "ready", at both widths and in both themes: test_reader_view.test_embed_page.


def test_bare_page_reports_an_unknown_parameter(page):
    p = page.goto("embed/sampling/?temperture=0.5&theme=dark")
    note = p.locator(".tx-note")
    note.wait_for()
    assert "“temperture”" in note.inner_text() and "temperature" in note.inner_text()
    assert p.locator("html").get_attribute("data-theme") == "dark"
    assert p.locator("tx-sampling").get_attribute("temperature") is None
    assert p.evaluate("() => window.parent === window")  # not framed: no resize messages


def test_isolated_course_page_keeps_isolation_and_interrupts_python(embed_browser, site_url):
    """A course page sending COOP/COEP stays isolated with the site's files (CORP + CORS), and
    the Python worker, started from a Blob, still shares the interrupt buffer with it."""
    server, url = serve_course(site_url, isolated=True)
    context = embed_browser.new_context()
    watch = Watch(context, [site_url, url])
    try:
        page = context.new_page()
        page.goto(url + "isolated.html")
        widget = wait_widget(page, "tx-spot-the-bug", "el.dataset.bug")
        assert page.evaluate("() => crossOriginIsolated") is True
        assert widget.get_attribute("data-interrupt") == "interrupt"
        widget.locator("textarea.code").fill(LOOP)
        widget.locator('button[name="check"]').click()
        page.wait_for_function("() => document.querySelector('tx-spot-the-bug').dataset.result === 'stopped'", timeout=60_000)
        assert "Python was interrupted" in widget.locator(".message").inner_text()
    finally:
        context.close()
        server.shutdown()
    watch.check()


def test_embed_page_builds_snippets_with_this_sites_address(page, site_url):
    p = page.goto("embed-in-your-course/")
    builder = p.locator("tx-embed-builder")
    builder.wait_for()
    article = p.locator("article").inner_text()
    assert SITE_TOKEN not in article
    assert f'src="{site_url}assets/tx/embed/v1/widgets.js"' in article

    # Every widget is in the attribute table, and the sizes table has numbers.
    for tag in widget_tags():
        assert f"<{tag}>" in article
    assert re.search(r"Python \(Pyodide[^\n]*\d+\.\d MB", article)

    builder.locator('select[name="widget"]').select_option("tx-rope")
    builder.locator('input[data-attr="d"]').fill("16")
    builder.locator('select[name="theme"]').select_option("dark")
    # Typing updates after a pause, a choice at once: wait for the snippets with both.
    p.wait_for_function("() => document.querySelector('tx-embed-builder').dataset.src.endsWith('?d=16&theme=dark')")
    assert builder.get_attribute("data-script") == (
        f'<script type="module" src="{site_url}assets/tx/embed/v1/widgets.js"></script>\n<tx-rope d="16"></tx-rope>'
    )
    assert f'src="{site_url}embed/rope/?d=16&amp;theme=dark"' in builder.get_attribute("data-iframe")
    assert builder.get_attribute("data-src") == f"{site_url}embed/rope/?d=16&theme=dark"

    # The preview is the iframe snippet at work: the bare page, sized by the snippet's listener.
    p.wait_for_function(
        """() => {
        const b = document.querySelector('tx-embed-builder');
        return b.dataset.previewWidget === 'tx-rope'
            && b.querySelector('iframe').style.height === b.dataset.previewHeight + 'px';
    }""",
        timeout=30_000,
    )
    frame = p.frame_locator("iframe.tx-preview").locator("html")
    assert frame.get_attribute("data-theme") == "dark" and frame.get_attribute("data-widget") == "tx-rope"
