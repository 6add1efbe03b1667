"""The book's own trained model (``model_export/book_model``, written by ``model-export train``).

What it learned, measured in PyTorch with the hooks of ``model_export/interpret.py``: a logit
lens that converges through the layers, and the book's English (held-out perplexity, greedy
text, next-token ranks). Then the checkpoint itself: its size, its record, and a re-run of the
recipe's first steps that must draw the committed loss curve, through a stop and a resume.
What it did not learn (copying random tokens: no induction head) is measured where the page
says so, in tests/docs/test_training_numbers.py.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import asdict

import numpy as np
import pytest
import torch

from export_helpers import ROOT
from model_export import corpus, interpret, train
from model_export.gpt2 import GPT2
from model_export.weights import BOOK_MODEL_DIR, BOOK_SOURCE, load_hf

RECORD = json.loads((BOOK_MODEL_DIR / train.RECIPE_FILE).read_text())
PAGES = corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE)


@pytest.fixture(scope="module")
def hf():
    return load_hf(BOOK_SOURCE).model


@pytest.fixture(scope="module")
def model(hf):
    return GPT2.from_hf(hf, output_attentions=True, output_hidden_states=True)


@pytest.fixture(scope="module")
def streams():
    return train.tokenize(PAGES, train.gpt2_tokenizer())


# ---------------------------------------------------------------- the logit lens


def test_the_logit_lens_ends_at_the_output_and_converges_through_the_layers(model, streams):
    ids = streams.held_out[1:65].tolist()  # a held-out page's opening
    lens = interpret.logit_lens(model, ids)  # (L + 1, T, V)
    output = interpret.softmax(interpret.run_with_hooks(model, ids).logits)
    np.testing.assert_allclose(lens[-1], output, atol=1e-9)
    final_top1 = lens[-1].argmax(-1)
    agreement = [(layer.argmax(-1) == final_top1).mean() for layer in lens]
    print("agreement with the final top-1 by layer:", np.round(agreement, 3))
    assert agreement[-1] == 1.0
    assert all(b > a for a, b in zip(agreement, agreement[1:], strict=False))  # rising, block by block


# ---------------------------------------------------------------- the book's English


@pytest.fixture(scope="module")
def held_out_losses(hf, streams) -> np.ndarray:
    """Every held-out token's loss, windows as ``train.held_out_windows`` cuts them."""
    windows = torch.from_numpy(train.held_out_windows(train.Recipe(), streams))
    with torch.no_grad():
        losses = [torch.nn.functional.cross_entropy(hf(input_ids=w[None, :-1]).logits[0], w[1:], reduction="none") for w in windows]
    return torch.cat(losses).numpy()


def test_held_out_perplexity_is_far_below_uniform_and_as_recorded(held_out_losses, streams):
    ppl = math.exp(held_out_losses.mean())
    print(f"held-out perplexity {ppl:.1f} over {len(streams.held_out)} tokens (uniform: {streams.vocab_size})")
    assert ppl < streams.vocab_size / 50
    assert ppl == pytest.approx(RECORD["result"]["held_out_ppl"], rel=0.01)  # fp16 weights vs the fp32 ones


def test_the_true_next_token_is_in_the_top_10_far_more_often_than_chance(hf, streams):
    ids = torch.from_numpy(streams.held_out[: train.Recipe().context + 1])
    with torch.no_grad():
        logits = hf(input_ids=ids[None, :-1]).logits[0]  # (T, V)
    top10 = logits.topk(10, dim=-1).indices
    hits = (top10 == ids[1:, None]).any(-1).float().mean().item()
    chance = 10 / streams.vocab_size
    print(f"true next token in the top 10: {hits:.1%} of {len(ids) - 1} held-out positions (chance {chance:.3%})")
    assert hits > 100 * chance and hits > 0.2


def test_greedy_text_is_not_one_token_repeated(hf, streams):
    tokenizer = train.gpt2_tokenizer()
    prompt = tokenizer.encode("The attention weights of each head").ids
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=40, do_sample=False, pad_token_id=streams.eos)
    new = out[0, len(prompt) :].tolist()
    print(repr(tokenizer.decode(new)))
    assert len(set(new)) >= 10


# ---------------------------------------------------------------- the checkpoint and its recipe


