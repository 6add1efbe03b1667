"""The "Looking inside" quantities in Chromium (runtime/interpret.js on the inspect graph) against
PyTorch hooks (model_export/interpret.py) on the same weights, on WASM and WebGPU.

q4x computes in float32 from its dequantized weights, so it is compared at 1e-4 in probability
with the hooks on those weights; the WASM default (q8x, int8) within its validation bound.

WASM runs every recipe in full (``RUN_ALL``: the head map and both patching maps run the graph
once per head or per (layer, position), about 50 runs). WebGPU here is SwiftShader, on the
2-core machine's processor, so it runs each *probe* of the graph once instead
(``RUN_EACH_PROBE``: the lens, a mean ablation, induction, direct logit attribution and one
residual patch, 9 runs): the loops around the probes are the same JavaScript on both backends and
are checked, index by index, on WASM.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from faults import manifest, serve_patched_manifest
from inspect_reference import hooked
from model_export import interpret
from model_export.validate import Tolerances

pytestmark = pytest.mark.browser

API_PAGE = "404.html"
IDS = [464, 3139, 286, 4881, 318, 6342, 13, 383]
CORRUPTED = IDS[:3] + [4486] + IDS[4:]
GOOD, BAD = 6342, 11307
EXACT = 1e-4

# The recipes that run each probe of the inspect graph once (7 runs), as the page's widgets call them.
PROBES = """
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const I = await import('./assets/tx/runtime/interpret.js');
  const b64 = (a) => {
    const f = Float32Array.from(a);
    const bytes = new Uint8Array(f.buffer);
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  };
  const model = await loadModel({ ...options, needs: ['inspect'] });
  const { n_layer: L, n_head: nh, n_embd: C } = model.info.config;
  const lens = await I.logitLens(model, ids);
  const cells = new Float32Array(lens.layers * lens.T * lens.V);
  for (let l = 0; l < lens.layers; l++) for (let t = 0; t < lens.T; t++) cells.set(lens.cell(l, t), (l * lens.T + t) * lens.V);
  const mean = await I.ablateHeads(model, ids, [[0, 1], [1, 3]], 'mean');  // both head probes: scale 0, add the mean
  const rep = I.repeatedTokens(10, model.info.config.vocab_size, 3, model.info.config.eos_token_id);
  const ind = await I.induction(model, rep, 10);
  const dla = await I.logitAttribution(model, ids);
  const got = {
    info: { variant: model.info.variant, backend: model.info.backend, inspect: model.info.inspect },
    lens: b64(cells), mean: b64(mean.after),
    induction: { ids: rep, scores: Array.from(ind.scores), loss: Array.from(ind.loss) },
    dla: { token: dla.token, logit: dla.logit, heads: Array.from(dla.heads), mlps: Array.from(dla.mlps),
           embeddings: dla.embeddings, attnBias: dla.attnBias, rest: dla.rest },
  };
