"""Byte-pair encoding (BPE): train a tiny merge list, and apply GPT-2's merges step by step.

BPE builds a vocabulary bottom-up. Training starts from single characters and
repeatedly *merges* the most frequent pair of neighbouring symbols into a new
symbol; the ordered list of merges is the tokenizer. Encoding a word replays
that list: among the pairs present in the word, merge the one learned earliest
(lowest rank), everywhere it occurs, and repeat until no learned pair is left.

GPT-2 works on bytes, not characters. Each UTF-8 byte is first mapped to a
printable Unicode character (`byte_to_unicode`), so the 256 bytes form the base
alphabet and no text is ever out of vocabulary. Printable ASCII maps to itself;
the space byte becomes 'Ġ' and a newline 'Ċ'. Text is first split into words
with GPT-2's pattern, each word keeping the space in front of it, which is why
most GPT-2 tokens start with 'Ġ'.

Tie-breaking in `train_bpe`: the most frequent pair wins; among equally frequent
pairs, the lexicographically smallest (left symbol, right symbol), comparing
strings by Unicode code point. Every step reports how many pairs tied.

Every public function takes and returns plain Python data.
"""

import unicodedata
from collections import Counter
from collections.abc import Sequence

from demos._checks import as_int as _as_int

MAX_TEXT = 20_000  # characters accepted per call, so a widget cannot freeze the tab
MAX_MERGES = 2_000

# GPT-2's pre-tokenization pattern (it is applied with the `regex` module, whose
# \p{L} and \p{N} Python's `re` lacks):
#   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# `_split_words` implements it with a scanner over Unicode categories instead.
_CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")
_NOT_WHITE_SPACE = set("\x1c\x1d\x1e\x1f")  # str.isspace() says yes; Unicode's White_Space says no


def _bytes_to_unicode():
    """GPT-2's reversible map from the 256 byte values to printable characters."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = keep[:]
    extra = 0
    for b in range(256):
        if b not in keep:  # control characters, space, and a few others get shifted past 255
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, map(chr, chars)))


BYTE_TO_UNICODE = _bytes_to_unicode()
UNICODE_TO_BYTE = {c: b for b, c in BYTE_TO_UNICODE.items()}
_ranks_cache = {}  # merges text -> {pair: rank}; the widget sends the same merges.txt every time


# ----------------------------------------------------------------------------
# input checking: every message is shown to the reader by the widget


def _as_text(name, text, allow_empty=False):
    if not isinstance(text, str):
        raise ValueError(f"{name} must be text, got {type(text).__name__}.")
    if not text and not allow_empty:
        raise ValueError(f"{name} is empty: type some text.")
    if len(text) > MAX_TEXT:
        raise ValueError(f"{name} has {len(text)} characters; the demo accepts at most {MAX_TEXT}.")
    return text


def _parse_merges(merges):
    """A rank table {(left, right): rank} from merges.txt text or a list of pairs."""
    if isinstance(merges, str):
        if merges in _ranks_cache:
            return _ranks_cache[merges]
        lines = [line for line in merges.splitlines() if line and not line.startswith("#version")]
        pairs = []
        for n, line in enumerate(lines, 1):
            parts = line.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"merges line {n} is {line!r}; each line must be two symbols separated by one space.")
            pairs.append(tuple(parts))
        ranks = _rank_table(pairs)
        _ranks_cache.clear()  # keep one table: merges.txt is about half a megabyte
        _ranks_cache[merges] = ranks
        return ranks
    if isinstance(merges, (bytes, dict)) or not isinstance(merges, Sequence):
        raise ValueError(f"merges must be the text of merges.txt or a list of pairs, got {type(merges).__name__}.")
    pairs = []
    for n, item in enumerate(merges):
        if isinstance(item, str):
            item = item.split(" ")
        if isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(s, str) and s for s in item):
            pairs.append(tuple(item))
        else:
            raise ValueError(f"merges[{n}] is {item!r}; each merge must be a pair of non-empty symbols.")
    return _rank_table(pairs)


def _rank_table(pairs):
    ranks = {}
    for rank, pair in enumerate(pairs):
        ranks.setdefault(pair, rank)  # a repeated merge keeps its first (lowest) rank
    return ranks


# ----------------------------------------------------------------------------
# the algorithm, on tuples of symbols


def _kind(ch):
    """'L' letter, 'N' number, 'S' whitespace or 'O' anything else, as GPT-2's pattern sees it."""
    if ch.isspace() and ch not in _NOT_WHITE_SPACE:
        return "S"
    category = unicodedata.category(ch)[0]
    return category if category in "LN" else "O"


def _split_words(text):
    """GPT-2's word split: the pattern above, alternative by alternative."""
    kinds = [_kind(ch) for ch in text]
    words, i, n = [], 0, len(text)

    def run(j, kind):  # end of the run of `kind` characters starting at j
        while j < n and kinds[j] == kind:
            j += 1
        return j

    while i < n:
        contraction = next((c for c in _CONTRACTIONS if text.startswith(c, i)), None)
        if contraction:
            end = i + len(contraction)
        else:
            start = i + 1 if text[i] == " " and i + 1 < n and kinds[i + 1] != "S" else i  # the optional space
            if kinds[start] != "S":
                end = run(start, kinds[start])  # a run of letters, of digits, or of other symbols
            else:
                end = run(i, "S")  # whitespace: leave its last character to the word that follows
                if end < n and end - i > 1:
                    end -= 1
        words.append(text[i:end])
        i = end
    return words


def _pretokenize(text):
    """GPT-2's word split; each word mapped byte by byte to printable characters."""
    return ["".join(BYTE_TO_UNICODE[b] for b in w.encode("utf-8")) for w in _split_words(text)]


