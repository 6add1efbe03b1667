"""The GPT-2 runtime's JS API in Chromium (site_src/runtime/model.js and its worker).

Each test opens a page without model widgets, imports model.js there and drives it:
prefill logits against onnxruntime in Python, a variant split into external-data
pieces, the tokenizer corpus, Cache Storage on the second load, download faults
(404, corrupted, truncated, stalled) with their messages and a working retry, the
storage-quota fallback, and cross-origin isolation with the site's service worker (sw.js).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import time

import numpy as np
import pytest

from faults import manifest, model_dir, model_fault_route, serve_patched_manifest
from generate_reference import EXACT_VARIANTS, ServedGraph, exact_variant, graph_path
from served import ROOT, SITE
from tabs import SharedTab

pytestmark = pytest.mark.browser

API_PAGE = "404.html"  # a themed page with the site's scripts and no model widget
TOKENIZER_CORPUS = ROOT / "tests" / "js" / "fixtures" / "tokenizer_corpus.json"
PROMPT = "The Transformer reads the whole prompt at once, naïve café 東京 🤗"

LOAD = """async ([options]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  window.progress = [];
  window.notices = [];
  try {
    const model = await loadModel({ ...options,
      onProgress: (p) => window.progress.push({ stage: p.stage, message: p.message, loaded: p.loaded, total: p.total }),
      onNotice: (m) => window.notices.push(m) });
    window.model = model;
    const { tokenizer, ...info } = model.info;
    return { ok: true, info };
  } catch (err) {
    return { ok: false, message: err.message, kind: err.kind, retryable: err.retryable };
  }
}"""


def variant_named(name: str) -> dict:
    return next(v for v in manifest()["variants"] if v["name"] == name)


def graph_file(variant: dict) -> dict:
    return next(f for f in variant["files"] if f.get("role", "graph") == "graph")


def reference_for(variant: dict) -> ServedGraph:
    return _reference(variant["name"])


@functools.cache
def _reference(name: str) -> ServedGraph:
    return ServedGraph(graph_path(model_dir(), manifest(), name), manifest()["config"])


def open_api(watched):
    """The API page in `watched` (a fresh page), or in the module's shared tab: loaded there once,
    so the tests that only compute share its model (the others are about loading it)."""
    if isinstance(watched, SharedTab):
        if watched.page.url != watched.site_url + API_PAGE:
            watched.reload(API_PAGE)
        return watched.page
    p = watched.goto(API_PAGE)
    p.wait_for_load_state()
    return p


def load(p, **options):
    return p.evaluate(LOAD, [options])


def _floats(encoded: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(encoded), dtype=np.float32)


def forward(p, ids, **options):
    """model.forward in the page; float32 arrays come back base64-encoded (JSON would be slow)."""
    out = p.evaluate(
        """async ([ids, options]) => {
      const out = await window.model.forward(ids, options);
      const b64 = (a) => {
        const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
        let s = '';
        for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        return btoa(s);
      };
      const plain = (t) => ({ data: b64(t.data), dims: t.dims });
      return { logits: b64(out.logits), dims: out.dims,
               attentions: out.attentions && out.attentions.map(plain), hiddenStates: out.hiddenStates && out.hiddenStates.map(plain) };
    }""",
        [ids, options],
    )
    out["logits"] = _floats(out["logits"])
    for key in ("attentions", "hiddenStates"):
        for layer in out[key] or []:
            layer["data"] = _floats(layer["data"])
    return out


def encode(p, text):
    return p.evaluate("(text) => window.model.tokenizer.encode(text)", text)


def expect_http_errors(watched, marker):
    """Ignore the page's HTTP-error records that a test provokes on purpose, late ones included."""
    watched.expect_errors(marker)


# q8's on-the-fly activation quantization rounds differently in WASM and on x86 (see
# EXACT_VARIANTS); its logits are compared with this looser bound.
LOOSE_ATOL = 0.05


def check_prefill_logits(p, info):
    """Logits at every position of a prefill equal onnxruntime's on the same variant file."""
    ids = encode(p, PROMPT)
    got = forward(p, ids, allPositions=True)
    rows, vocab = got["dims"]
    assert (rows, vocab) == (len(ids), info["config"]["vocab_size"])
    want = reference_for(variant_named(info["variant"])).logits(ids)
    atol = 1e-4 if info["variant"] in EXACT_VARIANTS else LOOSE_ATOL
    np.testing.assert_allclose(got["logits"].reshape(rows, vocab), want, atol=atol, rtol=0)
    last = forward(p, ids)
    assert last["dims"] == [1, vocab]
    np.testing.assert_allclose(last["logits"], want[-1], atol=atol, rtol=0)


