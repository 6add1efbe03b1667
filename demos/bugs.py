"""Spot the bug: short NumPy Transformer snippets, each with one real, common mistake.

Every snippet defines one function with a fixed signature (for example
`causal_attention(q, k, v)`). The reader edits the code until it behaves like the
correct reference implementation, and `check` says whether it does:

    check(bug_id, code)
      1. runs `code` in a fresh namespace (with `np`/`numpy` available),
      2. calls the function it defines on several seeded random inputs,
      3. compares every result with the reference implementation's,
      4. returns plain data: passed or not, and a message saying which input failed
         and by how much, or which exception was raised on which line.

The catalogue (`demos._bug_catalogue`) holds, for each snippet, a title, the buggy
code, a hint, the diagnosis and the corrected code; the checker (`demos._sandbox`)
runs the reader's code. The diagnosis and the correction are only
returned once the check passes, or when the reader asks for them (`reveal`).

`check` catches the reader's exceptions (`Exception` and `SystemExit`) but lets
`KeyboardInterrupt` through: that is how the browser stops an endless loop (Pyodide
raises it when the page sets its interrupt buffer), and the caller reports it.
"""

from demos import _sandbox
from demos._bug_catalogue import BUGS


def _get(bug_id):
    if not isinstance(bug_id, str) or bug_id not in BUGS:
        raise ValueError(f"unknown snippet {bug_id!r}; choose one of: {', '.join(BUGS)}.")
    return BUGS[bug_id]


def _summary(bug):
    return {"id": bug.id, "title": bug.title, "function": bug.function, "signature": bug.signature, "code": bug.code, "hint": bug.hint}


def list_bugs() -> list[dict]:
    """The catalogue, without the answers.

    Returns:
        One dict per snippet, in teaching order, with keys `id`, `title`,
        `function` (the name the code must define), `signature`, `code` (the buggy
        snippet) and `hint`.
    """
    return [_summary(bug) for bug in BUGS.values()]


def get_bug(bug_id: str) -> dict:
    """One snippet of the catalogue, without the answer.

    Args:
        bug_id: A snippet id from `list_bugs()`, e.g. `"causal_mask"`.

    Returns:
        The keys `id`, `title`, `function`, `signature`, `code` and `hint`.

    Raises:
        ValueError: If there is no snippet with that id.
    """
    return _summary(_get(bug_id))


def reveal(bug_id: str) -> dict:
    """The answer to one snippet: what is wrong and the corrected code.

    Args:
        bug_id: A snippet id from `list_bugs()`.

    Returns:
        The keys `id`, `diagnosis` (a paragraph) and `reference` (the corrected code).

    Raises:
        ValueError: If there is no snippet with that id.
    """
    bug = _get(bug_id)
    return {"id": bug.id, "diagnosis": bug.diagnosis, "reference": bug.reference}


def check(bug_id: str, code: str, reveal: bool = False) -> dict:
    """Run the reader's version of a snippet and compare it with the reference.

    The code runs in a fresh namespace where `np` and `numpy` are NumPy. The function
    it defines (`function` in the catalogue) is called on `demos._sandbox.NUM_CASES` seeded random
    inputs, each a fresh copy, and every result is compared with the reference
    implementation's with `numpy.allclose(rtol=1e-6, atol=1e-8)`. Arguments are
    passed by position, in the order of the snippet's signature. The first failing
    input stops the check. Whatever the code prints is returned as `output`.

    `KeyboardInterrupt` is not caught, so an interrupt (how the browser stops an
    endless loop) reaches the caller.

    Args:
        bug_id: A snippet id from `list_bugs()`.
        code: Python source defining the snippet's function.
        reveal: Also return the diagnosis and the corrected code when the check fails.

    Returns:
        A dict with `bug_id`, `passed` (bool), `message` (a sentence for the reader),
        `num_cases`, `cases_passed`, `failed_case` (1-based, or None),
        `max_abs_error` (largest error seen, or None when no comparison was possible),
        `error` (None, or `{type, message, line}` for an exception in the reader's code,
        `line` counted from 1 in `code`), `output` (printed text), `diagnosis` and
        `reference` (None unless passed or `reveal`).

    Raises:
        ValueError: If the snippet id is unknown or `code` is not a string.

    Examples:
        >>> check("causal_mask", get_bug("causal_mask")["code"])["passed"]
        False
        >>> check("causal_mask", reveal("causal_mask")["reference"])["passed"]
        True
    """
    bug = _get(bug_id)
    result = {"bug_id": bug.id, **_sandbox.run(bug, code)}
    answered = result["passed"] or bool(reveal)
    result["diagnosis"] = bug.diagnosis if answered else None
    result["reference"] = bug.reference if answered else None
    return result


def check_all_references() -> dict:
    """Check every snippet's corrected code: a self-test of the catalogue.

    Returns:
        `{bug_id: passed}` for every snippet; all should be True.
    """
    return {bug_id: check(bug_id, bug.reference)["passed"] for bug_id, bug in BUGS.items()}
