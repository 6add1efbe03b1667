"""Every page of the built site, as a reader sees it: on a desktop and on a phone, light and dark.

For every HTML page of the site under test (``TX_SITE``, default ``site/``), on each device
(a 1280 px desktop window and a 375 px phone in mobile emulation), one test:

* the page loads with no console error, no failed request and no request to another
  origin (the same ``WatchedPage`` checks as the ``page`` fixture of ``conftest.py``,
  attributed to the page that caused them);
* every ``tx-*`` element on it is a defined custom element and reaches
  ``data-state="ready"``; a widget that shows an error fails the test with its message;
* every formula renders (no KaTeX error element);
* in the light and in the dark scheme, no visible text (the page's and every widget's
  shadow root's) shows ``[object Object]``, ``undefined``, ``NaN``, ``Infinity`` or ``null``
  where a value belongs (``reader.bad_values``);
* nothing makes the page wider than the viewport (wide tables and figures scroll inside
  their own box), no widget cuts off part of its content and no figure draws labels over
  each other (``reader.overflow``, ``reader.clipped``, ``reader.overlapping_text``);
* axe-core finds no violation of impact "serious" or "critical", inside the widgets'
  shadow roots included (desktop, both schemes: colour contrast differs between them);
  Material's frame around the content (header, tabs, nav, footer) on the first page of each
  top-level section, where the nav changes, and the rest of every page;
* a screenshot of the first widget of each kind at each width is written under
  ``build/screenshots/<device>-<scheme>/<page>/`` (not committed) for a person to look at:
  light on the site's pages, dark on each widget's bare embed page (``TX_ALL_SCREENSHOTS=1``:
  every widget of every page).

Every bare ``/embed/<name>/`` page gets the same checks (but axe's, which the site's pages
cover), at both widths, in its light and dark theme: one tab per device loads the first and
puts each of the others in its place (``SharedTab.embed``), since they are one template.

Speed: one tab per device visits all pages (``tabs.SharedTab``). The first page is loaded
normally; the others are reached through MkDocs Material's *instant navigation* (a click on a
same-site link), which swaps the page content without reloading the window, so the Pyodide
worker and the model session start once instead of once per page. Pages that instant
navigation does not reach (such as ``404.html``) are loaded normally. The scheme is switched
with Material's own palette toggle.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from reader import DESKTOP_WIDTH, PHONE_WIDTH, bad_values, clipped, overflow, overlapping_text, screenshot_widgets, scrolls_sideways
from served import ROOT, SITE
from tabs import SharedTab, site_pages
from watched import NO_SERVICE_WORKER

pytestmark = pytest.mark.browser


def xdist_group(item) -> str:
    """tests/conftest.py: each device's tour (pages, then embed pages) is a group of its own."""
    params = getattr(item, "callspec", None)
    for fixture in ("tour", "embed_tour"):
        if params is not None and fixture in params.params:
            return params.params[fixture]
    return ""


AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
FIRST_TIMEOUT_MS = 180_000  # the first page starts Pyodide and the model: allow the cold start
PAGE_TIMEOUT_MS = 90_000
BLOCKING_IMPACTS = ("serious", "critical")


PAGES = site_pages()

# The two readers: a desktop window and a phone (mobile emulation: touch, meta viewport).
DEVICES = {
    "desktop": {"viewport": {"width": DESKTOP_WIDTH, "height": 800}},
    "phone": {"viewport": {"width": PHONE_WIDTH, "height": 740}, "is_mobile": True, "has_touch": True, "device_scale_factor": 1},
}
# Material's palette toggle: the inputs of mkdocs.yml's `theme.palette`, light first.
SCHEMES = {"light": "default", "dark": "slate"}
# Words a widget or a page shows on purpose, as values: the float-format demos print the
# IEEE special values their arithmetic produces.
ALLOWED_WORDS = {"tx-numerics": {"NaN", "Infinity", "-Infinity"}}


def scheme_of(page) -> str:
    """The colour scheme the page shows now ("light" or "dark")."""
    shown = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    return next((name for name, value in SCHEMES.items() if value == shown), "light")


