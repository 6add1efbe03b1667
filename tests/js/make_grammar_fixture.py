"""Writes ``tests/js/fixtures/grammar_cases.json``: JSON Schemas, the regular expression
Outlines compiles each to (``outlines_core.json_schema.build_regex_from_schema``, whitespace
``[ ]?``), and texts labelled by that expression (``regex.fullmatch``, with ``partial=True``
for prefixes), which ``tests/js/grammar.test.js`` runs through ``site_src/runtime/grammar.js``:
the automaton must accept, and keep alive, exactly the texts the expression does.

The texts are instances of each schema written with and without spaces, every prefix of some of
them, and mutations (a character deleted, doubled or replaced), with multi-byte characters,
escapes and control characters among the strings. ``test_grammar_fixture.py`` checks the file
is current.

Run: ``.venv/bin/python tests/js/make_grammar_fixture.py``
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import regex
from outlines_core.json_schema import build_regex_from_schema

FIXTURE_PATH = Path(__file__).resolve().parent / "fixtures" / "grammar_cases.json"
WHITESPACE = r"[ ]?"
SCHEMAS = {
    "a person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 3},
        },
        "required": ["name", "age", "tags"],
    },
    "numbers and literals": {
        "type": "object",
        "properties": {"x": {"type": "number"}, "ok": {"type": "boolean"}, "none": {"type": "null"}},
        "required": ["x", "ok", "none"],
    },
    "nested, with a bounded list": {
        "type": "object",
        "properties": {
            "o": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
            "list": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
        },
        "required": ["o", "list"],
    },
    "an enum": {"enum": ["red", 3, True, None, 2.5]},
    "a short string": {"type": "string", "minLength": 2, "maxLength": 4},
    "an empty object": {"type": "object", "properties": {}},
}
CHARACTERS = ["a", "Z", " ", "é", "東", "🤗", '"', "\\", "\n", "\x01", "\x7f", "\x85", "\xa0", "/", "{", "1"]


def instance(schema: dict, rng: random.Random):
    """A random value of the schema (strings from CHARACTERS, so some are not allowed)."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema["type"]
    if kind == "object":
        return {name: instance(sub, rng) for name, sub in schema["properties"].items()}
    if kind == "array":
        n = rng.randint(schema.get("minItems", 0), min(schema.get("maxItems", 4), 4))
        return [instance(schema["items"], rng) for _ in range(n)]
    if kind == "string":
        n = rng.randint(schema.get("minLength", 0), min(schema.get("maxLength", 6), 6))
        return "".join(rng.choice(CHARACTERS[:6]) if rng.random() < 0.8 else rng.choice(CHARACTERS) for _ in range(n))
    if kind == "integer":
        return rng.choice([0, 7, -12, 40961])
    if kind == "number":
        return rng.choice([0, -1.5, 3.25e-7, 12, 1e21])
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def texts(schema: dict, rng: random.Random) -> list[str]:
    out = []
    for _ in range(12):
        value = instance(schema, rng)
        spaced = rng.random() < 0.5
        out.append(json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")))
    for text in out[:3]:
        out += [text[:i] for i in range(len(text))]  # every prefix
    for text in list(out[:12]):
        for _ in range(4):
            i = rng.randrange(len(text) + 1)
            op = rng.choice(["delete", "double", "replace", "insert"])
            if op == "delete" and i < len(text):
                out.append(text[:i] + text[i + 1 :])
            elif op == "double" and i < len(text):
                out.append(text[:i] + text[i] + text[i:])
            elif op == "replace" and i < len(text):
                out.append(text[:i] + rng.choice(CHARACTERS) + text[i + 1 :])
            else:
                out.append(text[:i] + rng.choice(CHARACTERS) + text[i:])
    out += ["", " ", "{ }", "{  }", "[]", "nul", "null "]
    return sorted(set(out))


def label(pattern, text: str) -> str:
    """ "full" (the expression matches it), "prefix" (it can be completed) or "no"."""
    if pattern.fullmatch(text):
        return "full"
    return "prefix" if pattern.fullmatch(text, partial=True) else "no"


def cases() -> list[dict]:
    rng = random.Random(0)
    out = []
    for name, schema in SCHEMAS.items():
        expression = build_regex_from_schema(json.dumps(schema), whitespace_pattern=WHITESPACE)
        pattern = regex.compile(expression)
        out.append({"name": name, "schema": schema, "regex": expression, "texts": [[t, label(pattern, t)] for t in texts(schema, rng)]})
    return out


def dumps() -> str:
    return "[\n" + ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases()) + "\n]\n"  # one schema a line


def main() -> None:
    FIXTURE_PATH.write_text(dumps(), encoding="utf-8")
    print(f"grammar cases -> {FIXTURE_PATH}")


if __name__ == "__main__":
    main()
