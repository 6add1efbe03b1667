"""Writes ``tests/js/fixtures/speculative_cases.json``: greedy speculative decoding that
``model_export.speculative`` (the CPython reference) runs with a bigram target and a bigram
draft over 16 tokens, with every round's proposals and acceptances, which
``tests/js/speculative.test.js`` replays through ``site_src/runtime/speculative.js``.
``test_speculative_fixture.py`` checks it is current.

The draft's table is the target's plus noise, so that it agrees often but not always. The
browser tests compare whole runs on the real model and its draft.

Run: ``.venv/bin/python tests/js/make_speculative_fixture.py``
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from model_export.speculative import greedy_decode, speculative_decode

FIXTURE_PATH = Path(__file__).resolve().parent / "fixtures" / "speculative_cases.json"
VOCAB = 16
CASES = {  # name: (gamma, new tokens, the draft's noise)
    "1 proposal a round": (1, 10, 1.0),
    "4 proposals, a close draft": (4, 16, 0.5),
    "4 proposals, a poor draft": (4, 12, 3.0),
    "8 proposals, more than the tokens left": (8, 5, 0.5),
    "3 proposals, one new token": (3, 1, 1.0),
}


def tables(seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """A target (V, V) table and a draft that is the target plus noise, float32."""
    rng = np.random.default_rng(seed)
    target = rng.standard_normal((VOCAB, VOCAB)) * 2.0
    draft = target + rng.standard_normal((VOCAB, VOCAB)) * noise
    return target.astype(np.float32), draft.astype(np.float32)


def bigram(table: np.ndarray):
    """ids -> the rows of their tokens: a model whose logits depend on the last token only."""
    return lambda ids: table[np.asarray(ids)]


def cases() -> list[dict]:
    out = []
    for seed, (name, (gamma, new_tokens, noise)) in enumerate(CASES.items()):
        target, draft = tables(seed, noise)
        prompt = [seed % VOCAB, 5]
        result = speculative_decode(bigram(target), bigram(draft), prompt, new_tokens, gamma)
        assert result.tokens == greedy_decode(bigram(target), prompt, new_tokens)
        out.append(
            {
                "name": name,
                "target": target.tolist(),
                "draft": draft.tolist(),
                "prompt": prompt,
                "options": {"gamma": gamma, "maxNewTokens": new_tokens, "temperature": 0},
                "tokens": result.tokens,
                "proposed": result.proposed,
                "accepted": result.accepted,
            }
        )
    return out


def dumps() -> str:
    return "[\n" + ",\n".join(json.dumps(case) for case in cases()) + "\n]\n"  # one case a line


def main() -> None:
    FIXTURE_PATH.write_text(dumps(), encoding="utf-8")
    print(f"speculative cases -> {FIXTURE_PATH}")


if __name__ == "__main__":
    main()
