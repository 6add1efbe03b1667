"""Guided decoding: constrain each next token so the output is always valid JSON.

A language model that is asked for JSON usually produces it, but "usually" is not
"always", and one malformed answer breaks whatever parses it. Guided (constrained)
decoding removes the risk: at every step a small state machine says which tokens
may come next under the target syntax, every other token's logit is set to
`-inf`, and the model chooses among what remains.

This module does it for one fixed schema, `{"name": <string>, "age": <int>}`, over
a tiny vocabulary of JSON pieces (`VOCAB`). The grammar, token by token:

    {  "name"  :  [space]  "  piece [piece [piece]]  "  ,  [space]  "age"  :  [space]
       digits (1 to 3; no leading zero, so "0" alone or 1-9 then up to 2 more)  }  <eos>

Name pieces are short capitalised syllables ("Ada", "Bo", ...). Other JSON pieces
(`true`, `null`, `[`, `]`, the key `"city"`) are in the vocabulary too: a model can
emit them, the grammar never allows them.

The "model" is a toy: at step t its logits are seeded Gaussian noise plus `skill`
on every token the grammar allows after the text so far (nothing once the text
has gone wrong). Skill 0 is a model that knows no JSON; a large skill is one that
nearly always does, and still sometimes slips.
"""

import json
import math
import numbers
from collections.abc import Sequence

import numpy as np

from demos._checks import as_int as _as_int
from demos._checks import as_number_between as _as_number

NAME_PIECES = ["Ada", "Bo", "Eve", "Lin", "Max", "Zo"]
DIGITS = [str(i) for i in range(10)]
VOCAB = ["{", "}", '"name"', '"age"', '"city"', ":", ",", " ", '"'] + NAME_PIECES + DIGITS + ["true", "null", "[", "]", "<eos>"]
V = len(VOCAB)
EOS = VOCAB.index("<eos>")
SCHEMA = '{"name": <string>, "age": <int>}'
MAX_NAME_PIECES = 3
MAX_DIGITS = 3
MAX_TOKENS = 24  # longer than the longest valid answer (19 tokens)
MAX_SEEDS = 2000

_ID = {piece: i for i, piece in enumerate(VOCAB)}
_PIECE_IDS = [_ID[p] for p in NAME_PIECES]
_DIGIT_IDS = [_ID[d] for d in DIGITS]


# ----------------------------------------------------------------------------
# the grammar: a state machine over token ids


# where the next token is forced, or one of two: state -> {token: next state}
_FIXED_MOVES = {
    "start": {"{": "open"},
    "open": {'"name"': "name_key"},
    "name_key": {":": "name_colon"},
    "name_colon": {" ": "name_space", '"': "string"},
    "name_space": {'"': "string"},
    "string_end": {",": "comma"},
    "comma": {" ": "comma_space", '"age"': "age_key"},
    "comma_space": {'"age"': "age_key"},
    "age_key": {":": "age_colon"},
    "zero": {"}": "close"},
    "close": {"<eos>": "done"},
}


def _transitions(state):
    """{token id: next state} for a state; an empty dict once the answer is complete."""
    kind, n = state
    if kind in _FIXED_MOVES:
        return {_ID[token]: (after, 0) for token, after in _FIXED_MOVES[kind].items()}
    if kind == "string":  # n name pieces so far
        moves = {} if n == 0 else {_ID['"']: ("string_end", 0)}
        if n < MAX_NAME_PIECES:
            moves.update({i: ("string", n + 1) for i in _PIECE_IDS})
        return moves
    if kind in ("age_colon", "age_space"):
        moves = {_ID["0"]: ("zero", 0)} | {i: ("int", 1) for i in _DIGIT_IDS[1:]}
        if kind == "age_colon":
            moves[_ID[" "]] = ("age_space", 0)
        return moves
    if kind == "int":  # n digits so far
        moves = {_ID["}"]: ("close", 0)}
        if n < MAX_DIGITS:
            moves.update({i: ("int", n + 1) for i in _DIGIT_IDS})
        return moves
    return {}  # "done"


_STATE_NAMES = {
    "start": "before the object",
    "open": "after {",
    "name_key": 'after "name"',
    "name_colon": "after the first colon",
    "name_space": "before the name string",
    "string": "inside the name string",
    "string_end": "after the name",
    "comma": "after the comma",
    "comma_space": 'before "age"',
    "age_key": 'after "age"',
    "age_colon": "after the second colon",
    "age_space": "before the number",
    "zero": "after the digit 0",
    "int": "inside the number",
    "close": "after }",
    "done": "finished",
}


