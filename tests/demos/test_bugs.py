"""Tests for demos.bugs: every buggy snippet fails, every corrected one passes, and
the corrected snippets agree with independent implementations (plain loops, and
PyTorch where it is installed)."""

import dataclasses
import math
import signal
import sys
import threading
import time
from functools import partial

import numpy as np
import pytest

from demo_checks import assert_plain as check_plain
from demos import _bug_catalogue as catalogue
from demos import _sandbox as sandbox
from demos.bugs import check, check_all_references, get_bug, list_bugs, reveal

assert_plain = partial(check_plain, allow_none=True)


IDS = [b["id"] for b in list_bugs()]
REQUIRED = {"causal_mask", "softmax_axis", "missing_scale", "head_split", "padding_mask", "post_norm", "layer_norm_axis"}


# ---------------------------------------------------------------------------
# the catalogue


def test_catalogue_has_the_required_snippets():
    assert len(IDS) >= 6 and len(set(IDS)) == len(IDS)
    assert REQUIRED <= set(IDS)
    titles = [b["title"] for b in list_bugs()]
    assert len(set(titles)) == len(titles)


@pytest.mark.parametrize("bug_id", IDS)
def test_snippet_defines_its_signature(bug_id):
    bug = get_bug(bug_id)
    assert bug["signature"].startswith(bug["function"] + "(")
    answer = reveal(bug_id)
    for code in (bug["code"], answer["reference"]):
        assert f"def {bug['signature']}" in code or f"def {bug['function']}(" in code
        compile(code, "<test>", "exec")
    assert bug["code"] != answer["reference"]
    assert bug["hint"] and answer["diagnosis"]
    assert "diagnosis" not in bug and "reference" not in bug  # the summary gives nothing away
    assert_plain(bug)
    assert_plain(answer)


def test_a_diff_line_without_a_marker_is_refused():
    bug = dataclasses.replace(catalogue.BUGS["causal_mask"], diff="  x = 1\n *y = 2\n")
    with pytest.raises(ValueError, match="starts with ' ', '-' or '[+]'"):
        _ = bug.code


# ---------------------------------------------------------------------------
# check: buggy fails, reference passes


@pytest.mark.parametrize("bug_id", IDS)
def test_buggy_code_fails_without_giving_the_answer(bug_id):
    result = check(bug_id, get_bug(bug_id)["code"])
    assert result["passed"] is False
    assert result["error"] is None, result["message"]  # it runs: the bug is in the numbers
    assert result["failed_case"] == result["cases_passed"] + 1
    assert result["message"].startswith(f"Input {result['failed_case']} of {sandbox.NUM_CASES} (")
    assert result["max_abs_error"] > 1e-3
    assert result["diagnosis"] is None and result["reference"] is None
    assert_plain(result)


@pytest.mark.parametrize("bug_id", IDS)
def test_buggy_code_fails_on_every_input(bug_id):
    """Each seeded input catches the bug on its own, so no check passes by luck."""
    bug = catalogue.BUGS[bug_id]
    buggy, fixed = {}, {}
    exec(bug.code, buggy)
    exec(bug.reference, fixed)
    for case in range(sandbox.NUM_CASES):
        inputs = bug.make_inputs(np.random.default_rng(1000 + case))
        got = np.asarray(buggy[bug.function](*sandbox._copy(inputs).values()), dtype=float)
        want = np.asarray(fixed[bug.function](*sandbox._copy(inputs).values()), dtype=float)
        if bug.select is not None:
            got, want = bug.select(inputs, got), bug.select(inputs, want)
        assert got.shape != want.shape or not np.allclose(got, want, rtol=sandbox.RTOL, atol=sandbox.ATOL)


