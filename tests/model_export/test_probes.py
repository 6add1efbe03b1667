"""probes.py: each variant's inspect graph computes what PyTorch hooks on gpt2.GPT2 compute.

Every quantity of the "Looking inside the model" pages is computed twice, on the model make
builds for the tests (the book's own):
with the graph's probes in onnxruntime (fed the way model-worker.js feeds them) and with
interpret.py's hooks on our PyTorch module holding the same weights. The fp32 reference and q4x
(fp32 compute on the dequantized weights) agree to 1e-4 in probability; the int8 variants agree
within their validation bound (KL) against the fp32 module.
"""

import json

import numpy as np
import onnx
import pytest
import torch

from export_helpers import MADE_MODEL
from model_export import interpret
from model_export.gpt2 import GPT2, GPT2Config
from model_export.layout import INSPECT_FILE, MANIFEST
from model_export.pipeline import BuildDir
from model_export.probes import PROBE_INPUTS, InspectSession, ProbeError, add_probes
from model_export.runtime import OrtGPT2, prompt_outputs
from model_export.tables import read_weights
from model_export.validate import Tolerances

MODEL = MADE_MODEL
BUILD = BuildDir(MODEL)
BUILT = (MODEL / MANIFEST).is_file() and BUILD.inspect_graph("reference").is_file()
needs_model = pytest.mark.skipif(not BUILT, reason=f"{MODEL} has no inspect graphs (make model)")
pytestmark = needs_model

IDS = [464, 3139, 286, 4881, 318, 6342, 13, 383]  # " The capital of France is Paris. The"
EXACT = 1e-4  # probabilities, fp32 paths
GRAPHS = {"reference": "reference", "q4x": "q4x", "q8x": "q8x", "q4": "q4", "q8": "q8"}
FP32 = {"reference", "q4x"}  # fp32 compute: compared at EXACT


def config():
    return json.loads((MODEL / MANIFEST).read_text())["config"]


@pytest.fixture(scope="module", params=list(GRAPHS))
def case(request):
    """(name, InspectSession, PyTorch GPT2 with the graph's weights, probability check)."""
    name = request.param
    cfg = config()
    weights_from = BUILD.reference if name != "q4x" else BUILD.runnable_graph("q4x")
    model = GPT2(GPT2Config(**cfg))
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in read_weights(weights_from, cfg["n_layer"]).state_dict().items()})
    session = InspectSession(BUILD.inspect_graph(name), cfg)
    random_weights = json.loads((MODEL / MANIFEST).read_text())["random_weights"]
    kl_bound = Tolerances.defaults(random_weights).variants[name].kl if name not in FP32 else None

    def same_distribution(got_logits, want_probs):
        got = interpret.softmax(np.asarray(got_logits, np.float64))
        if kl_bound is None:
            np.testing.assert_allclose(got, want_probs, atol=EXACT, rtol=0)
        else:
            rows = np.reshape(got, (-1, got.shape[-1])), np.reshape(want_probs, (-1, want_probs.shape[-1]))
            assert np.mean([interpret.kl_divergence(w, g) for g, w in zip(*rows, strict=True)]) < kl_bound  # validation's mean KL

    return name, session, model, same_distribution


def test_without_interventions_the_inspect_graph_is_the_variant(case):
    name, session, *_ = case
    plain = MODEL / ".build" / "reference.onnx" if name == "reference" else BUILD.runnable_graph(name)
    want = prompt_outputs(OrtGPT2(plain, GPT2Config(**config())), IDS)
    got = session.run(IDS)
    np.testing.assert_array_equal(got["logits"], want["logits"])
    np.testing.assert_array_equal(got["hidden_states.2"], want["hidden_states.2"])