"""
# Every recipe in full: the head map and both patching maps (one run per head or (layer, position)).
RUN_ALL = (
    "async ([options, ids, corrupted, good, bad]) => {"
    + PROBES
    + """
  const zero = await I.ablateHeads(model, ids, [[0, 1], [1, 3]], 'zero');
  const singles = [];
  for (const head of [[0, 0], [L - 1, nh - 1]]) singles.push((await I.ablateHeads(model, ids, [head], 'zero')).kl);
  const progress = [];
  const map = await I.headImportance(model, ids, 'zero', { onProgress: (d, n) => progress.push([d, n]) });
  const resid = await I.patchResidual(model, ids, corrupted, good, bad);
  const heads = await I.patchHeads(model, ids, corrupted, good, bad);
  return { ...got, zero: b64(zero.after), singles, map: Array.from(map.kl), progress,
    resid: { ld: Array.from(resid.ld), restored: Array.from(resid.restored), ldClean: resid.ldClean, ldCorrupt: resid.ldCorrupt },
    heads: { ld: Array.from(heads.ld) } };
}"""
)
# Each probe once: the recipes above, and the residual-stream probe at one site (layer, position):
# the corrupted prompt with the clean stream entering that block at that position (2 runs).
RUN_EACH_PROBE = (
    "async ([options, ids, corrupted, [layer, pos]]) => {"
    + PROBES
    + """
  const T = ids.length;
  const clean = await model.inspect(ids, { want: [`hidden_states.${layer}`], lastOnly: true });
  const scale = new Float32Array(L * T).fill(1);
  const add = new Float32Array(L * T * C);
  scale[layer * T + pos] = 0;
  add.set(clean[`hidden_states.${layer}`].data.subarray(pos * C, (pos + 1) * C), (layer * T + pos) * C);
  const patched = await model.inspect(corrupted, { probes: { resid_scale: scale, resid_add: add }, want: ['logits'], lastOnly: true });
  return { ...got, patched: Array.from(patched.logits.data) };
}"""
)


def floats(encoded: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(encoded), dtype=np.float32).astype(np.float64)


def check_probes(got, model, exact: bool):
    """The lens, the ablations, induction and direct logit attribution against the hooks."""
    V = manifest()["config"]["vocab_size"]
    # validation's bound for these weights: the mean KL over positions (variants.VariantTolerance.kl)
    kl_bound = None if exact else Tolerances.defaults(manifest()["random_weights"]).variants[got["info"]["variant"]].kl

    def same(probs, want):
        probs, want = np.reshape(probs, (-1, V)), np.reshape(want, (-1, V))
        if exact:
            np.testing.assert_allclose(probs, want, atol=EXACT, rtol=0)
        else:
            assert np.mean([interpret.kl_divergence(w, g) for g, w in zip(probs, want, strict=True)]) < kl_bound

    assert got["info"]["inspect"] is True
    same(floats(got["lens"]), interpret.logit_lens(model, IDS))
    if "zero" in got:
        same(floats(got["zero"]), interpret.ablate_heads(model, IDS, [(0, 1), (1, 3)], "zero")[1])
    same(floats(got["mean"]), interpret.ablate_heads(model, IDS, [(0, 1), (1, 3)], "mean")[1])
    ind = interpret.induction(model, got["induction"]["ids"], 10)
    # int8 compute against the fp32 hooks: trained attention moves by up to 0.008 (random weights: 1e-3)
    np.testing.assert_allclose(got["induction"]["scores"], ind["scores"].ravel(), atol=1e-5 if exact else 2e-2, rtol=0)
    if exact:
        np.testing.assert_allclose(got["induction"]["loss"], ind["loss"], atol=1e-4, rtol=0)
    else:  # a rare token's loss moves by up to 1.6 nats under int8 on trained weights (validation
        # bounds the KL, which such tokens barely touch); the copies' means, which the widget shows:
        half = len(ind["loss"]) // 2
        for part in (slice(0, half), slice(half, None)):
            assert np.mean(got["induction"]["loss"][part]) == pytest.approx(np.mean(ind["loss"][part]), abs=0.25)
    dla = interpret.logit_attribution(model, IDS, got["dla"]["token"])
    parts_tol = 1e-4 if exact else 0.15 * np.abs(np.concatenate([dla["heads"].ravel(), dla["mlps"]])).max()
    np.testing.assert_allclose(got["dla"]["heads"], dla["heads"].ravel(), atol=parts_tol, rtol=0)
    np.testing.assert_allclose(got["dla"]["mlps"], dla["mlps"], atol=parts_tol, rtol=0)
    np.testing.assert_allclose([got["dla"]["embeddings"], got["dla"]["attnBias"]], [dla["embeddings"], dla["attn_bias"]], atol=parts_tol, rtol=0)
    bias_share = float(model.ln_f.bias.detach().double() @ model.lm_head.weight[got["dla"]["token"]].detach().double())
    assert got["dla"]["rest"] == pytest.approx(bias_share, abs=1e-3 if exact else 0.05, rel=0 if exact else 2 * LOGIT_RTOL)


# int8/int4 against fp32: patched logit differences measured within 0.014 (q8x, WASM) and
# 0.028 (q4, WebGPU), induction scores within 1e-4, losses within 0.046 on random weights; on the
# book's trained model int8 moves logit differences of about 4.7 by up to 0.23 (5%), hence the
# relative part
def logit_tolerance(exact: bool) -> float:
    return 1e-4 if exact else 0.05


LOGIT_RTOL = 0.06  # relative, int8 against fp32 only


def check_all(got, exact: bool):
    """Every recipe: the probes, then the head map and both patching maps, site by site."""
    cfg = manifest()["config"]
    L, nh = cfg["n_layer"], cfg["n_head"]
    model = hooked(got["info"]["variant"] if exact else "reference")
    check_probes(got, model, exact)
    assert got["progress"][0] == [0, L * nh] and got["progress"][-1] == [L * nh, L * nh] and len(got["progress"]) == L * nh + 1
    want_map = [interpret.kl_divergence(*interpret.ablate_heads(model, IDS, [(layer, head)], "zero")) for layer in range(L) for head in range(nh)]
    if exact:
        np.testing.assert_allclose(got["map"], want_map, atol=EXACT, rtol=0)
    # each map entry is the page's own ablation of that head alone (a wrong index would show);
    # against fp32 an int8 graph's KLs (~5e-5 here) are below its own noise, so only this
    np.testing.assert_allclose([got["map"][0], got["map"][-1]], got["singles"], rtol=1e-6, atol=0)
    rtol = 0 if exact else LOGIT_RTOL
    np.testing.assert_allclose(got["resid"]["ld"], lds_resid(model), atol=logit_tolerance(exact), rtol=rtol)
    np.testing.assert_allclose(got["heads"]["ld"], lds_heads(model), atol=logit_tolerance(exact), rtol=rtol)


def patched_resid(model, base, layer: int, pos: int):
    """The corrupted prompt's last logits with the clean stream (`base`) entering `layer` at `pos`."""
    return interpret.run_with_hooks(model, CORRUPTED, interpret.Edits(resid={(layer, pos): base.resid[layer][pos]})).logits


