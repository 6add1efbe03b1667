"""A device too small for the model: the widget says so before the download and offers what fits.

The page stands in for a phone through ``window.TX_DEVICE_MEMORY_GB`` (runtime/memory.js,
set with ``add_init_script`` before the runtime starts), chosen from the served manifest so
that the default variant's estimate is above the tab's budget and the smaller variant's below
it. The estimate is computed here again from the manifest (weights x bytes per weight at the
peak + the KV cache at n_positions + the runtime), with the constants read from the site's
own ``variants.js`` and ``memory.js`` (their one owner). Checked on the generate page and on
a pipeline stage page, on a 375 px phone viewport:

(a) nothing but models/index.json and the manifest is requested before the reader chooses
    (no variant file, no onnxruntime file); (b) the message names the device's figure, the
    budget, the default variant's need and the smaller variant's; (c) "Load the smaller …
    instead" loads that variant and the widget works; (d) "Try anyway" loads the default;
    (e) an allocation that fails while loading (requant.js or expand.js, which build q8x's int8
    or q4x's float32 weights in the worker, served so that it throws Chromium's RangeError) gives the same
    message and offers; (f) nothing sticks out sideways at 375 px. Screenshots at 375 and
    1280 px go to build/screenshots/memory-guard/ (not committed).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest

from faults import SITE, manifest, model_dir
from reader import DESKTOP_WIDTH, PHONE_WIDTH, overflow
from widget_checks import wait_state

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots" / "memory-guard"
RUNTIME = SITE / "assets" / "tx" / "runtime"
GENERATE = ("generate/", "tx-generate")
STAGE = ("pipeline/06-logits/", "tx-stage-logits")
MESSAGE_WITHIN_MS = 20_000
# Per compact variant, the module and function that build its weights in the worker.
BUILDERS = {"q8x": ("requant.js", "requantWeights"), "q4x": ("expand.js", "expandWeights")}
READY_WITHIN_MS = 120_000


@pytest.fixture(scope="module")
def constants() -> dict:
    """MEMORY (variants.js) and TAB_SHARE (memory.js), from the site under test."""
    script = (
        f"const v = await import({json.dumps((RUNTIME / 'variants.js').as_uri())});"
        f"const m = await import({json.dumps((RUNTIME / 'memory.js').as_uri())});"
        "console.log(JSON.stringify({MEMORY: v.MEMORY, TAB_SHARE: m.TAB_SHARE}));"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def estimate(m: dict, variant: dict, c: dict) -> float:
    """Peak bytes of loading `variant`: the formula of variants.js peakMemoryBytes, written out again."""
    cfg = m["config"]
    L, d, P, V = cfg["n_layer"], cfg["n_embd"], cfg["n_positions"], cfg["vocab_size"]
    weights = V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d
    compact = any(f.get("role") == "index" for f in variant["files"])  # q4x: float32, q8x: int8 built from 4 bits
    held = ("int8FromInt4" if variant["dtype"] == "int8" else "float32") if compact else variant["dtype"]
    kv = 2 * L * P * d * c["MEMORY"]["kvBytesPerValue"]
    return weights * c["MEMORY"]["peakBytesPerParameter"][held] + kv + c["MEMORY"]["runtimeBytes"]


def amount(n: float) -> str:
    """errors.js memoryAmount: "315 MB", "1.6 GB"."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{math.floor(n / 1e6 + 0.5)} MB"  # Math.round: halves up


@pytest.fixture(scope="module")
def plan(constants) -> dict:
    """The default WASM variant, the smaller one the guard must offer, and a device figure between them."""
    m = manifest()
    wasm = [v for v in m["variants"] if "wasm" in v["backends"]]
    order = [m["default_variants"]["wasm"], *m["variant_order"]["wasm"]]
    wasm.sort(key=lambda v: order.index(v["name"]) if v["name"] in order else len(order))
    default, need = wasm[0], estimate(m, wasm[0], constants)
    smaller = next(v for v in wasm[1:] if estimate(m, v, constants) < need)
    fit = estimate(m, smaller, constants)
    share = constants["TAB_SHARE"]
    device_gb = round((need + fit) / 2 / 1e9 / share, 4)
    budget = device_gb * 1e9 * share
    assert fit <= budget < need, (fit, budget, need)
    return {
        "default": default["name"],
        "need": need,
        "smaller": smaller["name"],
        "fit": fit,
        "device_gb": device_gb,
        "budget": budget,
        "variant_files": {f["path"] for v in m["variants"] for f in v["files"]},
        "graphs": {v["name"]: next(f["path"] for f in v["files"] if f.get("role", "graph") == "graph") for v in m["variants"]},
    }