def test_wasm_prefill_logits_match_onnxruntime(page):
    p = open_api(page)
    result = load(p, backend="wasm", variant=exact_variant(manifest(), "wasm"))
    assert result["ok"], result
    info = result["info"]
    assert info["variant"] in EXACT_VARIANTS or info["variant"] == manifest().get("default_variants", {}).get("wasm")
    assert info["backend"] == "wasm" and info["crossOriginIsolated"]
    assert info["threads"] == min(4, p.evaluate("navigator.hardwareConcurrency"))
    check_prefill_logits(p, info)

    # Progress: one byte-accurate total that only grows and ends complete.
    downloads = [e for e in p.evaluate("window.progress") if e["stage"] == "download"]
    totals = {e["total"] for e in downloads}
    variant = variant_named(info["variant"])
    tokenizer = manifest()["tokenizer"]
    assert totals == {sum(f["bytes"] for f in variant["files"]) + tokenizer["vocab"]["bytes"] + tokenizer["merges"]["bytes"]}
    loaded = [e["loaded"] for e in downloads]
    assert loaded == sorted(loaded) and loaded[-1] == totals.pop()

    # Optional outputs: returned when the variant has them, a clear message otherwise.
    ids = encode(p, "one two three")
    for option, key in (("attentions", "attentions"), ("hiddenStates", "hiddenStates")):
        if info["outputs"][key]:
            got = forward(p, ids, **{option: True})
            names = sorted(
                (n for n in reference_for(variant).outputs if n.startswith({"attentions": "attentions.", "hiddenStates": "hidden_states."}[key])),
                key=lambda n: int(n.rsplit(".", 1)[1]),
            )
            want = reference_for(variant).run(ids, names)
            assert len(got[key]) == len(names)
            for layer, name in zip(got[key], names):
                np.testing.assert_allclose(layer["data"].reshape(layer["dims"]), want[name][0], atol=1e-4)
        else:
            message = p.evaluate(
                """async (option) => {
              try { await window.model.forward([1, 2, 3], { [option]: true }); return null; } catch (e) { return e.message; } }""",
                option,
            )
            assert message and "has no" in message and info["variant"] in message


def test_webgpu_prefill_logits_match_onnxruntime(webgpu_page):
    p = open_api(webgpu_page)
    assert p.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())"), (
        "this Chromium offers no WebGPU adapter even with --enable-unsafe-webgpu"
    )
    result = load(p, variant=exact_variant(manifest(), "webgpu"))
    assert result["ok"], result
    assert result["info"]["backend"] == "webgpu" and result["info"]["threads"] is None
    check_prefill_logits(p, result["info"])


def test_default_variant_per_backend_and_its_logits(tab):
    """Without a forced variant WASM loads the manifest's default (else the runtime's
    preference), and its logits agree with onnxruntime on that file."""
    m = manifest()
    p = open_api(tab)
    result = load(p, backend="wasm")
    assert result["ok"], result
    wasm_variants = [v["name"] for v in m["variants"] if "wasm" in v["backends"]]
    expected = m.get("default_variants", {}).get("wasm") or next(
        (n for n in ("q8x", "q4x", "q8", "fp32", "q4", "fp16") if n in wasm_variants), wasm_variants[0]
    )
    assert result["info"]["variant"] == expected
    assert result["info"]["notices"] == []
    check_prefill_logits(p, result["info"])


def test_tokenizer_corpus_in_the_browser(tab):
    """The tokenizer gives HF's ids for the whole committed corpus inside Chromium too."""
    corpus = json.loads(TOKENIZER_CORPUS.read_text())
    p = open_api(tab)
    mismatches = p.evaluate(
        """async (corpus) => {
      const { GPT2Tokenizer } = await import('./assets/tx/runtime/tokenizer.js');
      const base = new URL('./models/' + (await (await fetch('./models/index.json')).json()).default + '/', location.href);
      const tok = await GPT2Tokenizer.load(new URL('vocab.json', base).href, new URL('merges.txt', base).href);
      const bad = [];
      for (const { text, ids } of corpus) {
        const got = tok.encode(text);
        if (got.length !== ids.length || got.some((v, i) => v !== ids[i])) bad.push(text);
        if (tok.decode(ids) !== text && !text.includes('\\ufffd')) bad.push('decode: ' + text);
      }
      return bad;
    }""",
        corpus,
    )
    assert len(corpus) >= 1000
    assert mismatches == [], mismatches[:5]