def test_logit_lens(case):
    _, session, model, same = case
    cfg = config()
    run = session.run(IDS, want=[f"hidden_states.{i}" for i in range(cfg["n_layer"] + 1)])
    rows = np.concatenate([run[f"hidden_states.{i}"] for i in range(cfg["n_layer"] + 1)], axis=1)  # (1, (L+1) T, C)
    lens = session.run(IDS[:1], want=["lens_logits"], lens_hidden=rows)["lens_logits"]
    same(lens[0].reshape(cfg["n_layer"] + 1, len(IDS), -1), interpret.logit_lens(model, IDS))


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_head_ablation(case, mode):
    _, session, model, same = case
    cfg = config()
    heads = [(0, 1), (1, 3)]
    clean = session.run(IDS, want=[f"head_outputs.{i}" for i in range(cfg["n_layer"])])
    scale = np.ones((1, cfg["n_layer"], cfg["n_head"], len(IDS)), np.float32)
    add = np.zeros((1, cfg["n_layer"], cfg["n_head"], len(IDS), cfg["n_embd"] // cfg["n_head"]), np.float32)
    for layer, head in heads:
        scale[0, layer, head] = 0
        if mode == "mean":
            add[0, layer, head] = clean[f"head_outputs.{layer}"][0, head].mean(axis=0)
    after = session.run(IDS, want=["logits"], head_scale=scale, head_add=add)["logits"][0, -1]
    before, want = interpret.ablate_heads(model, IDS, heads, mode)
    same(after, want)
    assert interpret.kl_divergence(before, interpret.softmax(after.astype(np.float64))) > 0


def corrupted():
    return IDS[:3] + [4486] + IDS[4:]  # France -> Germany: same length


def test_residual_patching(case):
    _, session, model, same = case
    cfg = config()
    L, T, C = cfg["n_layer"], len(IDS), cfg["n_embd"]
    clean = session.run(IDS, want=[f"hidden_states.{i}" for i in range(L)])
    for layer, pos in [(0, 3), (1, 3), (1, 7)]:
        scale = np.ones((1, L, T), np.float32)
        add = np.zeros((1, L, T, C), np.float32)
        scale[0, layer, pos] = 0
        add[0, layer, pos] = clean[f"hidden_states.{layer}"][0, pos]
        got = session.run(corrupted(), want=["logits"], resid_scale=scale, resid_add=add)["logits"]
        base = interpret.run_with_hooks(model, IDS)
        want = interpret.run_with_hooks(model, corrupted(), interpret.Edits(resid={(layer, pos): base.resid[layer][pos]}))
        same(got[0], interpret.softmax(want.logits))


def test_head_patching(case):
    _, session, model, same = case
    cfg = config()
    L, nh, T = cfg["n_layer"], cfg["n_head"], len(IDS)
    clean = session.run(IDS, want=[f"head_outputs.{i}" for i in range(L)])
    layer, head = 1, 2
    scale = np.ones((1, L, nh, T), np.float32)
    add = np.zeros((1, L, nh, T, cfg["n_embd"] // nh), np.float32)
    scale[0, layer, head] = 0
    add[0, layer, head] = clean[f"head_outputs.{layer}"][0, head]
    got = session.run(corrupted(), want=["logits"], head_scale=scale, head_add=add)["logits"]
    base = interpret.run_with_hooks(model, IDS)
    want = interpret.run_with_hooks(model, corrupted(), interpret.Edits(heads={(layer, head): base.z[layer][head]}))
    same(got[0], interpret.softmax(want.logits))


def test_induction_scores_and_loss(case):
    name, session, model, _ = case
    cfg = config()
    half = 10
    ids = interpret.repeated_tokens(half, cfg["vocab_size"], seed=3, bos=cfg["eos_token_id"])
    out = session.run(ids, want=["logits", *[f"attentions.{i}" for i in range(cfg["n_layer"])]])
    want = interpret.induction(model, ids, half)
    queries = np.arange(len(ids) - half, len(ids))
    scores = np.stack([out[f"attentions.{i}"][0][:, queries, queries - half + 1].mean(axis=1) for i in range(cfg["n_layer"])])
    logp = np.log(interpret.softmax(out["logits"][0, :-1].astype(np.float64)))
    loss = -logp[np.arange(len(ids) - 1), ids[1:]]
    exact = name in FP32
    # int8 compute against the fp32 module: trained attention moves by up to 0.007 here, random by 1e-3
    np.testing.assert_allclose(scores, want["scores"], atol=1e-5 if exact else 2e-2, rtol=0)
    # and a rare token's loss (10 to 15 nats on random tokens) by up to 4% of itself
    np.testing.assert_allclose(loss, want["loss"], atol=1e-4 if exact else 0.1, rtol=0 if exact else 0.05)


def test_direct_logit_attribution(case):
    name, session, model, _ = case
    cfg = config()
    L, nh, C = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    hd = C // nh
    clean = session.run(IDS, want=["logits", f"hidden_states.{L}", *[f"{k}.{i}" for k in ("head_outputs", "mlp_outputs") for i in range(L)]])
    token = int(np.argmax(clean["logits"][0, -1]))
    # per head: its output alone through c_proj, less c_proj of nothing (the bias)
    rows = np.zeros((1, L, nh + 1, C), np.float32)
    for layer in range(L):
        for head in range(nh):
            rows[0, layer, head + 1, head * hd : (head + 1) * hd] = clean[f"head_outputs.{layer}"][0, head, -1]
    writes = session.run(IDS[:1], want=[f"head_writes.{i}" for i in range(L)], head_rows=rows)
    components = [writes[f"head_writes.{i}"][0, h + 1] - writes[f"head_writes.{i}"][0, 0] for i in range(L) for h in range(nh)]
    components += [clean[f"mlp_outputs.{i}"][0, -1] for i in range(L)]
    final = clean[f"hidden_states.{L}"][0, -1].astype(np.float64)
    sigma = np.sqrt(final.var() + 1e-5)
    centred = np.stack([(c - c.mean()) / sigma for c in components]).astype(np.float32)  # (M, C)
    scale = np.abs(centred).max(axis=1, keepdims=True)  # each row at full int8 range, scaled back after
    read = session.run(IDS[:1], want=["unembed_logits"], unembed_rows=(centred / scale)[None])["unembed_logits"][0, :, token] * scale[:, 0]
    want = interpret.logit_attribution(model, IDS, token)
    # quantized graphs: their parts differ from fp32 by about what their logits do (~0.1 of the largest part here)
    atol = 1e-4 if name in FP32 else 0.15 * np.abs(np.concatenate([want["heads"].ravel(), want["mlps"]])).max()
    np.testing.assert_allclose(read[: L * nh].reshape(L, nh), want["heads"], atol=atol, rtol=0)
    np.testing.assert_allclose(read[L * nh :], want["mlps"], atol=atol, rtol=0)


def test_the_parts_sum_to_the_logit():
    """interpret.logit_attribution itself: the parts add up to the logit less ln_f's bias."""
    cfg = config()
    model = GPT2(GPT2Config(**cfg))
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in read_weights(BUILD.reference, cfg["n_layer"]).state_dict().items()})
    token = 11
    parts = interpret.logit_attribution(model, IDS, token)
    bias_share = float(model.ln_f.bias.double() @ model.lm_head.weight[token].double())
    total = parts["heads"].sum() + parts["mlps"].sum() + parts["embeddings"] + parts["attn_bias"] + bias_share
    assert total == pytest.approx(parts["logit"], abs=1e-4)


def test_a_graph_without_the_tensors_gets_no_probes():
    fp16 = onnx.load(str(MODEL / "fp16" / "model.onnx"), load_external_data=False)
    with pytest.raises(ProbeError):
        add_probes(fp16, config())
    assert not (MODEL / "fp16" / INSPECT_FILE).exists()
    manifest = json.loads((MODEL / MANIFEST).read_text())
    has = {v["name"]: "inspect" in v for v in manifest["variants"]}
    assert has == {"q4x": True, "q8x": True, "q4": True, "q8": True, "fp16": False}


def test_the_inspect_graph_keeps_the_variants_weights():
    """Same initializers and external-data references: the browser builds one set of weights."""
    for name in ["q4x", "q8x", "q4", "q8"]:
        plain = onnx.load(str(MODEL / name / "model.onnx"), load_external_data=False)
        probed = onnx.load(str(MODEL / name / INSPECT_FILE), load_external_data=False)
        refs = lambda m: {(t.name, tuple((e.key, e.value) for e in t.external_data)) for t in m.graph.initializer if not t.name.startswith("probe/")}  # noqa: E731
        assert refs(probed) == refs(plain)
        assert {i.name for i in probed.graph.input} - {i.name for i in plain.graph.input} == set(PROBE_INPUTS)
