"""Numbers and claims that a careful reader once found wrong, checked against the code.

Each case names a page, a phrase the page must contain, the number the phrase states and the
number computed here (GPT-2's tokenizer from the local vocabulary files, `demos.kv_cache`,
plain arithmetic), with a tolerance. The claims without a number are checked as phrases the
page must or must not contain.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpt2_vocab import hf_tokenizer

from sitebuild.figures.pipeline import running_example  # the widgets' default prompt, read from prompt.js

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def flat_page(page: str) -> str:
    return " ".join((DOCS / page).read_text(encoding="utf-8").split())


@pytest.fixture(scope="module")
def gpt2_ids():
    tok = hf_tokenizer()
    return lambda text: tok.encode(text).ids


def test_running_example_counts(gpt2_ids):
    """01-tokenization: five words, six tokens, the ids it lists (those of the widgets' own prompt),
    and the first word's id with and without a space before it."""
    example = running_example()
    ids = gpt2_ids(example)
    page = flat_page("pipeline/01-tokenization.md")
    words = len(example.split())
    numbers = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    assert f"so {numbers[words]} words become {numbers[len(ids)]} tokens" in page
    assert "ids " + ", ".join(str(i) for i in ids[:-1]) + f" and {ids[-1]}" in page
    assert gpt2_ids(" empowers") == ids[2:4], "' empowers' is no longer the two pieces the page names"
    assert "comes out as two pieces, ` em` and `powers`" in page
    first = example.split()[0]
    assert f"is the token `{first}`, {ids[0]}" in page
    assert f"with a space, ` {first}` would be a different token, {gpt2_ids(' ' + first)[0]}" in page


def _kv():
    return pytest.importorskip("demos.kv_cache")


def _cases():
    kv = _kv()
    gen = kv.generation_flops(12, 768, 100, 200)
    lm_step = 2 * 768 * 50_257  # logits at the newest position only, once per step
    lm_total = 200 * lm_step
    return [
        # (page, phrase, stated, computed, tolerance)
        ("efficiency/kv-cache.md", r"$2 \times 768 \times 50{,}257 \approx 7.7 \times 10^{7}$", 7.7e7, lm_step, 0.05e7),
        ("efficiency/kv-cache.md", r"about $1.5 \times 10^{10}$ for the 200 steps", 1.5e10, lm_total, 0.05e10),
        ("efficiency/kv-cache.md", r"the cached total becomes about $6.8 \times 10^{10}$", 6.8e10, gen["with_cache"] + lm_total, 0.05e10),
        ("efficiency/kv-cache.md", "the saving about 102 times", 102, (gen["without_cache"] + lm_total) / (gen["with_cache"] + lm_total), 0.5),
        ("efficiency/kv-cache.md", "73,728 bytes per token", 73_728, kv.kv_cache_bytes(12, 12, 64, 1, "float32")["bytes_per_token"], 0),
        ("families/gpt3.md", r"$40 \times 128 = 5{,}120$", 5120, 40 * 128, 0),
        ("families/gpt3.md", "consistent width 5,120 (printed: 5,140)", 5120, 40 * 128, 0),
        # the worker's held cache: what present copies each way after 1,000 positions, and a long prompt's logits
        ("model/runtime.md", "= 74 MB each way", 74, kv.kv_cache_bytes(12, 12, 64, 1000, "float32")["total_bytes"] / 1e6, 0.5),
        ("model/runtime.md", "whose logits alone take 201 MB", 201, 1000 * 50_257 * 4 / 1e6, 0.5),
    ]


@pytest.mark.parametrize("case", range(9))
def test_stated_numbers_match_the_code(case):
    page, phrase, stated, computed, tolerance = _cases()[case]
    assert " ".join(phrase.split()) in flat_page(page), f"{page}: phrase not found: {phrase}"
    assert abs(stated - computed) <= tolerance, f"{page}: {phrase!r} states {stated}, the code gives {computed}"


def test_printed_gpt3_13b_width_cannot_be_split_into_its_heads():
    """The page's reason for 5,120: 5,140 / 40 heads is not a whole head width."""
    assert "5,140 is not even divisible by 40" in flat_page("families/gpt3.md")
    assert 5140 % 40 != 0 and 5120 // 40 == 128


def test_cases_are_all_run():
    assert len(_cases()) == 9


@pytest.mark.parametrize(
    ("page", "must", "must_not"),
    [
        # The causal mask alone already breaks permutation symmetry: the page must not say GPT-2
        # could not tell the two sentences apart without positions.
        ("pipeline/03-positional-encoding.md", ["It could still tell *dog bites man* from *man bites dog*", "causal mask"], ["could not tell *dog bites man*"]),
        # Dropout in training: on the embedding sum, the attention probabilities and each residual branch.
        (
            "pipeline/05f-norm-residual-dropout.md",
            [
                "to the sum of token and position embeddings",
                "to the attention probabilities",
                "to each residual branch's output",
                "$p = 0.1$",
                "during training only",
                # GPT-2's paper states no rate and OpenAI's released code has no dropout: the 0.1 is GPT's
                # (Radford et al., 2018) and the transformers configuration's, not a GPT-2 paper fact.
                "GPT-2's paper does not give a dropout rate",
            ],
            ["During training only, GPT-2 applies dropout"],
        ),
        (
            "pipeline/04-final-embedding.md",
            ["in training, GPT's recipe first applies dropout with $p = 0.1$ to it"],
            ["in training GPT-2 first applies dropout"],
        ),
        ("pipeline/01-tokenization.md", ["five words become six tokens"], ["six words become six tokens", "seed"]),
        ("efficiency/kv-cache.md", ["The output projection onto the 50,257-word vocabulary is left out"], []),
        # LLaMA 2/3, DeepSeek-V2/V3 and Mixtral have no local attention; the gated FFN is the near-universal change.
        ("innovations/sliding-window.md", ["Local attention is far from universal"], ["found in most large open models"]),
        ("innovations/overview.md", ["SwiGLU", "not by most"], ["RoPE, local (sliding-window) attention, grouped-query attention"]),
        # Three measurements, three sources: the needle test (Kamradt), position (Liu et al.), length (Hong et al.).
        (
            "prompting/context-rot.md",
            ["references.md#kamradt2023", "references.md#liu2024", "references.md#hong2025", "**Lost in the middle.**"],
            ["phenomenon is known as **context rot**", "several models offered as of October 2026"],
        ),
        ("innovations/long-context.md", ["references.md#kamradt2023", "references.md#hong2025"], ["The phenomenon is called *context rot*"]),
        # GPT-3's Table 2.2: Books2 (55B of 499B tokens, 8 % of the mix) was seen 0.43 times, like Common Crawl.
        ("families/gpt3-data.md", ["Books2 was not", "seen less than once, like Common Crawl"], ["the two book corpora and Wikipedia were judged"]),
        # 24 heads of 128 = 3,072 ≠ 2,048, and 1.3B fits only attention 2,048 wide.
        ("families/gpt3.md", ["about 1.52 billion parameters", "the head count of that row is the likely slip"], ["2,048 is a possible width for 24 heads"]),
        (
            "families/moe-training.md",
            # Fedus et al. (2022), Table 9: Switch-Base and -Large 128 experts, Switch-XXL 64, Switch-C 2,048.
            ["thousands in the first", "64 to 2,048 in GShard and Switch (Switch-XXL had 64, Switch-C 2,048)", "That holds for top-1 routing"],
            ["Early MoE language models used 8 or 16 experts", "128 to 2,048 in GShard"],
        ),
        (
            "scaling/flops.md",
            ["about 120 times as much as GPT-3", "multiply-accumulates (MACs)"],
            ["some thirty times more", "hardware data sheets count it as 1"],
        ),
        ("scaling/scaling-laws.md", ["The most influential of them, in 2020"], ["The first of them, in 2020"]),
        (
            "families/bert-downstream.md",
            ["| Weighted sum of all 12 layers | 95.5 |", "| Weighted sum of the last four layers | 95.9 |"],
            ["| Sum of all 12 layers |"],
        ),
        # Stage 8 is greedy; the running example has four tokens in "empowers users to"; step n sees T + n − 1 tokens.
        ("pipeline/07-sampling.md", ["which runs at temperature 0 (greedy)"], ["so a seed gives the same token there"]),
        ("pipeline/03-positional-encoding.md", ["sees the same four tokens (*empowers* is two)"], ["sees the same three tokens"]),
        ("pipeline/08-autoregression.md", ["instead of $T + n - 1$", "not counting the output layer"], ["one token instead of $T + n$."]),
        ("pipeline/01-tokenization.md", ["starts as a sequence of single bytes"], ["starts as a sequence of single characters"]),
        ("pipeline/index.md", ["twelve blocks of identical structure, each with its own weights"], ["twelve identical copies"]),
        ("attention/parallelism.md", ["processed in one parallel pass (the prefill)"], ["never the case in generation."]),
        ("attention/multi-head.md", ["its 12 heads come from OpenAI's released configuration"], ["The three rows come from the papers"]),
        (
            "foundations/word2vec.md",
            ["references.md#mikolovphrases2013", "hierarchical softmax in the first paper"],
            ["showed that ordinary running text is enough"],
        ),
        ("attention/cost.md", ["about $2 d^2$ multiply-adds per position for a plain RNN"], ["does about $d^2$ work per position"]),
        ("foundations/tokenizers.md", ["a vocabulary of 128K tokens", "128,256 ids in its released configuration"], []),
        # Kamradt (2023): recall fell above 73K tokens with the fact at 7 %–50 % depth.
        ("prompting/context-rot.md", ["between about 7 % and 50 %"], ["between about 10 % and 50 %"]),
        ("innovations/long-context.md", ["between about 7 % and 50 %", "2,048 tokens to see where LLaMA was"], ["between about 10 % and 50 %"]),
        ("efficiency/quantization.md", ["about 2.6 times as fast as fp32", "fp16 is no faster than fp32"], ["more than its smaller file alone would"]),
        ("efficiency/distillation.md", ["holds about 39 %"], ["takes most of the probability"]),
        ("efficiency/serving.md", [], ["5 to 7 seconds"]),
        ("decoding/guided-json.md", ['`","`'], ['`", "`']),
        ("inside/patching.md", ["has 8 tokens in each prompt and the indirect-object pair 14"], ["landmark prompts"]),
        ("innovations/flash-attention.md", ["references.md#dao2024", "in FlashAttention-2's loop order"], ["It loads a block of queries, then streams"]),
        ("innovations/relative-bias.md", ["every distance from 91 on (113 on in the one-directional decoder)"], ["every distance from 128 on"]),
        ("innovations/rope.md", ["(Llama 2's length; the first LLaMA had 2,048)"], ["for LLaMA stretched four times"]),
        # Peng et al. (2024), YaRN section 3.4: the temperature is fitted to measured perplexity
        # (sqrt(1/t) = 0.1 ln s + 1); the paper gives no "spread scores" mechanism.
        ("innovations/rope.md", ["a curve its authors fitted to perplexity measured on LLaMA models"], ["because interpolated positions spread the scores"]),
        ("inside/induction-heads.md", ["the 500th token of a context minus the loss at the 50th"], ["made exactly this drop"]),
        ("inside/superposition.md", ["about 1.3 active features on average", "about half as much as the dedicated one"], ["rarely share a sample"]),
        ("start/labs-setup.md", ["GPT-2 small needs about 1 GB while it loads"], ["covers the NumPy labs and GPT-2 small comfortably"]),
        ("training/optimization.md", ["GPT-3 reaches 10 % after 260 billion of its 300 billion tokens"], []),
        ("training/backprop.md", ["slightly negative for every $z$ below about $-0.75$"], ["slightly negative in between"]),
        ("index.md", ["Only the first two rows and the last two depend on the vocabulary"], []),
        ("innovations/long-context.md", ["references.md#gemini2024"], ["As of October 2026", "around 100,000 tokens"]),
        ("attention/seq2seq.md", ["references.md#cho2014", "Feeding $c$ at every step is Cho et al.'s design"], []),
        # The lab's per-tensor error rises with the outlier and levels off (demos.quantization.outlier_product, test below);
        # WGSL has no 4-bit type, so no adapter has 4-bit arithmetic.
        (
            "efficiency/quantization.md",
            ["watch the per-tensor error grow, then level off", "16-bit arithmetic depends on the adapter"],
            ["per-tensor bar grow", "16-bit and 4-bit arithmetic"],
        ),
        # Elhage et al. (2021) leave biases out; a head reads a subspace, not coordinates; superposition explains polysemantic neurons.
        (
            "inside/circuits.md",
            ["leaving out the biases as Elhage et al. do", "64 directions, not 64 of its coordinates"],
            ["64-dimensional slice of the stream"],
        ),
        ("inside/superposition.md", ["one neuron often responds to many unrelated things"], ["one dimension of GPT-2's stream"]),
        # DeepSeek-V2's reason for the decoupled RoPE key: a position-dependent rotation blocks absorbing W^UK into W^Q.
        ("innovations/gqa-mqa.md", ["block the folding described below"], ["RoPE cannot pass through the compression"]),
        # The site pages against the code: :host sets the colour properties; the tokenizer runs in the page; quantize writes the pieces.
        ("embed-in-your-course.md", ["custom properties that you set on the widget's tag"], ["on the tag or on any ancestor"]),
        (
            "model/runtime.md",
            ["Every lab widget computes with the book's", "the tokenizer runs in the page", "in the reading row, a two-second pause"],
            ["Every lab and stage widget", "The tokenizer and the sampling run in the same worker"],
        ),
        (
            "model/export-report.md",
            ["their weights in pieces of at most 40 MB", "`model-export COMMAND --help` the options of one command"],
            ["**package** cuts the weights"],
        ),
        ("reference/model_export.md", [], ["splits the weights into pieces and writes"]),
        ("offline.md", ["of which a small model's own files took under 4 MB"], ["with this build's model"]),
        ("foundations/tokenizers.md", ["references.md#touvronllama2023"], []),
        # Second expert pass (stop 47): each fix checked against the lab, the figure, the paper or the convention page.
        (
            "attention/one-head.md",
            ["works through the same row by hand with other scaled scores, 1, 2 and 3"],
            ["starting one step earlier, from the queries and keys"],
        ),
        (
            "attention/three-kinds.md",
            ["the first on a French source sentence, as an encoder sees it", "Each encoder layer has only two sublayers"],
            ["run the same sentence through self-attention", "first and third kinds"],
        ),
        ("attention/seq2seq.md", ["so the pattern is not an alignment"], []),
        # demos.decoding: at T = 0.4 the greedy sequence (0.317) outweighs a dog </s> (0.265); test below.
        (
            "decoding/sampling.md",
            ["from 0.4 down the greedy sequence is more likely to be drawn than `a dog </s>`", "The first reason is the user's."],
            ["the draws concentrate on the most probable sequences", "There is also a user's reason"],
        ),
        ("decoding/beam-search.md", ["so at the second step it already overtakes the greedy path: 0.36 against 0.2."], ["after a few steps it overtakes"]),
        ("decoding/overview.md", ["cheap after the first pass through the loop."], ["after the first turn"]),
        ("families/gpt.md", ["trains all $T-1$ predictions of a sequence at once", r"\sum_{t=2}^{T} \log p_\theta"], ["trains all $T$ predictions"]),
        ("families/gpt3-data.md", ["seen 1.9 to 3.4 times"], ["seen two to three times"]),
        (
            "families/moe.md",
            ["the balancing loss printed under the figure measures", "The figure trains a deliberately tiny router on 64 random tokens"],
            ["the balancing loss below measures", "how the active and total parameter counts move apart"],
        ),
        (
            "families/moe-training.md",
            ["Switch the balancing loss off and on, and see how the load and the balance term respond"],
            ["Make the routing more uneven"],
        ),
        ("pipeline/index.md", ["leaving block 0, the first, is the input of block 1"], ["leaving block 1 is the input of block 2"]),
        (
            "pipeline/03-positional-encoding.md",
            [r"Positions $1 \dots T$ in (the code passes them as row indices $0 \dots T-1$)"],
            [r"Positions $0 \dots T-1$ in,", r"every position $0, 1, 2, \dots$"],
        ),
        ("pipeline/05b-heads.md", ["8$, the square root of the head's width"], []),
        ("pipeline/05c-attention.md", ["all its weight falls on column 1, its own"], ["falls on column 0"]),
        ("pipeline/05d-recombine.md", [r"O^{(0)} \mid O^{(1)} \mid \dots \mid O^{(11)}"], ["O^{(12)}"]),
        (
            "inside/index.md",
            [
                "it serves [the book's own model](../training/book-model.md): GPT-2's code and vocabulary, 4 layers of 4 heads",
                "no head's induction score reaches 0.1",
                "The lens, the induction scores and the attribution only *read* activations",
            ],
            ["the default development model has only 2 layers of 4 heads", "The first and the last only *read*"],
        ),
        ("inside/head-ablation.md", ["the book's own model has 4 × 4"], ["the development model has 2 × 4"]),
        # Tokens drawn uniformly: by Gibbs' inequality no model beats ln V on average.
        (
            "inside/induction-heads.md",
            [
                "no model does better on average, and a trained one does a little worse",
                "at position t it gives 1/t to each of the t positions up to its own",
                "the second copy holds positions 6 to 10",
                "Let the sequence be $s_1 \\dots s_n$",
                "no head's induction score reaches 0.1",
            ],
            ["does a little better on random tokens"],
        ),
        ("inside/logit-attribution.md", ["explain its guess ` the`, not the answer a reader expects"], ["a confident ` the`"]),
        (
            "foundations/static-vectors.md",
            ["has absorbed information from the words before it (GPT-2 is causal: it cannot see the words after it)"],
            ["from the rest of the sentence"],
        ),
        # openai/gpt-2 src/model.py: conv1d w_init_stdev=0.02, wte 0.02, wpe 0.01, no 1/sqrt(N) scaling.
        (
            "training/optimization.md",
            ["initialises its matrices with standard deviation 0.02, 0.01 for the position table, and shows no such scaling"],
            ["shows no initialisation"],
        ),
        (
            "training/in-your-browser.md",
            ["The first three pages of this section describe the loss, the backward pass and the optimizer", "the loop of those three pages"],
            ["The three pages before this one", "the loop of the last three pages"],
        ),
        (
            "training/backprop.md",
            ["training runs stages 6 to 2 again backwards, in the reverse order (tokenization has no weights)"],
            ["training runs them again backwards"],
        ),
        # np.spacing(float16(2047)) = 1, spacing(float16(2048)) = 2; Hinton et al. (2015): small probabilities barely move the loss.
        ("efficiency/determinism.md", ["representable numbers from 2,048 to 4,096 are 2 apart"], ["representable numbers near 2,048 are 2 apart"]),
        ("efficiency/distillation.md", ["among the small probabilities have almost no influence on the loss"], ["vanish in the rounding"]),
        ("innovations/positions.md", ["GPT-2's table stops at position 1,024, so it cannot even be *run* on a 1,025th token"], ["GPT-2 has no row 1,024"]),
        # demos.rope.distance_decay: random q, k show no decay; all-ones q, k decay (RoFormer's bound is for aligned vectors).
        (
            "innovations/rope.md",
            [
                "the same vectors produce at positions 7 and 1.",
                "For a query and key that point the same way, the score tends to shrink",
                "the widget below shows it (set q and k to all ones)",
                "the scores in the readout stay the same",
            ],
            ["positions 6 and 0", "For a fixed query and key", "every number in the readout stays"],
        ),
        ("innovations/overview.md", ["how its feed-forward network is gated ([gated feed-forward networks](gated-ffn.md))"], []),
        (
            "labs/attention.md",
            ["what does the first row of the attention matrix", "which rows never change when you edit the last word"],
            ["what does row 0 of the attention matrix"],
        ),
        # demos.decoding.all_sequences(6): "the dog </s>" = 0.5 · 0.3 · 0.6 = 0.09 beats greedy's 0.084.
        (
            "labs/decoding.md",
            ['the best of them, "the dog `</s>`", has probability 0.09', "whose probabilities add up to at least $p$"],
            ["and the best of them has probability 0.084"],
        ),
        ("labs/efficiency.md", [r"step $j = 0, 1, \dots, N - 1$ sees a context", "In FlashAttention-2's loop order", "references.md#dao2024"], []),
        ("innovations/normalization.md", ["pre-norm with RMSNorm in LLaMA (2023)", "references.md#touvron2023"], ["released from 2023 on"]),
        ("labs/efficiency.md", ["[The KV cache](../efficiency/kv-cache.md#what-it-costs) derives what that costs"], [r"\text{bytes per token} ="]),
        ("labs/model-size.md", ["[the KV cache](../efficiency/kv-cache.md#what-it-costs) derives its size"], [r"\text{bytes per number},"]),
        ("labs/positions.md", ["as for a query at 7 and a key at 1", "exactly the sinusoidal dot product from above, divided by $d/2$"], ["a key at 0"]),
        (
            "index.md",
            [
                "Every other build, the default development build among them, serves [the book's own model](training/book-model.md)",
                r"position $1, 2, \dots$ selects a row",
            ],
            ["default development build serves **`tiny`**", r"position $0, 1, \dots$"],
        ),
        ("start/keywords.md", [r"each position $1, 2, 3, \dots$ also gets a vector"], [r"position $0, 1, 2, \dots$"]),
        (
            "start/labs-setup.md",
            [
                "14 MB (27 MB for the build that drives WebGPU)",
                "to about 75 MB (GPT-2 small, its weights in 4 bits; 83 MB on WebGPU)",
                "this book's own NumPy lesson code | 0.4 MB",
            ],
            ["500 MB (GPT-2 small in 32-bit floats)", "under 0.1 MB"],
        ),
        (
            "generate.md",
            [
                "it serves [the book's own model](training/book-model.md): GPT-2's code and vocabulary, 4 layers of 4 heads",
                "recompute the prompt and the first 98 new tokens",
            ],
            ["A test model may be loaded", "recompute 99 positions", "The browser tests of this site use that property"],
        ),
        ("more/responsible-use.md", ["so its list ranks the book's words rather than facts"], ["randomly initialised model, whose list is arbitrary"]),
        (
            "prompting/in-context-learning.md",
            ["serves [the book's own model](../training/book-model.md), trained only on this book's text"],
            ["a development build serves a randomly initialised model"],
        ),
        (
            "pipeline/04-final-embedding.md",
            ["enters block 0, the first, of GPT-2 small", "to the end of the last block (block 11)"],
            ["enters block 1 of GPT-2 small", "end of block 12"],
        ),
        ("more/capstone.md", ["DistilGPT2, with 6 blocks instead of 12, has 81,912,576"], []),
        # GQA shrinks the cache (linear in the context), not the quadratic score computation.
        (
            "innovations/flash-attention.md",
            ["which shrinks the key/value cache (memory that grows linearly with the context)"],
            ["one of the three answers in this section to the quadratic curve"],
        ),
        # Vaswani et al. (2017), section 3.5: PE(pos + k) is a linear function of PE(pos).
        (
            "innovations/positions.md",
            ["the vector at position $p + k$ is a linear function of the vector at $p$"],
            ["The formula has one property that made it attractive"],
        ),
        ("prompting/self-consistency.md", ["a question that is hard for one run is hard for all of them"], ["not truly independent"]),
        (
            "model/runtime.md",
            ["(its workflow builds with `MODEL=gpt2`)"],
            ["a copy built where the Hugging Face Hub is out of reach, and every build the tests check"],
        ),
    ],
)
def test_corrected_claims(page, must, must_not):
    text = flat_page(page)
    for phrase in must:
        assert phrase in text, f"{page}: missing {phrase!r}"
    for phrase in must_not:
        assert phrase not in text, f"{page}: still says {phrase!r}"


def test_outlier_lab_error_rises_then_levels_off():
    """efficiency/quantization.md: per-tensor int8 error grows with the outlier from 1, then levels off (and dips)."""
    from demos.quantization import outlier_product

    error = {size: outlier_product(outlier=size)["errors"]["per_tensor"] for size in (1, 10, 60, 200)}
    assert error[1] < error[10] < error[60] and abs(error[200] - error[60]) < 0.5 * error[60]


def test_sampling_page_greedy_sequence_overtakes_the_most_probable_from_temperature_0_4():
    """decoding/sampling.md: temperature sharpens each step, so from T = 0.4 down the greedy
    sequence is likelier to be sampled than the most probable one (recomputed from the toy table)."""
    import numpy as np

    from demos.decoding import model

    m = model()
    table = {c: np.array(row) for c, row in zip(m["contexts"], m["table"], strict=True)}

    def drawn(words, temperature):
        p, previous = 1.0, m["start"]
        for w in words:
            tempered = np.where(table[previous] > 0, table[previous], 0.0) ** (1 / temperature)
            p *= tempered[m["tokens"].index(w)] / tempered.sum()
            previous = w
        return p

    greedy, best = ["the", "cat", "sat", "</s>"], ["a", "dog", "</s>"]
    assert drawn(best, 1.0) > drawn(greedy, 1.0) and drawn(best, 0.5) > drawn(greedy, 0.5)
    assert drawn(greedy, 0.4) > drawn(best, 0.4) and drawn(greedy, 0.1) > drawn(best, 0.1)


def test_book_model_starting_loss_is_the_logged_first_step():
    """training/book-model.md: the prose loss starts at 11.0 nats, a little above ln 50,257."""
    import json
    import math

    from model_export.train import LOG_FILE
    from model_export.weights import BOOK_MODEL_DIR

    first = json.loads((BOOK_MODEL_DIR / LOG_FILE).read_text().splitlines()[0])
    assert round(first["text_loss"], 1) == 11.0 and first["text_loss"] > math.log(50257)
    assert "falls from 11.0 nats at the first step, a little above a uniform guess" in flat_page("training/book-model.md")


def test_native_int8_speedup_and_size_ratio_are_the_export_benchmark():
    """efficiency/quantization.md: "about 2.6 times as fast" and "3 times smaller", from bench/results/export.json."""
    import json

    export = json.loads((ROOT / "bench" / "results" / "export.json").read_text(encoding="utf-8"))
    speed = export["decode"]["tok_per_s_median"]
    sizes = export["sizes_mb"]
    assert round(speed["q8"] / speed["fp32"], 1) == 2.6
    assert round(sizes["fp32"] / sizes["q8"]) == 3
    assert "about 2.6 times as fast as fp32, roughly in line with its 3 times smaller file" in flat_page("efficiency/quantization.md")


def test_dropout_rates_stated_for_gpt2_are_the_transformers_configuration():
    """05f: the 0.1 in three places is what transformers' GPT-2 configuration sets (GPT-2's paper states none)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config()
    assert (config.embd_pdrop, config.attn_pdrop, config.resid_pdrop) == (0.1, 0.1, 0.1)
    assert "the GPT-2 configuration that Hugging Face's `transformers` ships" in flat_page("pipeline/05f-norm-residual-dropout.md")


def test_quantized_file_sizes_follow_from_gpt2_shapes():
    """innovations/quantization.md: the int8 and 4-bit sizes, rebuilt from GPT-2 small's shapes
    and set against the export's measured files (bench/results/export.json)."""
    import json

    export = json.loads((ROOT / "bench" / "results" / "export.json").read_text(encoding="utf-8"))
    sizes, metrics = export["sizes_mb"], export["validation"]["metrics"]
    L, C, V, P = 12, 768, 50_257, 1024
    blocks = L * (C * 3 * C + C * C + C * 4 * C + 4 * C * C)  # the four weight matrices of each block
    table = V * C
    small = L * (2 * 2 * C + 3 * C + C + 4 * C + C) + 2 * C  # biases and LayerNorm gains and biases
    q4_numbers = blocks + table  # one copy of the table
    codes_mb, scales_mb = q4_numbers / 2 / 1e6, q4_numbers / 32 * 4 / 1e6  # 4 bits each; a float32 scale per 32
    q4_mb = codes_mb + scales_mb + P * C * 4 / 1e6 + small * 4 / 1e6
    page = flat_page("innovations/quantization.md")
    stated = {
        "84.9 million weights": blocks / 1e6,
        "about 162 million int8 numbers": (blocks + 2 * table) / 1e6,
        "164 MB measured": sizes["q8"],
        "quantizes 123.5 million numbers": q4_numbers / 1e6,
        "61.8 MB of 4-bit codes": codes_mb,
        "15.4 MB in all": scales_mb,
        "position table (3.1 MB)": P * C * 4 / 1e6,
        "normalization parameters (0.5 MB)": small * 4 / 1e6,
        "the sum is 80.8 MB": q4_mb,
        "against 81.1 MB measured": sizes["q4"],
        "6.1 times smaller than fp32": sizes["fp32"] / sizes["q4"],
        "| 81 | 20 % |": sizes["q4"],
        "| 164 | 3.6 % |": sizes["q8"],
        "| 249 | 0.05 % |": sizes["fp16"],
    }
    for phrase, value in stated.items():
        assert phrase in page, f"missing {phrase!r}"
        digits = re.search(r"\d+(?:\.(\d+))?", phrase)  # the first number, as rounded on the page
        assert abs(float(digits[0]) - value) <= 0.5 * 10 ** -len(digits[1] or "") + 1e-9, f"{phrase!r}: computed {value:.3f}"
    assert abs(q4_mb - sizes["q4"]) / sizes["q4"] < 0.01, "the arithmetic no longer explains the 4-bit file"
    for variant, percent in (("q4", 20), ("q8", 3.6), ("fp16", 0.05)):
        assert abs(metrics[variant]["rel_err"] * 100 - percent) <= max(0.5, percent * 0.05), variant
    assert "five times the 4-bit variant" not in flat_page("model/export-report.md")
    assert abs(sizes["fp32"] / sizes["q4"] - 6) < 0.5 and "six times the 4-bit variant (81 MB)" in flat_page("model/export-report.md")


def test_gated_ffn_numbers():
    """innovations/gated-ffn.md: LLaMA's hidden widths and the parameter budget, from demos.ffn and demos.size."""
    from demos import ffn, size

    page = flat_page("innovations/gated-ffn.md")
    small, gelu = ffn.mlp_shapes(d_model=768, kind="swiglu"), ffn.mlp_shapes(d_model=768)
    assert f"a hidden width of {small['d_ff']:,} and {small['params']['total']:,} weights, against {gelu['params']['total']:,}" in page
    llama = ffn.mlp_shapes(d_model=4096, kind="swiglu")
    assert llama["d_ff"] == 11_008 and "gives the 11,008 of its published configuration" in page
    blocks = 32 * llama["params"]["total"]
    total = size.count_parameters(**size.preset("llama-7b"))["total"]
    assert "about 4.3 billion of the model's 6.7 billion parameters" in page
    assert round(blocks / 1e9, 1) == 4.3 and round(total / 1e9, 1) == 6.7


def test_tokenizer_page_ids_and_counts(gpt2_ids):
    """foundations/tokenizers.md: every id it names is GPT-2's, and its parameter shares are the code's."""
    from demos import size

    page = flat_page("foundations/tokenizers.md")
    for text, ids in [("Hello", [15496]), (" Hello", [18435]), ("hello", [31373]), (" SolidGoldMagikarp", [43453])]:
        assert gpt2_ids(text) == ids, text
    assert "`Hello` is 15496, ` Hello` 18435, and `hello` 31373" in page and "` SolidGoldMagikarp` is a single GPT-2 token, 43453" in page
    assert len(gpt2_ids("HELLO")) == 3 and "`HELLO` is three tokens" in page
    assert gpt2_ids("Hi ")[-1] == 220 and "the lone space token, 220" in page
    assert [len(gpt2_ids(p)) for p in ("123", "45", "67")] == [1, 1, 1] and len(gpt2_ids("1234567")) == 3
    assert len(gpt2_ids(" 7654321")) == 4 and "` 7654321` becomes ` 7`, `65`, `43`, `21`" in page
    gpt2 = size.count_parameters(**size.preset("gpt2-small"))
    assert gpt2["token_embedding"] == 50_257 * 768 and round(gpt2["token_embedding"] / 1e6, 1) == 38.6
    assert round(gpt2["total"] / 1e6, 1) == 124.4 and round(100 * gpt2["token_embedding"] / gpt2["total"]) == 31
    assert "holds 38.6 million of its 124.4 million parameters, 31 %" in page
    assert round(128_256 * 4096 / 1e6) == 525 and "embedding table alone has 525 million parameters" in page
    assert 256 + 50_000 + 1 == 50_257 and "the 256 possible bytes, 50,000 pieces" in flat_page("foundations/tokenizers.md")


def test_rope_scaling_numbers():
    """innovations/rope.md: LLaMA's wavelengths and the pairs that never turn in 4,096 positions."""
    from demos.rope_scaling import wavelengths

    page = flat_page("innovations/rope.md")
    w = wavelengths(factor=4, head_dim=128, base=10000, original=4096)
    assert round(w["none"][0], 1) == 6.3 and "6.3 positions for the fastest pair of a 128-wide head" in page
    assert round(w["none"][-1], -3) == 54_000 and "about 54,000 for the slowest" in page
    slow = sum(v > 4096 for v in w["none"])
    assert f"the {slow} slowest of the {len(w['pair'])} pairs never completed a turn" in page
    assert w["ntk"][0] == w["none"][0] and w["yarn"][0] == w["none"][0]


def test_latent_attention_numbers():
    """innovations/gqa-mqa.md: DeepSeek-V3's MLA cache against multi-head attention."""
    from demos.kv_cache import kv_cache_bytes, latent_cache_bytes

    page = flat_page("innovations/gqa-mqa.md")
    r = latent_cache_bytes(n_layer=61, d_latent=512, d_rope=64, n_head=128, d_head=128, context_length=4096, dtype="bfloat16")
    math = lambda n: f"{n:,}".replace(",", "{,}")  # noqa: E731  (a number as the page's TeX writes it)
    assert f"= {math(r['bytes_per_token'])}$ bytes per token" in page and r["bytes_per_token"] == 70_272
    assert f"= {math(r['mha_bytes_per_token'])}$ bytes for multi-head attention" in page
    assert r["mha_bytes_per_token"] == kv_cache_bytes(61, 128, 128, 1, "bfloat16")["bytes_per_token"]
    assert f"{round(r['ratio'])} times smaller" in page and f"GQA cache with {r['equivalent_gqa_groups']} key/value heads" in page
    assert f"{r['total_bytes'] / 2**20:.1f} MiB instead of {r['mha_bytes_per_token'] * 4096 / 2**30:.2f} GiB" in page


def test_speculative_decoding_numbers():
    from demos.speculative import expected_tokens

    page = flat_page("decoding/speculative.md")
    assert f"{expected_tokens(0.8, 4):.2f} with $\\alpha = 0.8$ and $\\gamma = 4$" in page


def test_review_round_numbers():
    """Numbers the review round corrected, each recomputed from its source."""
    import json
    import math

    import numpy as np

    export = json.loads((ROOT / "bench" / "results" / "export.json").read_text(encoding="utf-8"))
    speed, sizes = export["decode"]["tok_per_s_median"], export["sizes_mb"]
    assert round(speed["q8"] / speed["fp32"], 1) == 2.6 and round(sizes["fp32"] / sizes["q8"]) == 3 and speed["fp16"] <= speed["fp32"]
    widget = (ROOT / "site_src" / "widgets" / "tx-sampling.js").read_text(encoding="utf-8")
    logits = np.array([float(v) for v in re.search(r"3\.2, 2\.5, 2\.1[^\]]*", widget)[0].split(",")])  # the sandbox's default logits
    p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert round(100 * p[0]) == 39 and "holds about 39 %" in flat_page("efficiency/distillation.md")
    assert round(64 * 0.02, 1) == 1.3  # 64 features, each active with probability 0.02
    z = np.linspace(-6, 6, 120_001)
    slope = np.gradient(0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3))), z)
    assert round(slope.max(), 2) == 1.13 and round(z[slope.argmax()], 1) == 1.4 and round(z[slope < 0].max(), 2) == -0.75


