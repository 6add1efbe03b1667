"""demos.interpretability against PyTorch and against model_export.interpret's hooks.

Two kinds of reference: PyTorch's own operations (layer_norm, kl_div, cross_entropy) on random
arrays, and `model_export.interpret`, which computes the same quantities on a whole GPT-2 with
forward hooks; here it runs a small GPT-2 with random weights. Both need PyTorch and skip
themselves inside Pyodide, where the rest (shapes, hand-checkable cases, errors, plain data)
still runs. The last test runs every <tx-predict> of the "Looking inside the model" pages in
CPython, as the widget does in the browser.
"""

from __future__ import annotations

import html
import json
import math
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from demo_checks import NUMBERS, assert_close
from demo_checks import assert_plain as check_plain
from demos import interpretability as interp

assert_plain = partial(check_plain, leaves=NUMBERS)
rng = np.random.default_rng(2024)
EYE3 = np.eye(3).tolist()


# ---------------------------------------------------------------- a small GPT-2 with random weights


@pytest.fixture(scope="module")
def gpt2(torch):
    """(model, interpret): a 2-layer GPT-2 whose every weight is random, LayerNorms included."""
    from model_export import interpret
    from model_export.gpt2 import GPT2, GPT2Config

    torch.manual_seed(0)
    model = GPT2(GPT2Config(n_layer=2, n_head=4, n_embd=16, n_positions=64, vocab_size=97))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name and name.endswith("weight"):
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.3)
    return model, interpret


def weights(model):
    """ln_f's gain and bias and the unembedding, float64 NumPy."""
    return tuple(t.detach().double().numpy() for t in (model.ln_f.weight, model.ln_f.bias, model.lm_head.weight))


IDS = [5, 17, 42, 8, 63, 17, 90]


# ---------------------------------------------------------------- logit lens


def test_logit_lens_matches_torch_layer_norm_and_matmul(torch):
    N, C, V = 4, 6, 11
    x, g, b, w_u = rng.normal(size=(N, C)), rng.uniform(0.5, 2, C), rng.normal(size=C), rng.normal(size=(V, C))
    got = interp.logit_lens(x.tolist(), g.tolist(), b.tolist(), w_u.tolist(), top_k=3)
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    logits = torch.nn.functional.layer_norm(t(x), (C,), t(g), t(b), eps=1e-5) @ t(w_u).T
    want = torch.softmax(logits, dim=-1).numpy()
    assert_close(got["probs"], want)
    assert got["top"] == want.argmax(-1).tolist()
    assert got["top_k_tokens"] == np.argsort(-want, axis=-1)[:, :3].tolist()
    final = int(want[-1].argmax())
    assert got["final_token"] == final
    assert_close(got["final_prob"], want[:, final])
    assert got["final_rank"] == [1 + int((row > row[final]).sum()) for row in want]
    assert got["final_rank"][-1] == 1
    assert_plain(got)


def test_logit_lens_matches_the_hooks_on_gpt2(gpt2):
    model, interpret = gpt2
    want = interpret.logit_lens(model, IDS)  # (L + 1, T, V)
    run = interpret.run_with_hooks(model, IDS)
    g, b, w_u = weights(model)
    for pos in (0, len(IDS) - 1):
        resid = np.stack([r[pos] for r in run.resid])  # (L + 1, C) one position at every depth
        got = interp.logit_lens(resid.tolist(), g.tolist(), b.tolist(), w_u.tolist())
        assert_close(got["probs"], want[:, pos], tol=1e-5)  # the hooks' lens runs in float32
    # the last row of the lens is the model's own prediction
    assert_close(got["probs"][-1], interpret.softmax(run.logits[-1]), tol=1e-5)


def test_the_lens_ignores_the_streams_scale():
    once = interp.logit_lens([[1, 2, 3], [10, 20, 30]], [1, 1, 1], [0, 0, 0], EYE3)
    assert once["top_prob"][0] == pytest.approx(once["top_prob"][1], abs=1e-5)