@pytest.mark.parametrize("bug_id", IDS)
def test_reference_passes_and_shows_the_diagnosis(bug_id):
    answer = reveal(bug_id)
    result = check(bug_id, answer["reference"])
    assert result["passed"] is True, result["message"]
    assert result["cases_passed"] == result["num_cases"] == sandbox.NUM_CASES
    assert result["failed_case"] is None and result["error"] is None
    assert result["max_abs_error"] == 0.0
    assert result["diagnosis"] == answer["diagnosis"] and result["reference"] == answer["reference"]
    assert result["message"].startswith("Passed")
    assert_plain(result)


def test_reveal_gives_the_answer_on_a_failing_check():
    result = check("causal_mask", get_bug("causal_mask")["code"], reveal=True)
    assert result["passed"] is False
    assert result["diagnosis"] == reveal("causal_mask")["diagnosis"]
    assert result["reference"] == reveal("causal_mask")["reference"]


def test_every_reference_passes():
    assert check_all_references() == {bug_id: True for bug_id in IDS}


def test_equivalent_rewrite_passes():
    """Any correct formulation passes, not just the reference's text."""
    code = """
import numpy as np
def causal_attention(q, k, v):
    T, d = q.shape
    out = np.zeros_like(v)
    for t in range(T):
        s = q[t] @ k[: t + 1].T * d ** -0.5
        w = np.exp(s - s.max())
        out[t] = (w / w.sum()) @ v[: t + 1]
    return out
"""
    assert check("causal_mask", code)["passed"]
    assert check("mask_with_zero", code)["passed"]


def test_padding_outputs_are_not_checked():
    """Zeroing the outputs at padding positions is fine; only real positions count."""
    code = reveal("padding_mask")["reference"].replace("    return weights @ v", "    out = weights @ v\n    out[is_pad] = 0.0\n    return out")
    assert check("padding_mask", code)["passed"]


# ---------------------------------------------------------------------------
# check: messages for code that breaks


def test_syntax_error_names_the_line():
    result = check("causal_mask", "import numpy as np\n\ndef causal_attention(q, k, v)\n    return q\n")
    assert not result["passed"]
    assert result["error"]["type"] == "SyntaxError" and result["error"]["line"] == 3
    assert "line 3" in result["message"]


def test_runtime_error_names_the_line_in_the_readers_code():
    code = "import numpy as np\n\ndef attention(q, k, v):\n    scores = q @ v\n    return scores\n"
    result = check("softmax_axis", code)
    assert result["error"]["type"] == "ValueError"
    assert result["error"]["line"] == 4
    assert "line 4 (scores = q @ v)" in result["message"]
    assert "while calling your function" in result["message"]


def test_error_at_import_time():
    result = check("causal_mask", "x = 1 / 0\n")
    assert result["error"] == {"type": "ZeroDivisionError", "message": "division by zero", "line": 1}
    assert "while running your code" in result["message"]


def test_missing_function():
    result = check("head_split", "def split(x, n):\n    return x\n")
    assert not result["passed"] and result["error"]["type"] == "NameError"
    assert "split_heads(x, n_heads)" in result["message"]


def test_wrong_shape_and_non_numbers_and_nan():
    wrong = check("head_split", "def split_heads(x, n_heads):\n    return x\n")
    assert not wrong["passed"] and "returned shape" in wrong["message"] and wrong["error"] is None
    text = check("shifted_targets", "def lm_loss(logits, tokens):\n    return 'low'\n")
    assert not text["passed"] and "did not return an array of numbers" in text["message"]
    nan = check("shifted_targets", "import numpy as np\ndef lm_loss(logits, tokens):\n    return np.nan\n")
    assert not nan["passed"] and "nan" in nan["message"] and nan["max_abs_error"] == math.inf


def test_printed_output_is_returned():
    code = reveal("layer_norm_axis")["reference"].replace('    """LayerNorm', '    print("shape", x.shape)\n    """LayerNorm')
    result = check("layer_norm_axis", code)
    assert result["passed"]
    assert result["output"].count("shape (") == sandbox.NUM_CASES