# Material fades link colours over 125 ms (`.md-nav__link {transition: color 125ms}`): a
# contrast check taken mid-fade measures a colour no reader is left looking at. The fades are
# taken to their end (a style flush starts them all first), which is what a reader sees 125 ms
# later, and then checked to be over.
_SWITCH = """scheme => {
  const input = document.querySelector(`input[name=__palette][data-md-color-scheme=${scheme}]`);
  if (input && !input.checked) input.click();
  if (document.body.getAttribute('data-md-color-scheme') !== scheme) return false;
  getComputedStyle(document.body).color;
  document.getAnimations().forEach(a => a instanceof CSSTransition && a.finish());
  return document.getAnimations().every(a => !(a instanceof CSSTransition) || a.playState !== "running");
}"""


def set_scheme(page, scheme: str) -> None:
    """Switch the colour scheme with Material's own palette toggle, as a reader's click does,
    and finish the colour fades it starts: in one round trip when Material has switched by the
    time the click returns (it does, synchronously), else by waiting for it."""
    if page.evaluate(_SWITCH, SCHEMES[scheme]):
        return
    page.wait_for_function(_SWITCH, arg=SCHEMES[scheme], timeout=5000)


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
        page.wait_for_function(
            """() => [...document.querySelectorAll("*")]
            .filter(el => el.localName.startsWith("tx-"))
            .every(el => customElements.get(el.localName) === undefined
                         || el.dataset.state === "ready" || el.dataset.state === "error")""",
            timeout=timeout_ms,
        )
    except Exception:  # the caller reports the widgets that are not ready, one by one
        pass


# Material's frame around the content: the same on every page but for which nav section is open
# and which link is marked current. axe checks it in full on the first page of each top-level
# section (each state of the nav) and leaves it out on the others, where it found nothing new
# and took 40% of axe's time.
TEMPLATE = [".md-header", ".md-tabs", ".md-sidebar--primary", ".md-footer"]


def blocking_axe_violations(page, rules: list[str] | None = None, exclude: list[str] = ()) -> list[dict]:
    """axe-core's violations of impact serious or critical (axe must be on the page); only
    `rules` (axe rule ids) when given; not inside the elements that `exclude` selects."""
    # At the page's foot, Material's sticky table of contents sits partly above the viewport, and
    # axe measures those links against the dark footer it scrolls into view: a colour pair no
    # reader sees. Every run starts where a reader lands, at the top.
    # The first run leaves out what only a report needs (each node's CSS selector and ancestry:
    # 15-20% of axe's time); a page with a blocking violation is run again to name its elements.
    for lean in (True, False):
        result = page.evaluate(
            """async ([rules, exclude, lean]) => {
            window.scrollTo(0, 0);
            const context = exclude.length ? {exclude: exclude.map((s) => [s])} : document;
            const options = {resultTypes: ["violations"]};
            if (rules) options.runOnly = rules;
            if (lean) Object.assign(options, {selectors: false, ancestry: false, xpath: false, elementRef: false});
            const r = await axe.run(context, options);
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                           targets: v.nodes.slice(0, 5).map(n => n.target),
                                           count: v.nodes.length}));
        }""",
            [rules, list(exclude), lean],
        )
        blocking = [v for v in result if v["impact"] in BLOCKING_IMPACTS]
        if not blocking:
            return []
    return blocking


def problems_on(page, timeout_ms: int, axe: bool = True) -> list[str]:
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
    return problems + (axe_problems(page) if axe else [])


def axe_problems(page, rules: list[str] | None = None, exclude: list[str] = ()) -> list[str]:
    """axe-core's serious and critical violations, one line each."""
    return [
        f"axe {v['impact']} '{v['id']}' ({v['help']}) on {v['count']} element(s), e.g. {json.dumps(v['targets'])}"
        for v in blocking_axe_violations(page, rules, exclude)
    ]


@pytest.fixture(scope="module", params=list(DEVICES))
def tour(browser, site_url, request):
    """One tab per device that visits every page in turn (tabs.SharedTab)."""
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed: {AXE} (run npm ci)")
    with SharedTab(browser, site_url, **DEVICES[request.param]) as tour:
        tour.device = request.param
        tour.sections = set()  # top-level sections whose frame axe has checked
        tour.shown = set()  # widget tags with a screenshot already
        yield tour
        tour.watched.check()  # anything that happened after the last page's own check


def axe_ready(page) -> None:
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))


def test_the_site_has_pages():
    assert len(PAGES) > 3, f"no pages found under {SITE}: build the site first (make site)"