def test_settles_at_is_where_the_final_token_stays_on_top():
    x = [[0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 2], [0, 0, 3]]  # tops: 2 1 2 0 2 2
    got = interp.logit_lens(x, [1, 1, 1], [0, 0, 0], EYE3)
    assert got["top"] == [2, 1, 2, 0, 2, 2] and got["settles_at"] == 4


# ---------------------------------------------------------------- head ablation


def test_kl_matches_torch_kl_div(torch):
    for _ in range(5):
        p, q = rng.dirichlet(np.ones(20)), rng.dirichlet(np.ones(20))
        got = interp.kl_divergence(p.tolist(), q.tolist())
        tp, tq = torch.tensor(p), torch.tensor(q)
        want = torch.nn.functional.kl_div(tq.log(), tp, reduction="sum").item()  # KL(p || q)
        back = torch.nn.functional.kl_div(tp.log(), tq, reduction="sum").item()
        assert got["kl"] == pytest.approx(want, rel=1e-12) and got["reverse"] == pytest.approx(back, rel=1e-12)


def test_kl_of_a_distribution_with_itself_is_zero_and_a_missing_token_is_infinite():
    assert interp.kl_divergence([0.2, 0.8], [0.2, 0.8])["kl"] == 0.0
    got = interp.kl_divergence([0.5, 0.5], [1.0, 0.0])
    assert got["kl"] == math.inf and got["reverse"] == pytest.approx(math.log(2))


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_matches_the_hooks_on_gpt2(gpt2, mode):
    """Editing z with demos.ablate_heads and running the model gives interpret.ablate_heads's answer."""
    model, interpret = gpt2
    layer, heads = 1, [0, 2]
    before, after = interpret.ablate_heads(model, IDS, [(layer, h) for h in heads], mode)
    run = interpret.run_with_hooks(model, IDS)
    z = interp.ablate_heads(run.z[layer].tolist(), heads, mode)["z"]
    edits = interpret.Edits(heads={(layer, h): np.asarray(z[h]) for h in heads})
    assert_close(interpret.softmax(interpret.run_with_hooks(model, IDS, edits).logits[-1]), after, tol=1e-6)
    means = interpret.head_means(run)
    for h in heads:
        assert_close(z[h], means[(layer, h)] if mode == "mean" else np.zeros_like(means[(layer, h)]))
    kl = interp.kl_divergence(before.tolist(), (after / after.sum()).tolist())["kl"]
    assert kl == pytest.approx(interpret.kl_divergence(before, after), rel=1e-9, abs=1e-12)


def test_mean_ablation_keeps_a_constant_head():
    z = [[[2.0, -1.0]] * 3, [[1.0, 0.0], [3.0, 0.0], [5.0, 0.0]]]  # (nh=2, T=3, hd=2)
    assert interp.ablate_heads(z, [0], "mean")["change"] == 0.0
    got = interp.ablate_heads(z, [1], "mean")
    assert got["z"][1] == [[3.0, 0.0]] * 3 and got["change"] == 2.0
    assert interp.ablate_heads(z, [0, 1], "zero")["z"] == [[[0.0, 0.0]] * 3] * 2


# ---------------------------------------------------------------- patching


def test_restored_fraction_matches_the_hooks_residual_patching(gpt2):
    model, interpret = gpt2
    clean, corrupted, good, bad = IDS, [5, 17, 11, 8, 63, 17, 90], 3, 70  # one token differs
    want = interpret.patch_residual(model, clean, corrupted, good, bad)  # (L, T)
    base = interpret.run_with_hooks(model, clean)
    ld = lambda ids, edits=None: interp.logit_difference(interpret.run_with_hooks(model, ids, edits).logits.tolist(), good, bad)["difference"]  # noqa: E731
    ld_clean, ld_corrupt = ld(clean), ld(corrupted)
    assert ld_clean == pytest.approx(interpret.logit_difference(base.logits, good, bad), rel=1e-12)
    grid = [[ld(corrupted, interpret.Edits(resid={(layer, pos): base.resid[layer][pos]})) for pos in range(len(IDS))] for layer in range(2)]
    got = interp.restored_fraction(grid, ld_clean, ld_corrupt)
    assert_close(got["fraction"], want, tol=1e-9)
    assert got["max"] == pytest.approx(want.max()) and tuple(got["argmax"]) == np.unravel_index(want.argmax(), want.shape)
    # before the changed token nothing can be restored; at layer 0 of the changed position, all of it
    assert_close(np.asarray(got["fraction"])[:, :2], 0.0, tol=1e-6)
    assert np.asarray(got["fraction"])[0, 2] == pytest.approx(1.0, abs=1e-6)
    for patched in (ld_clean, ld_corrupt, 0.3):
        assert interp.restored_fraction(patched, ld_clean, ld_corrupt)["fraction"] == pytest.approx(interpret.restored(patched, ld_clean, ld_corrupt))


