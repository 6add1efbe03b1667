"""The spot-the-bug checker: run the reader's code in a sandbox and compare it with the reference.

`run(bug, code)` executes `code` in a fresh namespace (with `np`/`numpy` available),
calls the function it defines on `NUM_CASES` seeded random inputs, compares every
result with the reference implementation's and returns plain data.

The reader's code runs inside `demos._isolation.isolated()` (`run_reader_code`): whatever it
changes in the interpreter is undone before the results are compared, and the reference
results are computed before it runs, so replacing `np.allclose` or a builtin fools no check
and breaks no later one.

The reader's exceptions (`Exception` and `SystemExit`) are caught and described, but
`KeyboardInterrupt` is let through: that is how the browser stops an endless loop
(Pyodide raises it when the page sets its interrupt buffer), and the caller reports it.
"""

import contextlib
import io
import math
import textwrap
import traceback
import warnings

import numpy as np

from demos import _isolation

FILENAME = "<your code>"  # the file name user code runs under, to find its lines in tracebacks
NUM_CASES = 5  # seeded random inputs per check
MAX_CODE_CHARS = 20_000
MAX_OUTPUT_CHARS = 2_000  # printed output returned to the reader
RTOL, ATOL = 1e-6, 1e-8  # equivalent float64 formulations agree far better than this


class _UserCodeError(Exception):
    """The reader's code failed; `info` is the plain-data description."""

    def __init__(self, info):
        super().__init__(info["message"])
        self.info = info


def _line_text(code, line):
    lines = code.splitlines()
    return lines[line - 1].strip() if line and 1 <= line <= len(lines) else ""


def _describe_exception(exc, code, where):
    """Plain data for an exception raised by the reader's code: type, message, line."""
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        line = exc.lineno
        detail = exc.msg
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
        line = frames[-1].lineno if frames else None
        detail = str(exc)
    name = type(exc).__name__
    text = _line_text(code, line)
    at = f" on line {line}" + (f" ({text})" if text else "") if line else ""
    message = f"{name}{at} {where}: {detail}" if detail else f"{name}{at} {where}."
    return {"type": name, "message": detail, "line": line, "summary": message}


def _load(code, bug):
    """Run the reader's code in a fresh namespace and return the function it defines."""
    namespace = {"__name__": "snippet", "np": np, "numpy": np}
    try:
        compiled = compile(code, FILENAME, "exec")
        exec(compiled, namespace)  # noqa: S102 - the reader runs their own code, in their own browser
    except (Exception, SystemExit) as exc:
        info = _describe_exception(exc, code, "while running your code")
        raise _UserCodeError(info) from None
    fn = namespace.get(bug.function)
    if not callable(fn):
        message = f"Your code must define a function `{bug.signature}`."
        raise _UserCodeError({"type": "NameError", "message": message, "line": None, "summary": message})
    return fn


def _copy(inputs):
    return {name: value.copy() if isinstance(value, np.ndarray) else list(value) if isinstance(value, list) else value for name, value in inputs.items()}


def _describe_inputs(inputs):
    parts = []
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            parts.append(f"{name} of shape {value.shape}")
        else:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def _as_result_array(value):
    """The reader's return value as a float64 array of its own (a copy, a plain ndarray), or
    None if it is not numeric."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr


def _compare(got, expected):
    """(passed, max_abs_error, problem) for one input; `problem` is a sentence or ''."""
    if got is None:
        return False, None, "it did not return an array of numbers"
    if got.shape != expected.shape:
        return False, None, f"it returned shape {got.shape}, expected shape {expected.shape}"
    if not np.isfinite(got).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(got))[0])
        return False, math.inf, f"it returned {got[bad]}" + (f" at index {bad}" if bad else "")
    diff = np.abs(got - expected)
    max_err = float(diff.max()) if diff.size else 0.0
    if np.allclose(got, expected, rtol=RTOL, atol=ATOL):
        return True, max_err, ""
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    worst = tuple(int(i) for i in worst)
    at = f" at index {worst}" if worst else ""
    return False, max_err, (f"max abs error {max_err:.3g}{at} (yours {got[worst]:.6g}, reference {expected[worst]:.6g})")


def snippet_side(diff, keep):
    """One side of a snippet written as a diff: the unmarked lines and those marked `keep`.

    A snippet (a seeded bug, an exercise) is written once: lines marked `-` are only in the
    code the reader is given, lines marked `+` only in the corrected code.
    """
    kept = []
    for line in textwrap.dedent(diff).splitlines():
        mark = line[:1]
        if mark not in ("", " ", "-", "+"):
            raise ValueError(f"a diff line starts with ' ', '-' or '+', not {mark!r}: {line!r}")
        if mark in ("", " ", keep):
            kept.append(line[1:])
    return textwrap.dedent("\n".join(kept)).strip() + "\n"


def check_code(code):
    """Raise ValueError unless `code` is a string of at most `MAX_CODE_CHARS` characters."""
    if not isinstance(code, str):
        raise ValueError(f"code must be a string of Python source, got {type(code).__name__}.")
    if len(code) > MAX_CODE_CHARS:
        raise ValueError(f"code is too long ({len(code):,} characters; at most {MAX_CODE_CHARS:,}).")


@contextlib.contextmanager
def quiet(printed):
    """Run the reader's code with its prints going to `printed` and NumPy's warnings silenced."""
    with contextlib.redirect_stdout(printed), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def seeded_inputs(entry):
    """The `NUM_CASES` seeded inputs of a snippet or exercise."""
    return [entry.make_inputs(np.random.default_rng(1000 + case)) for case in range(NUM_CASES)]


def reference_results(entry, inputs):
    """The reference function's result on each input, as float64 arrays (before any reader code runs)."""
    reference_fn = _reference_function(entry)
    return [np.asarray(reference_fn(*_copy(i).values()), dtype=np.float64) for i in inputs]