def reader_problems(tour, path: str, scheme: str, frame: bool) -> list[str]:
    """What the reader of this page sees wrong in one scheme (axe on Material's frame too when
    `frame`); writes the screenshots of widgets not yet shown."""
    set_scheme(tour.page, scheme)
    problems = [f"{scheme}: {p}" for p in bad_values(tour.page, ALLOWED_WORDS)]
    width = DEVICES[tour.device]["viewport"]["width"]
    problems += [f"{scheme}: {p}" for p in overflow(tour.page, width) + clipped(tour.page) + overlapping_text(tour.page)]
    if tour.device == "desktop":  # contrast differs between the schemes; the rest of axe does not
        rules = None if scheme == "light" else ["color-contrast"]
        problems += [f"{scheme}: {p}" for p in axe_problems(tour.page, rules, () if frame else TEMPLATE)]
    if scheme == "light":  # the dark look of every widget type is taken on its embed page
        screenshot_widgets(tour.page, f"{tour.device}-{scheme}/{path.strip('/').replace('/', '_') or 'index'}", tour.shown)
    return problems


# `make test-fast`'s browser smoke test (marker "smoke"): this page at both widths, a Python
# widget (the KV-cache demo, in Pyodide) and a model widget (next-token, on onnxruntime-web).
SMOKE_PAGE = "attention/parallelism/"


@pytest.mark.parametrize("path", [pytest.param(p, id=p or "index", marks=[pytest.mark.smoke] if p == SMOKE_PAGE else []) for p in PAGES])
def test_page(tour, path):
    start = time.monotonic()
    mark = tour.watched.mark()
    first = not tour.loaded
    tour.visit(path)
    axe_ready(tour.page)
    problems = problems_on(tour.page, FIRST_TIMEOUT_MS if first else PAGE_TIMEOUT_MS, axe=False)
    problems += scrolls_sideways(tour.page)  # the layout is the same in both schemes
    section = path.split("/")[0]
    # The scheme the page arrived in first, then the other: one switch a page (Material keeps
    # the scheme from page to page).
    first_scheme = scheme_of(tour.page)
    for scheme in sorted(SCHEMES, key=lambda s: s != first_scheme):
        problems += reader_problems(tour, path, scheme, frame=section not in tour.sections)
    tour.sections.add(section)
    problems += tour.watched.take_since(mark)  # reported here, for this page, and not again
    assert not problems, f"/{path} on the {tour.device} ({time.monotonic() - start:.1f} s):\n  " + "\n  ".join(problems)


EMBEDS = sorted(d.name for d in (SITE / "embed").iterdir() if (d / "index.html").is_file()) if (SITE / "embed").is_dir() else []
EMBED_TITLE = re.compile(r"<title>.*?</title>|data-widget=\"[^\"]*\"|<p class=\"tx-credit\">.*?</p>", re.S)


def embed_html(name: str) -> str:
    return (SITE / "embed" / name / "index.html").read_text(encoding="utf-8")


def test_embed_pages_differ_only_in_their_widget_title_and_credit():
    """What makes the soft visits of `test_embed_page` the same as loading each page: every
    embed page is one template, with its own widget tag, title and credit line."""
    from bad_input_harness import WIDGETS

    assert EMBEDS, "no embed pages: build the site first (make site)"
    template = EMBED_TITLE.sub("", embed_html(EMBEDS[0]))
    for name in EMBEDS:
        html = embed_html(name)
        assert EMBED_TITLE.sub("", html) == template, f"embed/{name}/ differs from embed/{EMBEDS[0]}/ in more than its widget, title and credit"
        tag = re.search(r'data-widget="([^"]*)"', html).group(1)
        assert WIDGETS.get(tag, {}).get("name") == name, f"embed/{name}/ shows <{tag}>, which the catalogue does not put there"


@pytest.fixture(scope="module", params=list(DEVICES))
def embed_tour(browser, site_url, request):
    """One tab per device that shows every embed page: the first is loaded, the others are put
    in its place (``SharedTab.embed``), so Python and the model start once per device, not once
    per page. `test_embed_pages_differ_only_in_their_widget_title_and_credit` checks that the
    pages differ in nothing else."""
    with SharedTab(browser, site_url, **DEVICES[request.param]) as tab:
        tab.device = request.param
        tab.shown = set()  # widget tags with a screenshot already
        yield tab
        tab.watched.check()