def test_logit_difference_reads_the_last_row():
    assert interp.logit_difference([[9, 0, 0], [1, 4, 2]], 1, 2) == {"difference": 2.0, "good": 4.0, "bad": 2.0}
    assert interp.logit_difference([1, 4, 2], 0, 1)["difference"] == -3.0


# ---------------------------------------------------------------- induction heads


def test_repeated_sequence_is_interprets(gpt2):
    _, interpret = gpt2
    for half, seed, bos in ((20, 1, None), (7, 3, 50256)):
        got = interp.repeated_sequence(half, 50257, seed, bos)
        assert got["ids"] == interpret.repeated_tokens(half, 50257, seed, bos)
        assert got["ids"][got["second_start"] :] == got["ids"][got["second_start"] - half : got["second_start"]]


def test_induction_scores_and_losses_match_the_hooks_on_gpt2(gpt2, torch):
    model, interpret = gpt2
    half = 10
    ids = interp.repeated_sequence(half, 97, seed=1, bos=0)["ids"]
    want = interpret.induction(model, ids, half)
    attn = np.stack(want["attn"])  # (L, nh, T, T)
    got = interp.induction_score(attn.tolist(), half)
    assert_close(got["scores"], want["scores"])
    assert got["best_score"] == pytest.approx(want["scores"].max())
    assert_close(interp.induction_score(attn[1].tolist(), half)["scores"], want["scores"][1])
    # the loss: torch's cross-entropy of the model's logits
    logits = model(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long), torch.arange(len(ids))[None])[0][0]
    loss = torch.nn.functional.cross_entropy(logits[:-1].double(), torch.tensor(ids[1:]), reduction="none").detach().numpy()
    assert_close(loss, want["loss"], tol=1e-5)
    copies = interp.copy_losses(loss.tolist(), half)
    start = len(ids) - 2 * half
    assert copies["first"] == pytest.approx(loss[start : start + half - 1].mean())
    assert copies["second"] == pytest.approx(loss[start + half :].mean())


def test_ideal_patterns_are_causal_distributions_with_the_expected_scores():
    half, prefix = 6, 1
    T = prefix + 2 * half
    for kind in interp.KINDS:
        attn = np.asarray(interp.ideal_pattern(kind, half, prefix)["attn"])
        assert attn.shape == (T, T) and np.allclose(attn.sum(-1), 1) and not np.triu(attn, 1).any(), kind
    assert interp.ideal_pattern("induction", half, prefix)["score"] == 1.0
    assert interp.ideal_pattern("previous", half, prefix)["score"] == 0.0
    assert interp.ideal_pattern("previous", 2)["score"] == 1.0  # with copies of 2, t - 1 is t - half + 1
    queries = np.arange(T - half, T)
    assert interp.ideal_pattern("uniform", half, prefix)["score"] == pytest.approx(np.mean(1 / (queries + 1)))


def test_copy_losses_and_uniform_loss():
    loss = [5, 5, 5, 9, 1, 1, 1]  # T = 8, half = 4: first copy predicts tokens 1..3, second 5..7
    assert interp.copy_losses(loss, 4) == {"first": 5.0, "second": 1.0, "drop": 4.0}
    assert interp.uniform_loss(50257)["loss"] == pytest.approx(math.log(50257))


# ---------------------------------------------------------------- direct logit attribution