def test_system_exit_is_reported_not_raised():
    result = check("causal_mask", "raise SystemExit(3)\n")
    assert not result["passed"] and result["error"]["type"] == "SystemExit"


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown snippet"):
        check("nope", "")
    with pytest.raises(ValueError, match="must be a string"):
        check("causal_mask", 42)
    with pytest.raises(ValueError, match="too long"):
        check("causal_mask", "#" * (sandbox.MAX_CODE_CHARS + 1))
    with pytest.raises(ValueError, match="unknown snippet"):
        reveal("nope")


# ---------------------------------------------------------------------------
# interruption: the browser stops endless loops with KeyboardInterrupt


def test_keyboard_interrupt_is_not_swallowed():
    with pytest.raises(KeyboardInterrupt):
        check("causal_mask", "raise KeyboardInterrupt\n")


@pytest.mark.skipif(
    not hasattr(signal, "setitimer") or sys.platform == "emscripten", reason="needs POSIX interval timers (Pyodide's interrupt buffer is tested in the browser)"
)
def test_endless_loop_is_stopped_by_an_interrupt():
    """The CPython stand-in for Pyodide's interrupt buffer: a timer raises
    KeyboardInterrupt inside the reader's `while True: pass`, and check lets it out."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are delivered to the main thread only")

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    code = "def causal_attention(q, k, v):\n    while True:\n        pass\n"
    start = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            check("causal_mask", code)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - start < 5
    assert check("causal_mask", reveal("causal_mask")["reference"])["passed"]  # and it runs again


# ---------------------------------------------------------------------------
# the references against independent implementations


def reference(bug_id):
    namespace = {}
    exec(reveal(bug_id)["reference"], namespace)
    return namespace[catalogue.BUGS[bug_id].function]


def loop_attention(q, k, v, allowed):
    """Attention one query at a time with math.exp; `allowed(i, j)` says if i may see j."""
    out = np.zeros((q.shape[0], v.shape[1]))
    d = q.shape[1]
    for i in range(q.shape[0]):
        keys = [j for j in range(k.shape[0]) if allowed(i, j)]
        scores = [sum(q[i, c] * k[j, c] for c in range(d)) / math.sqrt(d) for j in keys]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = math.fsum(weights)
        for w, j in zip(weights, keys):
            out[i] += (w / total) * v[j]
    return out


def inputs_for(bug_id, seed):
    return catalogue.BUGS[bug_id].make_inputs(np.random.default_rng(seed))


SEEDS = range(7, 12)  # not the seeds check uses


@pytest.mark.parametrize("seed", SEEDS)
def test_attention_references_match_loops(seed):
    x = inputs_for("causal_mask", seed)
    want = loop_attention(x["q"], x["k"], x["v"], lambda i, j: j <= i)
    np.testing.assert_allclose(reference("causal_mask")(**x), want, atol=1e-12)
    np.testing.assert_allclose(reference("mask_with_zero")(**x), want, atol=1e-12)
    for bug_id in ("softmax_axis", "missing_scale"):
        x = inputs_for(bug_id, seed)
        want = loop_attention(x["q"], x["k"], x["v"], lambda i, j: True)
        np.testing.assert_allclose(reference(bug_id)(**x), want, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_padding_reference_matches_loops(seed):
    x = inputs_for("padding_mask", seed)
    got = reference("padding_mask")(**x)
    for b, n in enumerate(x["lengths"]):
        want = loop_attention(x["q"][b], x["k"][b], x["v"][b], lambda i, j, n=n: j < n)
        np.testing.assert_allclose(got[b, :n], want[:n], atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_split_heads_reference_matches_indexing(seed):
    x = inputs_for("head_split", seed)
    got = reference("head_split")(**x)
    T, d_model = x["x"].shape
    d_head = d_model // x["n_heads"]
    assert got.shape == (x["n_heads"], T, d_head)
    for h in range(x["n_heads"]):
        for t in range(T):
            assert got[h, t].tolist() == x["x"][t, h * d_head : (h + 1) * d_head].tolist()


def loop_layer_norm(row, eps=1e-5):
    mean = math.fsum(row) / len(row)
    var = math.fsum((r - mean) ** 2 for r in row) / len(row)
    return [(r - mean) / math.sqrt(var + eps) for r in row]


@pytest.mark.parametrize("seed", SEEDS)
def test_norm_references_match_loops(seed):
    x = inputs_for("layer_norm_axis", seed)
    got = reference("layer_norm_axis")(**x)
    for t, row in enumerate(x["x"]):
        want = np.array(loop_layer_norm(row.tolist())) * x["gamma"] + x["beta"]
        np.testing.assert_allclose(got[t], want, atol=1e-12)
    x = inputs_for("post_norm", seed)
    got = reference("post_norm")(**x)
    for t, row in enumerate(x["x"]):
        hidden = np.maximum(0.0, np.array(loop_layer_norm(row.tolist())) @ x["w1"])
        np.testing.assert_allclose(got[t], row + hidden @ x["w2"], atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_lm_loss_reference_matches_loop(seed):
    x = inputs_for("shifted_targets", seed)
    logits, tokens = x["logits"], x["tokens"]
    losses = []
    for t in range(len(tokens) - 1):
        row = logits[t].tolist()
        top = max(row)
        log_z = top + math.log(math.fsum(math.exp(z - top) for z in row))
        losses.append(log_z - row[tokens[t + 1]])
    assert reference("shifted_targets")(**x) == pytest.approx(math.fsum(losses) / len(losses), abs=1e-12)


# ---------------------------------------------------------------------------
# PyTorch references (skipped where torch is not installed, e.g. under Pyodide)


@pytest.mark.parametrize("seed", SEEDS)
def test_references_match_torch(seed):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731

    x = inputs_for("causal_mask", seed)
    want = F.scaled_dot_product_attention(t(x["q"]), t(x["k"]), t(x["v"]), is_causal=True)
    np.testing.assert_allclose(reference("causal_mask")(**x), want.numpy(), atol=1e-12)

    x = inputs_for("softmax_axis", seed)
    want = F.scaled_dot_product_attention(t(x["q"]), t(x["k"]), t(x["v"]))
    np.testing.assert_allclose(reference("softmax_axis")(**x), want.numpy(), atol=1e-12)

    x = inputs_for("padding_mask", seed)
    T = x["q"].shape[1]
    real = torch.arange(T)[None, :] < torch.tensor(x["lengths"])[:, None]  # (B, T)
    want = F.scaled_dot_product_attention(t(x["q"]), t(x["k"]), t(x["v"]), attn_mask=real[:, None, :])
    np.testing.assert_allclose(catalogue._real_rows(x, reference("padding_mask")(**x)), catalogue._real_rows(x, want.numpy()), atol=1e-12)

    x = inputs_for("head_split", seed)
    T, d_model = x["x"].shape
    want = t(x["x"]).view(T, x["n_heads"], d_model // x["n_heads"]).transpose(0, 1)
    np.testing.assert_array_equal(reference("head_split")(**x), want.numpy())

    x = inputs_for("layer_norm_axis", seed)
    want = F.layer_norm(t(x["x"]), (x["x"].shape[1],), t(x["gamma"]), t(x["beta"]), eps=1e-5)
    np.testing.assert_allclose(reference("layer_norm_axis")(**x), want.numpy(), atol=1e-12)

    x = inputs_for("post_norm", seed)
    h = t(x["x"])
    want = h + F.relu(F.layer_norm(h, (h.shape[1],), eps=1e-5) @ t(x["w1"])) @ t(x["w2"])
    np.testing.assert_allclose(reference("post_norm")(**x), want.numpy(), atol=1e-12)

    x = inputs_for("shifted_targets", seed)
    want = F.cross_entropy(t(x["logits"])[:-1], torch.tensor(x["tokens"][1:]))
    assert reference("shifted_targets")(**x) == pytest.approx(float(want), abs=1e-12)