def test_the_checkpoint_is_float16_under_16_mb_with_its_record():
    weights = BOOK_MODEL_DIR / "model.safetensors"
    assert weights.stat().st_size <= 16_000_000
    header_size = struct.unpack("<Q", weights.read_bytes()[:8])[0]
    header = json.loads(weights.read_bytes()[8 : 8 + header_size])
    assert {t["dtype"] for k, t in header.items() if k != "__metadata__"} == {"F16"}
    recipe = train.Recipe()
    assert RECORD["recipe"] == json.loads(json.dumps(asdict(recipe)))
    assert RECORD["corpus"]["sha256"] == corpus.pages_hash(PAGES)
    log = train.reference_log(BOOK_MODEL_DIR, recipe, PAGES)
    assert [entry["step"] for entry in log] == list(range(1, recipe.steps + 1))
    assert RECORD["wall_s"] <= 20 * 60


def test_the_recipe_redraws_the_committed_curve_through_a_stop_and_a_resume(tmp_path):
    recipe = train.Recipe()
    committed = train.reference_log(BOOK_MODEL_DIR, recipe, PAGES)
    train.train(tmp_path, recipe, PAGES, stop_after=3, progress=False)
    assert (tmp_path / train.STATE_FILE).is_file()
    log = train.train(tmp_path, recipe, PAGES, resume=True, stop_after=6, progress=False)["log"]
    assert [entry["step"] for entry in log] == list(range(1, 7))
    assert train.compare_logs(log, committed) <= 1e-4


# ---------------------------------------------------------------- what the page says


PAGE = " ".join((ROOT / "docs" / "training" / "book-model.md").read_text(encoding="utf-8").split())
GPT2_SMALL_PARAMS = 124_439_808


def stated(phrase: str) -> None:
    assert phrase in PAGE, f"training/book-model.md no longer says: {phrase}"


def test_the_page_states_the_measured_english(hf, model, streams, held_out_losses):
    ppl = math.exp(held_out_losses.mean())
    stated(f"On the {len(streams.held_out):,} tokens of the held-out pages its perplexity is {ppl:.0f}:")
    stated(f"a uniform pick among {ppl:.0f} tokens")
    stated("135,108 tokens of this book's prose")
    assert RECORD["corpus"]["train_tokens"] == 135_108
    ids = torch.from_numpy(streams.held_out[: train.Recipe().context + 1])
    with torch.no_grad():
        top10 = hf(input_ids=ids[None, :-1]).logits[0].topk(10, dim=-1).indices
    stated(f"among its ten most likely in {100 * (top10 == ids[1:, None]).any(-1).float().mean().item():.0f}% of them")
    lens = interpret.logit_lens(model, streams.held_out[1:65].tolist())
    agreement = [100 * (layer.argmax(-1) == lens[-1].argmax(-1)).mean() for layer in lens]
    first, *middle = (f"{a:.0f}%" for a in agreement[:4])
    stated(f"matches the final top-1 at {first} of the positions, after blocks 0, 1 and 2 at {middle[0]}, {middle[1]} and {middle[2]}")
    note = " ".join((ROOT / "docs" / "inside" / "logit-lens.md").read_text(encoding="utf-8").split())
    assert f"from {first} after the embedding to {middle[0]}, {middle[1]} and {middle[2]} after blocks 0 to 2" in note


def test_the_page_states_that_it_does_not_copy(model, streams):
    best, second = 0.0, []
    for half in (20, 50):
        for seed in range(3):
            found = interpret.induction(model, interpret.repeated_tokens(half, streams.vocab_size, seed, bos=streams.eos), half)
            best = max(best, float(found["scores"].max()))
            second.append(found["loss"][half:].mean())
    print(f"best induction score {best:.3f}; second-copy loss {np.mean(second):.2f}")
    assert best < 0.1 and abs(np.mean(second) - math.log(streams.vocab_size)) < 0.2
    stated("no head's induction score reaches 0.1")
    stated(f"stays at {np.mean(second):.1f} nats, a uniform guess")
    never = 1 - len(streams.copy_pool) / (streams.vocab_size - 1)
    stated(f"{100 * never:.0f}% of GPT-2's tokens never occur in the book")


def test_the_page_states_the_recipe_and_its_sizes(hf):
    recipe = train.Recipe()
    params = sum(p.numel() for p in hf.parameters())
    wte = hf.transformer.wte.weight.numel()
    stated(f"| blocks × heads × width | {recipe.n_layer} × {recipe.n_head} × {recipe.n_embd} |")
    stated(f"| context | {recipe.context} tokens |")
    stated(f"| parameters | {params / 1e6:.2f} million |")
    stated(f"| of which the token embedding | {wte / 1e6:.2f} million |")
    stated(f"holds {100 * wte / params:.0f}% of this model's weights")
    stated(f"GPT-2 small has {GPT2_SMALL_PARAMS / params:.0f} times more parameters")
    stated(f"| checkpoint | {(BOOK_MODEL_DIR / 'model.safetensors').stat().st_size / 1e6:.1f} MB (float16) |")
    stated(f"{recipe.steps:,} steps, each of {recipe.text_rows} windows of prose and {recipe.copy_rows} copying sequences")
    stated(f"warmed up over {recipe.warmup} steps to {recipe.lr}")
    stated(f"a checkpoint every {recipe.checkpoint_every} steps")
    stated(f"the run took {RECORD['wall_s']:.0f} seconds")
    stated(f"a step took {RECORD['wall_s'] / recipe.steps:.1f} seconds on average")