def open_low_memory(watched, path, device_gb):
    """Open `path` on a phone viewport with the device reporting `device_gb` GB; returns the page and its request log."""
    p = watched.page
    p.set_viewport_size({"width": PHONE_WIDTH, "height": 812})
    p.add_init_script(f"window.TX_DEVICE_MEMORY_GB = {json.dumps(device_gb)};")
    requests: list[str] = []
    p.context.on("request", lambda r: requests.append(urlparse(r.url).path))
    watched.goto(path)
    return p, requests


def status(widget) -> str:
    return widget.locator(".status-text").inner_text()


def offer(widget, label):
    return widget.locator(".status .actions button", has_text=label)


def expect_memory_message(p, tag, plan, *, allocation=False) -> str:
    """The widget's memory error: its figures, its two offers as focusable buttons, no Retry."""
    wait_state(p, tag, ["error"], MESSAGE_WITHIN_MS)
    widget = p.locator(tag)
    text = status(widget)
    words = [
        f"the {plan['default']} model",
        amount(plan["need"]),
        f"smaller {plan['smaller']} model",
        amount(plan["fit"]),
        "do not need the model",
        f"reports {plan['device_gb']:g} GB",
    ]
    words += ["ran out of memory", "Array buffer allocation failed"] if allocation else [amount(plan["budget"])]
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"
    buttons = widget.locator(".status .actions button")
    assert buttons.all_inner_texts() == [f"Load the smaller {plan['smaller']} model instead", "Try anyway"]
    for i in range(buttons.count()):
        assert buttons.nth(i).evaluate("b => b.localName === 'button' && b.tabIndex === 0 && b.checkVisibility()")
    assert widget.locator(".status button.retry").is_hidden(), "a memory error is not retried as it is"
    return text


def model_requests(requests, plan) -> list[str]:
    """Requests for a variant file of the model or for an onnxruntime file."""
    prefix = f"/models/{model_dir().name}/"
    return [r for r in requests if "/vendor/ort/" in r or (r.startswith(prefix) and r[len(prefix) :] in plan["variant_files"])]


def fits_sideways(p, tag):
    """Nothing wider than the phone: the page, the widget's status line, its buttons."""
    assert not overflow(p, PHONE_WIDTH), overflow(p, PHONE_WIDTH)
    sizes = p.locator(tag).evaluate("""el => {
      const s = el.shadowRoot.querySelector('.status');
      return {status: [s.scrollWidth, s.clientWidth],
              right: Math.max(...[...s.querySelectorAll('button')].map(b => b.getBoundingClientRect().right))};
    }""")
    assert sizes["status"][0] <= sizes["status"][1] + 1, sizes
    assert sizes["right"] <= PHONE_WIDTH, sizes