def test_attribution_sums_to_the_torch_logit_less_the_bias_share(torch):
    K, C = 5, 12
    parts = rng.normal(size=(K, C))
    x, g, b, w = parts.sum(0), rng.uniform(0.5, 2, C), rng.normal(size=C), rng.normal(size=C)
    got = interp.direct_logit_attribution(parts.tolist(), x.tolist(), g.tolist(), w.tolist(), b.tolist())
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    logit = float(torch.nn.functional.layer_norm(t(x), (C,), t(g), t(b), eps=1e-5) @ t(w))
    assert got["logit"] == pytest.approx(logit, rel=1e-12)
    assert got["total"] + got["bias_share"] == pytest.approx(logit, rel=1e-10)
    assert abs(got["unexplained"]) < 1e-10
    assert_plain(got)


def test_attribution_matches_the_hooks_on_gpt2(gpt2):
    model, interpret = gpt2
    token = 7
    want = interpret.logit_attribution(model, IDS, token)
    run = interpret.run_with_hooks(model, IDS)
    L, nh, hd = 2, model.config.n_head, model.config.head_dim
    rows = [run.resid[0][-1]]  # the embeddings
    for layer, block in enumerate(model.blocks):
        w = block.attn.c_proj.weight.detach().double().numpy()  # (C, C): out, in
        rows += [w[:, h * hd : (h + 1) * hd] @ run.z[layer][h][-1] for h in range(nh)]  # one head's write
        rows += [block.attn.c_proj.bias.detach().double().numpy(), run.mlp_out[layer][-1]]
    g, b, w_u = weights(model)
    got = interp.direct_logit_attribution(np.stack(rows).tolist(), run.resid[-1][-1].tolist(), g.tolist(), w_u[token].tolist(), b.tolist())
    parts = np.asarray(got["contributions"])
    per_layer = parts[1:].reshape(L, nh + 2)  # heads, c_proj bias, MLP
    assert parts[0] == pytest.approx(want["embeddings"], abs=1e-9)
    assert_close(per_layer[:, :nh], want["heads"], tol=1e-9)
    assert_close(per_layer[:, nh + 1], want["mlps"], tol=1e-9)
    assert per_layer[:, nh].sum() == pytest.approx(want["attn_bias"], abs=1e-9)
    # the recorded pieces add up to the stream (float32 in the model), so the parts reach the logit
    assert got["total"] + got["bias_share"] == pytest.approx(want["logit"], abs=1e-4)


def test_a_component_away_from_the_token_still_counts_through_the_centring():
    got = interp.direct_logit_attribution([[2, 0, 0, 0], [0, 2, 0, 0]], [2, 2, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0])
    assert got["contributions"] == pytest.approx([1.5, -0.5], abs=1e-4)