def run_reader_code(code, entry, inputs, printed, stop_at_error):
    """Run the reader's `code`, call its function on each input, undo what it changed.

    Everything that can run the reader's code (the `exec`, the calls, turning a result into
    an array, the text of an exception it raised) happens inside `_isolation.isolated()`, so
    what the caller does next sees the interpreter as it was.

    Returns:
        `(load_error, outcomes)`: the error info of code that does not run or defines no such
        function (then `outcomes` is empty), else None and one `(array or None, error info or
        None)` per input called (up to the first exception when `stop_at_error`).
    """
    outcomes = []
    with _isolation.isolated(), quiet(printed):
        try:
            fn = _load(code, entry)
        except _UserCodeError as exc:
            return exc.info, []
        for case_inputs in inputs:
            try:
                got = _as_result_array(fn(*_copy(case_inputs).values()))
            except (Exception, SystemExit) as exc:
                outcomes.append((None, _describe_exception(exc, code, "while calling your function")))
                if stop_at_error:
                    break
            else:
                outcomes.append((got, None))
    return None, outcomes


def _first_failure(bug, inputs, expected, outcomes):
    """(failed case or None, worst error, problem) over the outcomes, in order."""
    worst = 0.0
    for case, ((got, _), want) in enumerate(zip(outcomes, expected)):
        if bug.select is not None and got is not None and got.shape == want.shape:
            got, want = bug.select(inputs[case], got), bug.select(inputs[case], want)
        ok, err, problem = _compare(got, want)
        if not ok:
            return case, err, f"Input {case + 1} of {NUM_CASES} ({_describe_inputs(inputs[case])}): {problem}."
        worst = max(worst, err)
    return None, worst, ""


def _reference_function(bug):
    namespace = {"__name__": "reference", "np": np}
    exec(compile(bug.reference, f"<reference {bug.id}>", "exec"), namespace)  # noqa: S102 - our own catalogue
    return namespace[bug.function]


def _printed(buffer):
    """What the reader's code printed, cut to `MAX_OUTPUT_CHARS`."""
    output = buffer.getvalue()
    if len(output) > MAX_OUTPUT_CHARS:
        output = output[:MAX_OUTPUT_CHARS] + "\n… (output cut)"
    return output


def run(bug, code):
    """Run the reader's version of `bug`'s function and compare it with the reference.

    Args:
        bug: A `demos._bug_catalogue.Bug`.
        code: Python source defining `bug.function`.

    Returns:
        A dict with `passed`, `message`, `num_cases`, `cases_passed`, `failed_case`
        (1-based, or None), `max_abs_error`, `error` (None, or `{type, message, line}`)
        and `output`; `demos.bugs.check` documents each.

    Raises:
        ValueError: If `code` is not a string or is longer than `MAX_CODE_CHARS`.
    """
    check_code(code)
    inputs = seeded_inputs(bug)
    expected = reference_results(bug, inputs)
    printed = io.StringIO()
    error, outcomes = run_reader_code(code, bug, inputs, printed, stop_at_error=True)
    failed = max_err = problem = None
    if error is None:
        error = next((info for _, info in outcomes if info is not None), None)
        if error is not None:  # the comparison stops where the reader's function raised
            failed, max_err, problem = _first_failure(bug, inputs, expected, outcomes[:-1])
            if failed is not None:
                error = None
        else:
            failed, max_err, problem = _first_failure(bug, inputs, expected, outcomes)
    else:
        error = dict(error)
    result = {
        "passed": False,
        "message": "",
        "num_cases": NUM_CASES,
        "cases_passed": 0,
        "failed_case": None,
        "max_abs_error": None,
        "error": None,
        "output": _printed(printed),
    }
    if error is not None:
        result["message"] = error.pop("summary")
        result["error"] = error
    elif failed is not None:
        result.update(message=problem, cases_passed=failed, failed_case=failed + 1, max_abs_error=max_err)
    else:
        message = f"Passed: your {bug.function} matches the reference on all {NUM_CASES} inputs (max abs error {max_err:.2g})."
        result.update(passed=True, message=message, cases_passed=NUM_CASES, max_abs_error=max_err)
    return result
