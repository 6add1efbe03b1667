"""Writes ``tests/js/fixtures/beam_cases.json``: beam searches that ``model_export.beam`` (the
CPython reference, equal to transformers' ``generate(num_beams=...)``) runs on a bigram model
of 16 tokens, with every step's candidates, which ``tests/js/beam.test.js`` replays through
``site_src/runtime/beam.js``. ``test_beam_fixture.py`` checks it is current.

A bigram model's logits depend on the last token only, so the JavaScript side needs no cache
to replay a search; the browser tests compare the whole search on the real model.

Run: ``.venv/bin/python tests/js/make_beam_fixture.py``
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from model_export.beam import beam_search

FIXTURE_PATH = Path(__file__).resolve().parent / "fixtures" / "beam_cases.json"
VOCAB = 16
EOS = 3
CASES = {  # name: options of beam_search
    "2 beams, to the limit": dict(num_beams=2, new_tokens=6),
    "1 beam is greedy": dict(num_beams=1, new_tokens=5, eos=EOS),
    "3 beams, an end token": dict(num_beams=3, new_tokens=8, eos=EOS),
    "4 beams, an end token, early stopping": dict(num_beams=4, new_tokens=8, eos=EOS, early_stopping=True),
    "4 beams, plain sums, never early": dict(num_beams=4, new_tokens=8, eos=EOS, length_penalty=0.0, early_stopping="never"),
    "3 beams, short favoured": dict(num_beams=3, new_tokens=8, eos=EOS, length_penalty=-0.5),
    "3 beams, long favoured, never early": dict(num_beams=3, new_tokens=8, eos=EOS, length_penalty=2.0, early_stopping="never"),
    "8 beams, an end token": dict(num_beams=8, new_tokens=6, eos=EOS),
}


class Bigram:
    """A model whose next-token logits are a row of a table chosen by the last token."""

    def __init__(self, table: np.ndarray):
        self.table = table  # (V, V) float32
        self.config = SimpleNamespace(n_positions=64, n_layer=1, n_head=1, head_dim=1)

    def run(self, input_ids, attention_mask, position_ids, past):
        logits = self.table[input_ids]  # (B, T, V)
        present = [np.concatenate([p, input_ids[:, None, :, None].astype(np.float32)], axis=2) for p in past]
        return logits, present


def table(seed: int) -> np.ndarray:
    """A peaked (V, V) table: some continuations clearly better, others close (ties of rank)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((VOCAB, VOCAB)) * 2.5
    logits[:, EOS] += 1.5  # hypotheses end often enough for the stopping rules to decide
    return logits.astype(np.float32)


def cases() -> list[dict]:
    out = []
    for seed, (name, options) in enumerate(CASES.items()):
        logits = table(seed)
        prompt = [int(seed % VOCAB), 7]
        result = beam_search(Bigram(logits), prompt, **options)
        out.append(
            {
                "name": name,
                "table": logits.tolist(),
                "prompt": prompt,
                "options": {
                    "numBeams": options["num_beams"],
                    "maxNewTokens": options["new_tokens"],
                    "eos": options.get("eos"),
                    "lengthPenalty": options.get("length_penalty", 1.0),
                    "earlyStopping": options.get("early_stopping", False),
                },
                "sequences": result.sequences,
                "scores": result.scores,
                "steps": [
                    {
                        "parents": s.parents.tolist(),
                        "tokens": s.tokens.tolist(),
                        "logProbs": s.log_probs.astype(float).tolist(),
                        "ended": s.ended.tolist(),
                        "kept": s.kept.tolist(),
                    }
                    for s in result.steps
                ],
            }
        )
    return out


def dumps() -> str:
    return "[\n" + ",\n".join(json.dumps(case) for case in cases()) + "\n]\n"  # one case a line


def main() -> None:
    FIXTURE_PATH.write_text(dumps(), encoding="utf-8")
    print(f"beam cases -> {FIXTURE_PATH}")


if __name__ == "__main__":
    main()