def shoot(p, tag, name):
    """The widget at 375 px, then at 1280 px, under build/screenshots/memory-guard/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (PHONE_WIDTH, DESKTOP_WIDTH):
        p.set_viewport_size({"width": width, "height": 900})
        p.locator(tag).screenshot(path=str(SHOTS / f"{name}-{width}.png"), style=".md-header, .md-top { visibility: hidden; }")
    p.set_viewport_size({"width": PHONE_WIDTH, "height": 812})


def generate_some(p, tag="tx-generate"):
    """Press Generate and wait for the run to end with tokens."""
    widget = p.locator(tag)
    runs = int(widget.get_attribute("data-runs") or 0)
    widget.locator("button.go").click()
    p.wait_for_function("([tag, runs]) => Number(document.querySelector(tag).dataset.runs) > runs", arg=[tag, runs], timeout=READY_WITHIN_MS)
    assert widget.get_attribute("data-state") == "ready", status(widget)
    assert json.loads(widget.get_attribute("data-ids")), "no tokens generated"


@pytest.mark.parametrize("where", [GENERATE, STAGE], ids=["generate", "stage"])
def test_low_memory_offers_the_smaller_variant_before_any_download(page, plan, where):
    path, tag = where
    p, requests = open_low_memory(page, path, plan["device_gb"])
    expect_memory_message(p, tag, plan)
    p.wait_for_timeout(500)  # anything the page would still fetch on its own
    assert not model_requests(requests, plan), model_requests(requests, plan)
    assert any(r.endswith(f"/models/{model_dir().name}/manifest.json") for r in requests)
    fits_sideways(p, tag)
    shoot(p, tag, f"{path.strip('/').replace('/', '-')}-low-memory")

    offer(p.locator(tag), f"smaller {plan['smaller']}").focus()
    p.keyboard.press("Enter")  # keyboard-reachable
    wait_state(p, tag, ["ready", "error"], READY_WITHIN_MS)
    widget = p.locator(tag)
    assert widget.get_attribute("data-state") == "ready", status(widget)
    assert widget.get_attribute("data-variant") == plan["smaller"]
    assert widget.locator(".status .actions").is_hidden()
    prefix = f"/models/{model_dir().name}/"
    fetched = {r[len(prefix) :] for r in model_requests(requests, plan) if r.startswith(prefix)}
    # The smaller variant's session, not the default's (a stage page's figures also read the
    # weights from q4x's packed files, see pipeline/weights.js, whatever variant runs).
    assert plan["graphs"][plan["smaller"]] in fetched and plan["graphs"][plan["default"]] not in fetched, fetched
    if tag == "tx-generate":
        generate_some(p)


def test_try_anyway_loads_the_default_variant(page, plan):
    path, tag = GENERATE
    p, _ = open_low_memory(page, path, plan["device_gb"])
    expect_memory_message(p, tag, plan)
    offer(p.locator(tag), "Try anyway").click()
    wait_state(p, tag, ["ready", "error"], READY_WITHIN_MS)
    widget = p.locator(tag)
    assert widget.get_attribute("data-state") == "ready", status(widget)
    assert widget.get_attribute("data-variant") == plan["default"]
    generate_some(p)


def test_nothing_fits_offers_only_try_anyway(page, plan, constants):
    path, tag = GENERATE
    smallest = min(estimate(manifest(), v, constants) for v in manifest()["variants"])
    device_gb = math.floor(smallest / 2 / 1e9 / constants["TAB_SHARE"] * 1e3) / 1e3
    p, requests = open_low_memory(page, path, device_gb)
    wait_state(p, tag, ["error"], MESSAGE_WITHIN_MS)
    widget = p.locator(tag)
    assert "No variant of this model fits" in status(widget), status(widget)
    assert widget.locator(".status .actions button").all_inner_texts() == ["Try anyway"]
    assert not model_requests(requests, plan)
    fits_sideways(p, tag)


def test_failed_allocation_gives_the_memory_message(page, plan):
    """Room enough by the estimate, but the worker's allocation fails: the same message and offers."""
    path, tag = GENERATE
    # The module that builds the default variant's weights in the worker, as served, but its
    # builder (the worker's large allocation) fails as Chromium's does.
    module, builder = BUILDERS[plan["default"]]
    real = (RUNTIME / module).read_text()
    assert f"export function {builder}(" in real
    failing = real.replace(f"export function {builder}(", "function unusedBuilder(") + (
        f"\nexport function {builder}() {{ throw new RangeError('Array buffer allocation failed'); }}\n"
    )
    page.page.route(
        re.compile(rf".*/runtime/{re.escape(module)}(\?.*)?$"),
        lambda route: route.fulfill(status=200, body=failing, headers={"content-type": "text/javascript"}),
    )
    p, _ = open_low_memory(page, path, 64)
    plan = {**plan, "device_gb": 64}
    expect_memory_message(p, tag, plan, allocation=True)
    fits_sideways(p, tag)
    shoot(p, tag, "generate-allocation-failed")
    offer(p.locator(tag), f"smaller {plan['smaller']}").click()
    wait_state(p, tag, ["ready", "error"], READY_WITHIN_MS)
    widget = p.locator(tag)
    assert widget.get_attribute("data-state") == "ready", status(widget)
    assert widget.get_attribute("data-variant") == plan["smaller"]