@pytest.mark.parametrize("name", EMBEDS)
def test_embed_page(embed_tour, name):
    """The bare iframe page of each widget, light and dark (its own theme switch), as on the site."""
    watched, device = embed_tour.watched, embed_tour.device
    mark = watched.mark()
    first = not embed_tour.loaded
    p = embed_tour.embed(name, "theme=light")
    problems = problems_on(p, FIRST_TIMEOUT_MS if first else PAGE_TIMEOUT_MS, axe=False) + scrolls_sideways(p)
    width = DEVICES[device]["viewport"]["width"]
    for scheme in ("light", "dark"):
        p.evaluate("theme => { document.documentElement.dataset.theme = theme; }", scheme)
        problems += [f"{scheme}: {x}" for x in bad_values(p, ALLOWED_WORDS) + overflow(p, width) + clipped(p) + overlapping_text(p)]
        if scheme == "dark":  # the light look is taken on the site's pages
            screenshot_widgets(p, f"{device}-{scheme}/embed_{name}", embed_tour.shown)
    problems += watched.take_since(mark)
    assert not problems, f"/embed/{name}/ on the {device}:\n  " + "\n  ".join(problems)


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
    # A request to another origin, from the page and from a worker, is seen (and fails: no host
    # but 127.0.0.1 resolves); the list is emptied so that this test's own check passes.
    p.evaluate("""async () => {
        document.body.insertAdjacentHTML("beforeend", '<img src="https://fonts.gstatic.com/x.woff2">');
        await fetch("https://example.org/a.js").catch(() => null);
        const worker = new Worker(URL.createObjectURL(new Blob(
            ['fetch("https://cdn.jsdelivr.net/b.js").catch(() => null).then(() => postMessage(1))'])));
        await new Promise((done) => { worker.onmessage = done; });
    }""")
    p.wait_for_function("() => [...document.images].some(i => i.src.includes('gstatic') && i.complete)")
    seen = sorted(set(page.external))
    assert seen == ["https://cdn.jsdelivr.net/b.js", "https://example.org/a.js", "https://fonts.gstatic.com/x.woff2"], seen
    page.external.clear()
    page.expect_errors("ERR_NAME_NOT_RESOLVED")


def test_the_reader_checks_catch_what_they_should(browser, site_url):
    """A stringified object, an undefined value, a page-widening figure, a cut-off select and a figure
    that must be scrolled sideways are caught."""
    context = browser.new_context(**DEVICES["phone"], **NO_SERVICE_WORKER)
    try:
        p = context.new_page()
        p.goto(site_url + "sampling/")
        wait_for_widgets(p, FIRST_TIMEOUT_MS)
        assert bad_values(p) == [] and overflow(p, PHONE_WIDTH) == [] and clipped(p) == [] and scrolls_sideways(p) == []
        p.evaluate("""() => {
            const article = document.querySelector("article");
            article.insertAdjacentHTML("beforeend", '<p>Result: [object Object]</p><div style="width:600px">wide</div>');
            const root = document.querySelector("tx-sampling").shadowRoot;
            root.querySelector(".card").insertAdjacentHTML("beforeend",
                '<span>p = undefined</span><code>None or NaN in code is fine</code>' +
                '<select name="narrow" style="width:40px"><option>head 1 of 12</option></select>' +
                '<svg width="200" height="40"><text x="10" y="20">0 Data</text><text x="12" y="23">1 visual</text></svg>' +
                '<div class="map" style="overflow-x:auto"><div style="width:600px">map</div></div>' +
                '<div class="scroll" style="overflow-x:auto"><div style="width:600px">table</div></div>');
        }""")
        assert sorted(bad_values(p)) == [
            "<tx-sampling> shows 'undefined' in 'p = undefined'",
            "page text shows '[object Object]' in 'Result: [object Object]'",
        ]
        assert bad_values(p, {"": {"[object Object]"}, "tx-sampling": {"undefined"}}) == []
        wide = overflow(p, PHONE_WIDTH)
        assert wide[0].startswith("page is ") and any(x.startswith("div ends at 6") for x in wide), wide
        assert any("select[name=narrow]" in x for x in clipped(p)), clipped(p)
        assert overlapping_text(p) == ['<tx-sampling> svg: "0 Data" overlaps "1 visual"']
        assert [x.split(":")[0] for x in scrolls_sideways(p)] == ["<tx-sampling> div.map must be scrolled sideways"], scrolls_sideways(p)
    finally:
        context.close()