def test_t5_last_bucket_starts():
    """innovations/relative-bias.md: where T5's last relative-position bucket begins (transformers' own bucket function)."""
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    d = torch.arange(0, 300)
    firsts = []
    for bidirectional in (True, False):
        buckets = t5.T5Attention._relative_position_bucket(-d, bidirectional=bidirectional, num_buckets=32, max_distance=128)
        firsts.append(int((buckets == buckets.max()).nonzero()[0]))
    assert firsts == [91, 113]
    assert "every distance from 91 on (113 on in the one-directional decoder)" in flat_page("innovations/relative-bias.md")


def test_positions_are_counted_from_one_in_the_prose():
    """The pages number positions from 1 (``1, \\dots, i``); positions.md once said GPT-2's
    table has rows for positions 0 to 1,023, beside long-context.md's "no vector for position
    1,025". GPT-2 small's table size is its released config's n_positions."""
    from model_export.gpt2 import GPT2Config

    rows, prompt = GPT2Config().n_positions, 1100
    page = flat_page("innovations/positions.md")
    assert f"its position table has {rows:,} rows, one for each of positions 1 to {rows:,}" in page
    assert f"compute vectors for positions {rows + 1:,} to {prompt:,} and will run" in page
    assert f"no vector for position {rows + 1:,} in GPT-2" in flat_page("innovations/long-context.md")
    assert "positions 0 to" not in page