def lds_resid(model):
    """interpret.patch_residual's patched logit differences (it returns the restored share)."""
    base = interpret.run_with_hooks(model, IDS)
    return [interpret.logit_difference(patched_resid(model, base, layer, pos), GOOD, BAD) for layer in range(len(model.blocks)) for pos in range(len(IDS))]


def lds_heads(model):
    base = interpret.run_with_hooks(model, IDS)
    out = []
    for layer in range(len(model.blocks)):
        for head in range(model.config.n_head):
            run = interpret.run_with_hooks(model, CORRUPTED, interpret.Edits(heads={(layer, head): base.z[layer][head]}))
            out.append(interpret.logit_difference(run.logits, GOOD, BAD))
    return out


def open_page(watched):
    p = watched.goto(API_PAGE)
    p.wait_for_load_state()
    return p


def test_wasm_q4x_matches_pytorch_hooks(page):
    got = open_page(page).evaluate(RUN_ALL, [{"backend": "wasm", "variant": "q4x"}, IDS, CORRUPTED, GOOD, BAD])
    assert got["info"]["backend"] == "wasm"
    check_all(got, exact=True)


def test_wasm_default_variant_within_its_bound(page):
    got = open_page(page).evaluate(RUN_ALL, [{"backend": "wasm"}, IDS, CORRUPTED, GOOD, BAD])
    assert got["info"]["variant"] == manifest()["default_variants"]["wasm"]
    check_all(got, exact=got["info"]["variant"] == "q4x")


def test_webgpu_default_variant_within_its_bound(webgpu_page):
    """q4 on WebGPU (SwiftShader): int4 weights, so within q4's validation bound of the hooks."""
    p = open_page(webgpu_page)
    assert p.evaluate("async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())")
    site = (manifest()["config"]["n_layer"] - 1, CORRUPTED.index(4486))  # the last block, where the prompts differ
    got = p.evaluate(RUN_EACH_PROBE, [{"backend": "webgpu"}, IDS, CORRUPTED, list(site)])
    assert got["info"]["backend"] == "webgpu" and got["info"]["variant"] == manifest()["default_variants"]["webgpu"]
    model = hooked("reference")
    check_probes(got, model, exact=False)
    want = patched_resid(model, interpret.run_with_hooks(model, IDS), *site)
    got_ld = interpret.logit_difference(np.reshape(got["patched"], (1, -1)), GOOD, BAD)
    assert got_ld == pytest.approx(interpret.logit_difference(want, GOOD, BAD), abs=logit_tolerance(False), rel=2 * LOGIT_RTOL)


CHECKS = """async ([ids]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const I = await import('./assets/tx/runtime/interpret.js');
  const out = {};
  const attempt = async (key, fn) => {
    try { await fn(); out[key] = 'no error'; } catch (e) { out[key] = { name: e.name, message: e.message, kind: e.kind || null }; }
  };
  const model = await loadModel({ backend: 'wasm', variant: 'q4x', needs: ['inspect'] });
  await attempt('lengths', () => I.patchResidual(model, ids, ids.slice(1), 1, 2));
  await attempt('empty', () => I.logitLens(model, []));
  await attempt('layer', () => I.ablateHeads(model, ids, [[99, 0]]));
  await attempt('head', () => I.ablateHeads(model, ids, [[0, -1]]));
  const controller = new AbortController();
  await attempt('cancel', () => I.headImportance(model, ids, 'zero', { signal: controller.signal, onProgress: (d) => d === 2 && controller.abort() }));
  const plain = await loadModel({ backend: 'wasm', variant: 'q4x' });
  await attempt('plain', () => plain.inspect(ids));
  return out;
}"""


def test_bad_requests_get_clear_messages(page):
    out = open_page(page).evaluate(CHECKS, [IDS])
    assert out["lengths"]["message"].startswith("The clean prompt has 8 tokens and the corrupted one 7"), out
    assert out["empty"]["message"] == "The prompt is empty: type some text.", out
    assert out["layer"]["message"] == f"Layer 99 does not exist: this model has layers 0 to {manifest()['config']['n_layer'] - 1}.", out
    assert out["head"]["message"].startswith("Head -1 does not exist"), out
    assert out["cancel"]["name"] == "AbortError", out
    assert "without its inspect graph" in out["plain"]["message"], out


def test_a_variant_without_an_inspect_graph_is_named(page):
    """A site whose q8 files were exported before the probes stage: the widget's load says why."""
    m = manifest()
    patched = {**m, "variants": [{k: v for k, v in variant.items() if k != "inspect"} if variant["name"] == "q8" else variant for variant in m["variants"]]}
    p = open_page(page)
    serve_patched_manifest(p, patched)
    out = p.evaluate(
        """async () => {
      const { loadModel } = await import('./assets/tx/runtime/model.js');
      try { await loadModel({ backend: 'wasm', variant: 'q8', needs: ['inspect'] }); return 'loaded'; }
      catch (e) { return e.message; }
    }"""
    )
    assert out == "The q8 variant lacks what this widget needs: the probes the “Looking inside” widgets use (an inspect graph). Choose another variant.", out