def test_every_widget_element_is_only_a_host(page):
    """Every <tx-*> element is the one host class of widget.js: its own members are the lifecycle
    callbacks, and the widget's hooks live on `el.widget`, a plain object, so no hook can shadow
    a DOM member (an `after` or `title` method on the element once broke pages)."""
    p = page.goto("")
    p.wait_for_function("() => !!(customElements.get('tx-sampling') && customElements.get('tx-stage-tokens'))")
    found = p.evaluate(
        """(widgets) => {
        const lifecycle = new Set(["constructor", "connectedCallback", "disconnectedCallback"]);
        const out = {defined: 0, extra: [], hosts: new Set(), plain: []};
        for (const tag of widgets) {
            const cls = customElements.get(tag);
            if (!cls) continue;
            out.defined++;
            if (Object.getPrototypeOf(cls.prototype) !== HTMLElement.prototype) out.extra.push(`${tag}: not a direct HTMLElement`);
            for (const n of Object.getOwnPropertyNames(cls.prototype))
                if (!lifecycle.has(n)) out.extra.push(`${tag}: ${n}`);
            out.hosts.add(cls.prototype.connectedCallback.toString());
        }
        for (const el of document.querySelectorAll("*")) {
            if (!el.localName.startsWith("tx-") || !el.widget) continue;
            if (el.widget instanceof Node) out.plain.push(el.localName);
        }
        return {defined: out.defined, extra: out.extra, hosts: out.hosts.size, plain: out.plain};
    }""",
        sorted({f.stem for f in (ROOT / "site_src" / "widgets").glob("tx-*.js")}),
    )
    assert found["defined"] >= 34, found["defined"]
    assert not found["extra"], found["extra"]
    assert found["hosts"] == 1, found["hosts"]
    assert not found["plain"], found["plain"]


def test_a_widget_is_styled_before_it_says_ready(page):
    """Every widget's styles (widgets.css, adopted by its shadow root) apply before it first reports
    `data-state="ready"`: a reader never sees an unstyled card, and a check made at "ready" (a
    focus ring, a phone-width table) measures the styled widget. The stylesheet is held back
    1.5 s by the server here, so a widget that did not wait for it would be caught unstyled."""
    held = []

    def slow_stylesheet(route):
        held.append(route.request.url)
        time.sleep(1.5)  # the server answers late (the route runs on Playwright's side)
        route.continue_()

    page.page.route("**/styles/widgets.css", slow_stylesheet)
    # When each widget first says ready: is the card styled (widgets.css sets --tx-accent), and how?
    page.page.add_init_script(
        """new MutationObserver((records) => {
             for (const r of records) {
               const el = r.target;
               if (!el.localName.startsWith("tx-") || el.dataset.state !== "ready" || el.__styledAtReady !== undefined) continue;
               const card = el.shadowRoot && el.shadowRoot.querySelector(".card");
               el.__styledAtReady = !!card && getComputedStyle(card).getPropertyValue("--tx-accent").trim() !== "";
             }
           }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"] });"""
    )
    p = page.goto("pipeline/05e-mlp/")
    p.wait_for_function("() => document.querySelector('tx-predict')?.dataset.state === 'ready'", timeout=60_000)
    styled = p.evaluate("() => [...document.querySelectorAll('tx-predict, tx-stage-mlp')].map(el => [el.localName, el.__styledAtReady ?? null])")
    assert held, "the test's hold on widgets.css never applied"
    assert ["tx-predict", True] in styled, f"styled when first ready: {styled}"
    assert all(ok is not False for _, ok in styled), f"a widget said ready before its styles applied: {styled}"
    # one stylesheet for all of them: no shadow root links the file itself
    assert p.evaluate("() => [...document.querySelectorAll('tx-predict, tx-stage-mlp')].every(el => !el.shadowRoot.querySelector('link'))")


def test_widgets_work_when_their_stylesheet_is_missing(page):
    """A stylesheet that does not arrive (HTTP 404) costs the styles, never the widget: it still
    computes and answers, and each shadow root falls back to linking the file."""
    page.expect_errors("widgets.css")  # the HTTP 404 record
    page.expect_errors("status of 404")  # the console's line for it (it names no file)
    page.page.route("**/styles/widgets.css", lambda route: route.fulfill(status=404, body="missing"))
    p = page.goto("pipeline/05e-mlp/")
    widget = p.locator("tx-predict").first
    p.wait_for_function("() => document.querySelector('tx-predict')?.dataset.state === 'ready'", timeout=60_000)
    assert p.evaluate("() => !!document.querySelector('tx-predict').shadowRoot.querySelector('link[rel=stylesheet]')")
    widget.locator("input.guess").fill("")
    widget.locator('button[name="check"]').click()
    assert "Type your guess first" in widget.locator(".status-text").inner_text()