def test_trained_circuits_numbers_are_the_demos():
    """inside/circuits.md: what the trained induction-task model's circuits show (demos.circuits.trained_circuits)."""
    from demos import circuits

    trained, initial = (circuits.trained_circuits(w) for w in ("trained", "initial"))
    heads = {f"{h['layer']}.{h['head']}": h for h in trained["heads"]}
    page = flat_page("inside/circuits.md")
    pct = lambda x: f"{round(100 * x)}%"  # noqa: E731
    signed = lambda x: f"{x:.2f}".replace("-", "−")  # noqa: E731
    dup, echo = heads["0.0"], heads["1.0"]
    assert dup["own_letter"] == 1.0 and "peaks on the diagonal in all 16 rows" in page
    assert f"it sends {pct(dup['held_out']['earlier_copy'])} of the second copy's attention to the earlier copy" in page
    assert f"with an eigenvalue score of {signed(dup['eigen_copying'])}" in page
    copy_rows = " and ".join(str(round(16 * heads[h]["copying"])) for h in ("0.1", "1.1"))
    copy_eigen = " and ".join(signed(heads[h]["eigen_copying"]) for h in ("0.1", "1.1"))
    assert f"Heads 0.1 and 1.1 copy.** Their OV tables peak on the attended letter in {copy_rows} rows of 16, with eigenvalue scores of {copy_eigen}" in page
    assert echo["own_letter"] == 1.0 and f"it gives the earlier copy {pct(echo['held_out']['earlier_copy'])} of its attention" in page
    chance = max(max(h["own_letter"], h["copying"]) for h in initial["heads"])
    assert f"at most {round(16 * chance)} rows of 16" in page
    assert f"predicts the second copy at {trained['loss']['second']:.2f} nats per letter, against {trained['loss']['first']:.2f} on the first" in page
    assert max(h["held_out"]["after_copy"] for h in trained["heads"]) < 0.05 and "no head's induction score reaches 0.05" in page