def _walk(ids):
    """The state after `ids`, or None as soon as a token breaks the grammar."""
    state = ("start", 0)
    for i in ids:
        state = _transitions(state).get(i)
        if state is None:
            return None
    return state


def _mask(state):
    """Allowed-token mask (V,) in `state` (all False if the text is already invalid)."""
    mask = np.zeros(V, dtype=bool)
    if state is not None:
        mask[list(_transitions(state))] = True
    return mask


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _toy_logits(noise_row, state, skill):
    """The toy model's logits (V,): noise plus `skill` on every grammatical token."""
    return noise_row + skill * _mask(state)


def _text(ids):
    return "".join(VOCAB[i] for i in ids if i != EOS)


def _validate(text):
    """(valid JSON?, matches the schema?, parsed value or None, error message or None)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, False, None, f"json.loads fails: {exc.msg} at character {exc.pos}."
    fits = (
        isinstance(value, dict)
        and list(value) == ["name", "age"]
        and isinstance(value["name"], str)
        and isinstance(value["age"], int)
        and not isinstance(value["age"], bool)
    )
    error = None if fits else f"valid JSON, but not the schema {SCHEMA}."
    return True, fits, value if fits else None, error


# ----------------------------------------------------------------------------
# input checking


def _as_ids(prefix):
    if isinstance(prefix, (str, bytes)) or not isinstance(prefix, Sequence):
        raise ValueError("prefix must be a list of token ids.")
    ids = []
    for k, i in enumerate(prefix):
        if isinstance(i, float) and i.is_integer():
            i = int(i)
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < V:
            raise ValueError(f"prefix[{k}] is {i!r}; token ids are whole numbers from 0 to {V - 1}.")
        ids.append(int(i))
    return ids


# ----------------------------------------------------------------------------
# public API: plain data in, plain data out


def vocabulary() -> dict:
    """The token pieces and the schema.

    Returns:
        `tokens` (the `V` pieces; index = token id), `eos` (the id of `<eos>`),
        `schema` (a one-line description) and `max_tokens` (the generation limit).
    """
    return {"tokens": list(VOCAB), "eos": EOS, "schema": SCHEMA, "max_tokens": MAX_TOKENS}


def allowed_tokens(prefix: Sequence[int]) -> dict:
    """Which tokens the grammar allows after a prefix of token ids.

    Args:
        prefix: Token ids generated so far (may be empty).

    Returns:
        `mask` (V booleans), `allowed` (the allowed ids), `state` (where in the
        schema the prefix stands, in words) and `complete` (True after `<eos>`).

    Raises:
        ValueError: If an id is out of range or the prefix already breaks the grammar.

    Examples:
        >>> [VOCAB[i] for i in allowed_tokens([])["allowed"]]
        ['{']
    """
    ids = _as_ids(prefix)
    state = _walk(ids)
    if state is None:
        raise ValueError(f"the prefix {_text(ids)!r} already breaks the schema {SCHEMA}.")
    mask = _mask(state)
    return {"mask": mask.tolist(), "allowed": np.flatnonzero(mask).tolist(), "state": _STATE_NAMES[state[0]], "complete": state[0] == "done"}


def guided_distribution(logits: Sequence[float], prefix: Sequence[int]) -> dict:
    """Mask the logits with the grammar and renormalise.

    Args:
        logits: V scores for the next token.
        prefix: Token ids generated so far; must follow the grammar.

    Returns:
        `mask`, `allowed`, `state` (as in `allowed_tokens`), `probs` (softmax of the
        raw logits), `guided_probs` (softmax of the logits with every disallowed
        token at `-inf`: the masked, renormalised distribution) and `removed_mass`
        (the raw probability of the disallowed tokens).

    Raises:
        ValueError: On logits of the wrong length or not finite, or an invalid
            prefix, or a complete one (nothing may follow `<eos>`).
    """
    if isinstance(logits, (str, bytes)) or not isinstance(logits, Sequence) or len(logits) != V:
        raise ValueError(f"logits must be a list of {V} numbers, one per token.")
    for i, x in enumerate(logits):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
            raise ValueError(f"logits[{i}] is {x!r}; every logit must be a finite number.")
    allowed = allowed_tokens(prefix)
    if allowed["complete"]:
        raise ValueError("the answer is complete: nothing may follow <eos>.")
    z = np.array(logits, dtype=np.float64)  # (V,)
    mask = np.array(allowed["mask"])
    probs = _softmax(z)
    guided = _softmax(np.where(mask, z, -np.inf))
    return allowed | {"probs": probs.tolist(), "guided_probs": guided.tolist(), "removed_mass": float(probs[~mask].sum())}


def generate(seed: int = 0, guided: bool = True, skill: float = 4.0) -> dict:
    """Greedy decoding of the toy model, with or without the grammar's mask.

    At step t the toy model's logits are `noise[t] + skill * allowed(text so far)`,
    with `noise = default_rng(seed).standard_normal((MAX_TOKENS, V))`. Greedy picks
    the argmax: of the raw logits (unguided) or of the masked ones (guided). It
    stops at `<eos>` or after `MAX_TOKENS` tokens.

    Args:
        seed: Non-negative integer seed of the noise.
        guided: Apply the grammar's mask.
        skill: How strongly the toy model prefers grammatical tokens, 0 to 20.

    Returns:
        `seed`, `guided`, `skill`, `tokens` (ids), `pieces`, `text` (without
        `<eos>`), `finished` (reached `<eos>`), `valid_json` (`json.loads` succeeds),
        `matches_schema`, `parsed` (the object, when it matches), `error` (why not,
        or None) and `steps`: per step `step`, `state` (None once the text is off the
        grammar), `allowed` (ids the grammar allows; empty once off it), `probs`
        (softmax of the raw logits), `guided_probs` (None when unguided),
        `removed_mass` (raw probability of disallowed tokens), `chosen` (id),
        `piece`, `raw_choice` (the raw argmax) and `grammatical`.

    Raises:
        ValueError: On a bad seed or skill.
    """
    seed = _as_int("seed", seed, 0, 2**63 - 1)
    skill = _as_number("skill", skill, 0.0, 20.0)
    guided = bool(guided)
    noise = np.random.default_rng(seed).standard_normal((MAX_TOKENS, V))  # (MAX_TOKENS, V)
    ids, steps = [], []
    state = ("start", 0)
    while len(ids) < MAX_TOKENS and (not ids or ids[-1] != EOS):
        mask = _mask(state)  # (V,) all False once the text is off the grammar
        z = _toy_logits(noise[len(ids)], state, skill)  # (V,)
        probs = _softmax(z)
        raw_choice = int(np.argmax(z))
        if guided:
            guided_probs = _softmax(np.where(mask, z, -np.inf))
            chosen = int(np.argmax(guided_probs))
        else:
            guided_probs, chosen = None, raw_choice
        steps.append(
            {
                "step": len(ids),
                "state": _STATE_NAMES[state[0]] if state else None,
                "allowed": np.flatnonzero(mask).tolist(),
                "probs": probs.tolist(),
                "guided_probs": None if guided_probs is None else guided_probs.tolist(),
                "removed_mass": float(probs[~mask].sum()) if state else None,
                "chosen": chosen,
                "piece": VOCAB[chosen],
                "raw_choice": raw_choice,
                "grammatical": bool(mask[chosen]),
            }
        )
        ids.append(chosen)
        state = _transitions(state).get(chosen) if state else None
    text = _text(ids)
    valid_json, fits, parsed, error = _validate(text)
    return {
        "seed": seed,
        "guided": guided,
        "skill": skill,
        "tokens": ids,
        "pieces": [VOCAB[i] for i in ids],
        "text": text,
        "finished": ids[-1] == EOS,
        "valid_json": valid_json,
        "matches_schema": fits,
        "parsed": parsed,
        "error": error,
        "steps": steps,
    }


def success_rates(num_seeds: int = 200, skill: float = 4.0) -> dict:
    """How often guided and unguided greedy decoding give an answer that fits the schema.

    Args:
        num_seeds: Seeds 0 .. num_seeds-1 are tried, 1 to 2000.
        skill: The toy model's skill, 0 to 20.

    Returns:
        `num_seeds`, `skill`, `guided_ok` and `unguided_ok` (answers matching the
        schema), `unguided_valid_json` (unguided answers `json.loads` accepts) and
        `unguided_failures` (up to 5 failing unguided texts with their seeds).

    Raises:
        ValueError: On a bad count or skill.
    """
    num_seeds = _as_int("num_seeds", num_seeds, 1, MAX_SEEDS)
    skill = _as_number("skill", skill, 0.0, 20.0)
    guided_ok = unguided_ok = unguided_json = 0
    failures = []
    for seed in range(num_seeds):
        guided_ok += generate(seed, True, skill)["matches_schema"]
        raw = generate(seed, False, skill)
        unguided_ok += raw["matches_schema"]
        unguided_json += raw["valid_json"]
        if not raw["matches_schema"] and len(failures) < 5:
            failures.append({"seed": seed, "text": raw["text"], "error": raw["error"]})
    return {
        "num_seeds": num_seeds,
        "skill": skill,
        "guided_ok": guided_ok,
        "unguided_ok": unguided_ok,
        "unguided_valid_json": unguided_json,
        "unguided_failures": failures,
    }