def test_second_load_comes_from_cache_storage(page):
    p = open_api(page)
    first = load(p, backend="wasm")
    assert first["ok"], first
    assert first["info"]["storage"] == "cache" and first["info"]["bytes"]["fromNetwork"] > 0

    model_prefix = f"/models/{model_dir().name}/"
    requests = []
    p.on("request", lambda r: requests.append(r.url) if model_prefix in r.url else None)
    p.reload()
    p.wait_for_load_state()
    second = load(p, backend="wasm")
    assert second["ok"], second
    assert second["info"]["bytes"]["fromNetwork"] == 0
    assert second["info"]["bytes"]["fromCache"] == first["info"]["bytes"]["total"]
    fetched = [u for u in requests if not u.split("?")[0].endswith("/manifest.json")]
    assert fetched == [], f"the second visit downloaded {fetched}"
    check_prefill_logits(p, second["info"])


def test_q8x_reads_the_q4x_pieces_and_matches_onnxruntime(page):
    """q8x builds int8 weights from q4x's pieces: after q4x was loaded, it downloads only its own
    graph and index, says what it is doing, and its logits agree with onnxruntime's on the graph
    that model_export.requant builds from the same files."""
    names = [v["name"] for v in manifest()["variants"]]
    assert {"q4x", "q8x"} <= set(names), names
    p = open_api(page)
    first = load(p, backend="wasm", variant="q4x")
    assert first["ok"], first
    model_prefix = f"/models/{model_dir().name}/"
    requests = []
    p.on("request", lambda r: requests.append(r.url.split("?")[0].split(model_prefix)[-1]) if model_prefix in r.url else None)
    p.reload()
    p.wait_for_load_state()
    second = load(p, backend="wasm", variant="q8x")
    assert second["ok"], second
    info = second["info"]
    assert info["variant"] == "q8x"
    own = [f for f in variant_named("q8x")["files"] if f["path"].startswith("q8x/")]
    assert sorted(f["path"] for f in own) == ["q8x/expand.json", "q8x/model.onnx"]
    assert sorted(u for u in requests if u != "manifest.json") == sorted(f["path"] for f in own)
    assert info["bytes"]["fromNetwork"] == sum(f["bytes"] for f in own)
    messages = [e["message"] for e in p.evaluate("window.progress") if e["stage"] == "expand"]
    assert messages and "int8" in messages[0], messages
    check_prefill_logits(p, info)


@pytest.mark.parametrize(
    "kind, words",
    [
        ("404", ["HTTP 404", "no such file"]),
        ("corrupt", ["corrupted", "sha256"]),
        ("truncate", ["truncated"]),
        ("stall", ["stopped sending", "nothing arrived"]),
    ],
)
def test_download_faults_give_a_message_and_retry_works(page, kind, words):
    p = open_api(page)
    hits = []
    pattern = model_fault_route(p, kind, hits)
    # Short stall limits for the stalled server only: the other faults pass through Python, which takes time.
    quick = {"stallNoticeMs": 300, "stallTimeoutMs": 1500} if kind == "stall" else {}
    failed = load(p, backend="wasm", download=quick)
    assert not failed["ok"] and hits, failed
    assert failed["retryable"] is True
    for word in words:
        assert word in failed["message"], failed["message"]
    if kind == "stall":
        stages = {e["stage"] for e in p.evaluate("window.progress")}
        assert "stalled" in stages  # the reader was told the server is slow before it gave up
    expect_http_errors(page, "HTTP 404")

    p.unroute(pattern)
    retried = load(p, backend="wasm")
    assert retried["ok"], retried
    check_prefill_logits(p, retried["info"])


def test_storage_quota_falls_back_to_memory_with_a_notice(page):
    p = open_api(page)
    cdp = p.context.new_cdp_session(p)
    origin = page.site_url.rstrip("/")
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin, "quotaSize": 200_000})
    result = load(p, backend="wasm")
    assert result["ok"], result
    assert result["info"]["storage"] == "memory"
    notices = result["info"]["notices"]
    assert any("storage quota" in n for n in notices), notices
    assert p.evaluate("window.notices") == notices
    check_prefill_logits(p, result["info"])