def _merge(symbols, pair):
    """Replace every non-overlapping occurrence of `pair`, left to right, by one symbol."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def _pair_counts(words):
    """Occurrences of each adjacent pair, weighted by word frequency."""
    counts = Counter()
    for symbols, freq in words.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += freq
    return counts


def _encode_word(symbols, ranks):
    """Apply merges by rank; return the list of steps (pair, rank, symbols after)."""
    steps = []
    while len(symbols) > 1:
        present = set(zip(symbols, symbols[1:]))
        best = min(present, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        symbols = _merge(symbols, best)
        steps.append({"pair": list(best), "rank": ranks[best], "symbols": list(symbols)})
    return symbols, steps


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def byte_to_unicode() -> dict:
    """GPT-2's byte-to-character table.

    Returns:
        A dict from each byte value (as a string "0" to "255", since the browser
            needs string keys) to its printable character; e.g. "32" (space) -> "Ġ".
    """
    return {str(b): c for b, c in sorted(BYTE_TO_UNICODE.items())}


def pretokenize(text: str) -> list[str]:
    """Split text into GPT-2 words, each shown in the byte-level alphabet.

    Args:
        text: Any text (up to 20,000 characters).

    Returns:
        The words, with spaces shown as 'Ġ' and other non-printable bytes mapped
            as in `byte_to_unicode`.

    Raises:
        ValueError: If `text` is not a string or is too long.

    Examples:
        >>> pretokenize("Hello world!")
        ['Hello', 'Ġworld', '!']
    """
    return _pretokenize(_as_text("text", text, allow_empty=True))


def apply_merges(text: str, merges: str | Sequence) -> dict:
    """Tokenize text with a given merge list, recording every merge applied.

    Each word is encoded on its own: start from its byte-level characters, then
    repeatedly merge the pair with the lowest rank (earliest in `merges`) wherever
    it occurs, until no adjacent pair is in the list. With GPT-2's merges.txt
    this gives GPT-2's tokens.

    Args:
        text: The text to tokenize, e.g. " unbelievable" (a leading space becomes 'Ġ').
        merges: The merge list: the text of a merges.txt file (one "left right"
            pair per line, an optional "#version" header), or a list of pairs
            (`["Ġ", "t"]` or `"Ġ t"`). Rank = position in the list.

    Returns:
        `words`: one dict per word with `word` (byte-level text), `initial`
            (its characters), `steps` (each with `pair`, `rank` and `symbols` after
            the merge) and `tokens`; and `tokens`, all tokens in order.

    Raises:
        ValueError: If the text is empty or too long, or the merges are malformed.

    Examples:
        >>> apply_merges("lower", [["l", "o"], ["lo", "w"], ["e", "r"]])["tokens"]
        ['low', 'er']
    """
    text = _as_text("text", text)
    ranks = _parse_merges(merges)
    words, tokens = [], []
    for word in _pretokenize(text):
        final, steps = _encode_word(tuple(word), ranks)
        words.append({"word": word, "initial": list(word), "steps": steps, "tokens": list(final)})
        tokens.extend(final)
    return {"words": words, "tokens": tokens}


def train_bpe(corpus: str, num_merges: int = 10, min_count: int = 1) -> dict:
    """Learn BPE merges from a small corpus, one step at a time.

    The corpus is split into GPT-2 words (each keeps its leading space as 'Ġ'),
    identical words are counted once with their frequency, and then each step:
    counts every adjacent symbol pair in every word (times the word's frequency),
    picks the most frequent pair (ties: the lexicographically smallest
    `(left, right)`), and merges it everywhere. Training stops after `num_merges`
    merges, or earlier when no pair occurs at least `min_count` times.

    Args:
        corpus: Training text, up to 20,000 characters.
        num_merges: Merges to learn, 0 to 2,000.
        min_count: Smallest pair count worth merging, >= 1.

    Returns:
        `merges` (list of `[left, right]`, in order: the merge list), `steps`
            (per merge: `pair`, `token` (the new symbol), `count`, `ties` (other
            pairs with the same count), `vocab_size` afterwards), `alphabet` (the
            initial characters, sorted), `words` (each distinct word with `word`,
            `count` and final `tokens`, in order of first appearance).

    Raises:
        ValueError: On empty or over-long text or out-of-range numbers.

    Examples:
        >>> train_bpe("low lower lowest", 3)["merges"]
        [['l', 'o'], ['lo', 'w'], ['low', 'e']]
    """
    corpus = _as_text("corpus", corpus)
    n_merges = _as_int("num_merges", num_merges, 0, MAX_MERGES)
    min_count = _as_int("min_count", min_count, 1, 10**9)
    freq = Counter(_pretokenize(corpus))  # insertion order = first appearance
    words = {tuple(w): c for w, c in freq.items()}
    alphabet = sorted({ch for w in freq for ch in w})
    vocab = set(alphabet)
    merges, steps = [], []
    while len(merges) < n_merges:
        counts = _pair_counts(words)
        if not counts:
            break
        best_count = max(counts.values())
        if best_count < min_count:
            break
        tied = sorted(p for p, c in counts.items() if c == best_count)
        pair = tied[0]
        words = {_merge(w, pair): c for w, c in words.items()}
        merges.append(list(pair))
        vocab.add(pair[0] + pair[1])  # two different merges can spell the same symbol
        steps.append({"pair": list(pair), "token": pair[0] + pair[1], "count": best_count, "ties": len(tied) - 1, "vocab_size": len(vocab)})
    return {
        "merges": merges,
        "steps": steps,
        "alphabet": alphabet,
        "words": [{"word": "".join(w), "count": c, "tokens": list(w)} for w, c in words.items()],
    }