def widget_prompts() -> dict[str, tuple[str, list[str]]]:
    """The Looking-inside pages' prompts and the answers their notes name, read from where they
    are written: the pages' widget attributes and tx-patching.js's ready-made pairs."""
    inside = ROOT / "docs" / "inside"
    attribute = lambda page, tag: re.search(rf'<{tag} prompt="([^"]+)"', (inside / page).read_text()).group(1)  # noqa: E731
    pairs = (ROOT / "site_src" / "widgets" / "tx-patching.js").read_text()
    clean = dict(re.findall(r'(\w+): \{\s*label: "[^"]*",\s*clean: "([^"]+)"', pairs))
    return {
        "head-ablation.md": (attribute("head-ablation.md", "tx-head-ablation"), [" Mary", " John"]),
        "logit-lens.md": (attribute("logit-lens.md", "tx-logit-lens"), [" Paris"]),
        "logit-attribution.md": (attribute("logit-attribution.md", "tx-logit-attribution"), [" Paris"]),
        "patching.md (capital)": (clean["capital"], [" Paris"]),
        "patching.md (ioi)": (clean["ioi"], [" Mary", " John"]),
    }


def test_the_looking_inside_notes_state_what_the_book_model_answers(hf):
    tokenizer = train.gpt2_tokenizer()
    for where, (prompt, answers) in widget_prompts().items():
        with torch.no_grad():
            probs = hf(input_ids=torch.tensor([tokenizer.encode(prompt).ids])).logits[0, -1].softmax(-1)
        top = tokenizer.decode([int(probs.argmax())])
        chances = {a: probs[tokenizer.encode(a).ids[0]].item() for a in answers}
        print(where, repr(top), chances)
        assert top == " the", where
        bound = 1e-5 if where == "head-ablation.md" else 1e-4  # as each note words it
        assert all(p < bound for p in chances.values()), (where, chances)
    note = " ".join((ROOT / "docs" / "inside" / "head-ablation.md").read_text().split())
    assert "top guess is ` the`, and ` Mary` and ` John` each get less than one chance in 100,000" in note


def test_the_patching_note_states_the_book_models_small_and_odd_gaps(hf, model):
    """patching.md: the logit differences each pair restores (transformers' own logits), and
    the patch map's out-of-range fraction and last-position restore (interpret.patch_residual)."""
    tokenizer = train.gpt2_tokenizer()
    pairs = (ROOT / "site_src" / "widgets" / "tx-patching.js").read_text()
    found = {}
    for name in ("capital", "ioi"):
        fields = dict(re.findall(r'(clean|corrupted|good|bad): "([^"]+)"', pairs.split(f"{name}: {{")[1].split("}")[0]))
        ids = {k: tokenizer.encode(fields[k]).ids for k in ("clean", "corrupted")}
        good, bad = (tokenizer.encode(fields[k]).ids[0] for k in ("good", "bad"))
        with torch.no_grad():
            ld = {k: (lambda last: float(last[good] - last[bad]))(hf(input_ids=torch.tensor([v])).logits[0, -1]) for k, v in ids.items()}
        found[name] = (ld, interpret.patch_residual(model, ids["clean"], ids["corrupted"], good, bad))  # (L, T)
    (cap_ld, cap_map), (ioi_ld, ioi_map) = found["capital"], found["ioi"]
    note = " ".join((ROOT / "docs" / "inside" / "patching.md").read_text().split())
    assert f"(logit differences {cap_ld['clean']:.2f} and {cap_ld['corrupted']:.2f})" in note
    assert ioi_ld["clean"] < ioi_ld["corrupted"] < 0  # the clean prompt favours the wrong name more
    assert f"(−{-ioi_ld['clean']:.2f} against −{-ioi_ld['corrupted']:.2f})" in note
    assert f"({cap_map[1, -1]:.2f} at the last position entering block 1 in the capital map)" in note
    assert cap_map[1, -1] > 1
    low, high = ioi_map[1:, -1].min(), ioi_map[1:, -1].max()
    assert f"restores {low:.2f} to {high:.2f} of it in the names map" in note