def test_variant_in_external_data_pieces(page, tmp_path):
    """A variant in the agreed layout (graph + data pieces, `default_variants`) loads,
    downloads every piece under one progress total, and computes the same logits."""
    m = manifest()
    base = variant_named(exact_variant(m, "wasm"))
    source = graph_path(model_dir(), m, base["name"])  # onnx.load also reads any pieces it already has
    import onnx

    from model_export.package import file_entry, file_role, save_variant

    pieces_dir = tmp_path / "pieces"  # the exporter's own layout, in pieces of at most 1 MB
    written = save_variant(onnx.load(str(source)), pieces_dir, piece_bytes=1_000_000, inline_bytes=0)
    assert len(written) >= 3
    files = [file_entry(path, tmp_path, file_role(path)) for path in written]
    outputs = base.get("outputs") or [o["name"] for o in m["outputs"]]
    variant = {
        "name": "pieces",
        "dtype": base.get("dtype"),
        "backends": ["wasm", "webgpu"],
        "outputs": outputs,
        "files": files,
        "bytes": sum(f["bytes"] for f in files),
    }
    patched = {**m, "variants": [*m["variants"], variant], "default_variants": {"wasm": "pieces", "webgpu": "pieces"}}

    p = open_api(page)
    prefix = f"/models/{model_dir().name}/"
    started = []

    def serve(route):
        path = route.request.url.split(prefix, 1)[1].split("?")[0]
        if path == "manifest.json":
            return route.fulfill(status=200, body=json.dumps(patched), headers={"content-type": "application/json"})
        if path.startswith("pieces/"):
            started.append(path)
            return route.fulfill(status=200, path=str(tmp_path / path), headers={"content-type": "application/octet-stream"})
        return route.continue_()

    p.route(f"**{prefix}**", serve)
    result = load(p, backend="wasm")
    assert result["ok"], result
    assert result["info"]["variant"] == "pieces"
    assert sorted(started) == sorted(f["path"] for f in files)
    downloads = [e for e in p.evaluate("window.progress") if e["stage"] == "download"]
    tok = m["tokenizer"]
    assert {e["total"] for e in downloads} == {variant["bytes"] + tok["vocab"]["bytes"] + tok["merges"]["bytes"]}
    assert downloads[-1]["loaded"] == downloads[-1]["total"]

    ids = encode(p, PROMPT)
    got = forward(p, ids)
    want = ServedGraph(pieces_dir / "model.onnx", m["config"]).logits(ids)[-1]
    np.testing.assert_allclose(got["logits"], want, atol=1e-4, rtol=0)


def test_prompt_longer_than_the_context_is_a_message(tab):
    p = open_api(tab)
    assert load(p, backend="wasm")["ok"]
    n_positions = manifest()["config"]["n_positions"]
    error = p.evaluate(
        """async (n) => {
      try { await window.model.forward(Array(n + 3).fill(257)); return null; }
      catch (e) { return { message: e.message, kind: e.kind }; } }""",
        n_positions,
    )
    assert error["kind"] == "context"
    assert f"at most {n_positions}" in error["message"] and f"{n_positions + 3} tokens" in error["message"]


def test_service_worker_does_not_reload_when_the_server_isolates(sw_page):
    """The server sends COOP/COEP itself: the site's service worker (the offline copy)
    registers and takes the page over, without the reload a plain static host needs."""
    navigations = []
    sw_page.page.on("request", lambda r: navigations.append(r.url) if r.is_navigation_request() else None)
    p = open_api(sw_page)
    p.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    state = p.evaluate("""async () => ({ isolated: crossOriginIsolated,
      registrations: (await navigator.serviceWorker.getRegistrations()).length })""")
    assert state == {"isolated": True, "registrations": 1}
    assert len(navigations) == 1, navigations