# ---------------------------------------------------------------- readable errors


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: interp.logit_lens([[1, 2]], [1, 1, 1], [0, 0, 0], EYE3), "the residual stream is 2 wide"),
        (lambda: interp.logit_lens([1, 2, 3], [1, 1, 1], [0, 0, 0], EYE3), "2-dimensional"),
        (lambda: interp.logit_lens([[1, 2, 3]], [1, 1, 1], [0, 0, 0], EYE3, eps=0), "eps must be positive"),
        (lambda: interp.kl_divergence([0.5, 0.6], [0.5, 0.5]), "sums to"),
        (lambda: interp.kl_divergence([1.5, -0.5], [0.5, 0.5]), "negative"),
        (lambda: interp.kl_divergence([1.0], [0.5, 0.5]), "same tokens"),
        (lambda: interp.ablate_heads([[[1.0]]], [1], "zero"), "between 0 and 0"),
        (lambda: interp.ablate_heads([[[1.0]]], [0], "half"), "mode must be"),
        (lambda: interp.ablate_heads([[[1.0]]], "0", "zero"), "list of head indexes"),
        (lambda: interp.restored_fraction(1.0, 2.0, 2.0), "nothing to restore"),
        (lambda: interp.restored_fraction("a", 2.0, 1.0), "must be a number"),
        (lambda: interp.logit_difference([1, 2], 0, 5), "between 0 and 1"),
        (lambda: interp.induction_score([[[1.0, 0.0], [0.5, 0.5]]], 2), "too few"),
        (lambda: interp.induction_score([[[1.0, 0.0]]], 1), "square"),
        (lambda: interp.ideal_pattern("random", 3), "kind must be"),
        (lambda: interp.copy_losses([1.0, 2.0], 2), "too few"),
        (lambda: interp.uniform_loss(0), "between 1"),
        (lambda: interp.direct_logit_attribution([[1, 2]], [1, 2, 3], [1, 1, 1], [1, 0, 0]), "final_resid is 3 wide"),
        (lambda: interp.direct_logit_attribution([[1, math.nan, 0]], [1, 2, 3], [1, 1, 1], [1, 0, 0]), "NaN"),
    ],
)
def test_bad_input_gets_a_readable_error(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_results_are_plain_data():
    for result in (
        interp.logit_lens([[1, 2, 3]], [1, 1, 1], [0, 0, 0], EYE3),
        interp.kl_divergence([0.5, 0.5], [0.9, 0.1]),
        interp.ablate_heads([[[1.0], [3.0]]], [0], "mean"),
        interp.restored_fraction([[1.0, 2.0]], 4.0, -2.0),
        interp.repeated_sequence(4),
        interp.ideal_pattern("induction", 3),
        interp.induction_score([[[1.0, 0.0], [0.5, 0.5]]], 1),
        interp.copy_losses([1.0, 2.0, 3.0], 2),
        interp.uniform_loss(),
        interp.direct_logit_attribution([[1, 2, 3]], [1, 2, 3], [1, 1, 1], [1, 0, 0]),
    ):
        assert_plain(result)


# ---------------------------------------------------------------- the pages' predictions

DOCS = Path(__file__).resolve().parents[2] / "docs" / "inside"
# The five technique pages this module computes for (the section's other pages, circuits and
# superposition, have modules of their own).
TECHNIQUES = ("logit-lens.md", "head-ablation.md", "patching.md", "induction-heads.md", "logit-attribution.md")
PAGES = [DOCS / name for name in TECHNIQUES] if DOCS.is_dir() else []  # no docs/ inside Pyodide
TAG = re.compile(r"<tx-predict\b([^>]*)>")
ATTR = re.compile(r"""([a-z-]+)=(?:"([^"]*)"|'([^']*)')""")
PREDICTIONS = [
    (page.name, {name: html.unescape(q or a) for name, q, a in ATTR.findall(match.group(1))})
    for page in PAGES
    for match in TAG.finditer(page.read_text(encoding="utf-8"))
]


def within(guess, answer, tolerance):
    if tolerance.endswith("%"):
        return abs(guess - answer) <= float(tolerance[:-1]) / 100 * abs(answer) + 1e-12
    return abs(guess - answer) <= float(tolerance) + 1e-12 * abs(answer)


@pytest.mark.skipif(not PAGES, reason="the docs/inside pages are not here (inside Pyodide)")
def test_each_technique_page_has_two_or_three_predictions():
    counts = {p.name: sum(1 for name, _ in PREDICTIONS if name == p.name) for p in PAGES}
    assert len(counts) == 5 and all(2 <= n <= 3 for n in counts.values()), counts


@pytest.mark.parametrize("page, attrs", PREDICTIONS, ids=[f"{p}:{a.get('function')}" for p, a in PREDICTIONS])
def test_the_pages_predictions_are_computed_by_this_module(page, attrs):
    assert attrs["module"] == "interpretability"
    result = getattr(interp, attrs["function"])(**json.loads(attrs.get("kwargs", "{}")))
    answer = result
    for key in attrs["answer"].split("."):
        answer = answer[int(key)] if isinstance(answer, list) else answer[key]
    tolerance = attrs.get("tolerance", "5%")
    if "choices" in attrs:
        values = [part.split(":", 1)[0].strip() for part in attrs["choices"].split("|") if part.strip()]
        right = [v for v in values if within(float(v), answer, tolerance)]
        assert len(right) == 1, f"{page}: answer {answer!r}, choices {values}"
    else:
        assert isinstance(answer, float | int) and "{answer}" in attrs["explain"], page