def test_service_worker_registers_once_the_runtime_has_started(sw_page):
    """On a page the server isolates, the service worker (and the caching it does) waits until
    the Python the page started is ready, and QUIET_MS more, so it does not slow that start."""
    p = open_api(sw_page)
    times = p.evaluate("""async () => {
      const t0 = performance.now();
      let registered = null;
      const poll = setInterval(async () => {
        if (registered === null && await navigator.serviceWorker.getRegistration()) registered = performance.now() - t0;
      }, 25);
      const { callDemo, onPythonProgress } = await import('./assets/tx/runtime/python.js');
      const { QUIET_MS } = await import('./assets/tx/runtime/quiet.js');
      let ready = null;
      onPythonProgress((e) => { if (e.stage === "ready") ready ??= performance.now() - t0; });
      await callDemo("sampling", "next_token_distribution", { logits: [1, 2, 3], temperature: 1, top_k: 0, top_p: 1 });
      await new Promise((resolve) => { const t = setInterval(() => { if (registered !== null) { clearInterval(t); resolve(); } }, 25); });
      clearInterval(poll);
      return { ready, registered, quiet: QUIET_MS };
    }""")
    assert times["ready"] is not None, times
    assert times["registered"] >= times["ready"] + 0.9 * times["quiet"], times
    p.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)


def test_service_worker_isolates_a_plain_static_host(browser):
    """Served without COOP/COEP (like GitHub Pages), the site's service worker reloads the page
    once and then the page is cross-origin isolated; further visits do not reload."""
    from sitebuild.serve import serve_in_thread

    server, url = serve_in_thread(SITE, coi=False)
    context = browser.new_context()
    errors, navigations = [], []
    try:
        p = context.new_page()
        p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        p.on("pageerror", lambda e: errors.append(str(e)))
        p.on("request", lambda r: navigations.append(r.url) if r.resource_type == "document" and r.frame == p.main_frame else None)
        p.goto(url + API_PAGE)
        p.wait_for_function("() => crossOriginIsolated === true", timeout=30_000)
        reloads = len(navigations)
        assert reloads == 2, navigations  # the first load, then exactly one reload
        p.goto(url + API_PAGE)
        p.wait_for_load_state()
        time.sleep(1.0)
        assert p.evaluate("crossOriginIsolated") is True
        assert len(navigations) == reloads + 1, navigations  # no further reload
        threads = p.evaluate("""async () => {
          const { loadModel } = await import('./assets/tx/runtime/model.js');
          return (await loadModel({ backend: 'wasm' })).info.threads; }""")
        assert threads == min(4, p.evaluate("navigator.hardwareConcurrency"))
        assert errors == []
    finally:
        context.close()
        server.shutdown()


BROKEN_GRAPH = b"this is not an ONNX graph"


def _broken_variant(backends: list[str]) -> dict:
    return {
        "name": "broken",
        "dtype": "float32",
        "backends": backends,
        "bytes": len(BROKEN_GRAPH),
        "files": [{"path": "broken/model.onnx", "role": "graph", "bytes": len(BROKEN_GRAPH), "sha256": hashlib.sha256(BROKEN_GRAPH).hexdigest()}],
    }


def test_a_variant_that_fails_to_open_falls_back_to_the_next(page):
    m = manifest()
    patched = {**m, "variants": [_broken_variant(["wasm"]), *m["variants"]], "default_variants": {**m.get("default_variants", {}), "wasm": "broken"}}
    p = open_api(page)
    serve_patched_manifest(p, patched, {"broken/model.onnx": BROKEN_GRAPH})
    result = load(p, backend="wasm")
    assert result["ok"], result
    assert result["info"]["variant"] != "broken"
    assert any("broken weights do not run on WASM" in n for n in result["info"]["notices"]), result["info"]["notices"]
    check_prefill_logits(p, result["info"])


def test_auto_falls_back_to_wasm_when_nothing_opens_on_webgpu(webgpu_page):
    m = manifest()
    wasm_only = [{**v, "backends": [b for b in v["backends"] if b != "webgpu"]} for v in m["variants"]]
    patched = {
        **m,
        "variants": [_broken_variant(["webgpu"]), *[v for v in wasm_only if v["backends"]]],
        "default_variants": {k: v for k, v in m.get("default_variants", {}).items() if k != "webgpu"},
    }
    p = open_api(webgpu_page)
    serve_patched_manifest(p, patched, {"broken/model.onnx": BROKEN_GRAPH})
    result = load(p)  # backend "auto": WebGPU has an adapter here, but its only variant is broken
    assert result["ok"], result
    assert result["info"]["backend"] == "wasm" and result["info"]["threads"] >= 1
    assert any("runs on the CPU (WASM) instead" in n for n in result["info"]["notices"]), result["info"]["notices"]
    check_prefill_logits(p, result["info"])
