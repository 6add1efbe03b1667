"""demos.exercises: every exercise's reference passes its own check, the starting code and
the typical wrong answers fail it, each case is reported, and the sandbox's rules hold."""

import pytest

from demos import exercises

IDS = [e["id"] for e in exercises.list_exercises()]
PAGES = ["attention", "block", "bpe", "decoding", "efficiency", "embeddings", "model-size", "moe", "positions", "spot-the-bug"]


def test_every_lab_page_has_an_exercise():
    pages = {e["page"] for e in exercises.list_exercises()}
    assert {f"labs/{p}.md" for p in PAGES} <= pages


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes(exercise_id):
    result = exercises.check(exercise_id, exercises.solution(exercise_id)["reference"])
    assert result["passed"], result["message"]
    assert result["cases_passed"] == result["num_cases"] == len(result["cases"]) == exercises.NUM_CASES
    assert all(c["passed"] for c in result["cases"])
    assert result["reference"] == exercises.solution(exercise_id)["reference"]


@pytest.mark.parametrize("exercise_id", IDS)
def test_starting_code_fails_with_a_result_per_case(exercise_id):
    result = exercises.check(exercise_id, exercises.get_exercise(exercise_id)["code"])
    assert not result["passed"] and result["error"] is None
    assert len(result["cases"]) == exercises.NUM_CASES
    assert result["cases_passed"] < exercises.NUM_CASES
    assert all(c["message"] for c in result["cases"])
    assert result["reference"] is None


@pytest.mark.parametrize("exercise_id", IDS)
def test_typical_wrong_answers_fail(exercise_id):
    wrong = exercises.EXERCISES[exercise_id].wrong
    assert wrong, "each exercise carries at least one typical wrong answer"
    for code in wrong:
        result = exercises.check(exercise_id, code)
        assert not result["passed"], code


def test_an_exception_is_reported_per_case_with_its_line():
    code = "def cosine(a, b):\n    x = 1\n    raise RuntimeError('boom')\n"
    result = exercises.check("cosine", code)
    assert not result["passed"]
    assert all(not c["passed"] and c["line"] == 3 and "RuntimeError" in c["message"] for c in result["cases"])


def test_code_that_does_not_run_or_misses_the_function_is_an_error():
    syntax = exercises.check("cosine", "def cosine(a, b)\n    return 1\n")
    assert syntax["error"]["type"] == "SyntaxError" and syntax["error"]["line"] == 1 and syntax["cases"] == []
    missing = exercises.check("cosine", "x = 1\n")
    assert "cosine(a, b)" in missing["message"] and not missing["passed"]


def test_printed_output_is_returned():
    code = exercises.solution("cosine")["reference"].replace("return", "print('hi')\n    return")
    assert exercises.check("cosine", code)["output"].startswith("hi")


def test_keyboard_interrupt_is_not_caught():
    with pytest.raises(KeyboardInterrupt):
        exercises.check("cosine", "def cosine(a, b):\n    raise KeyboardInterrupt\n")


def test_bad_arguments():
    with pytest.raises(ValueError, match="no exercise"):
        exercises.check("nope", "")
    with pytest.raises(ValueError, match="string"):
        exercises.check("cosine", 3)
    with pytest.raises(ValueError, match="too long"):
        exercises.check("cosine", "#" * 100_000)
    with pytest.raises(ValueError, match="no exercise"):
        exercises.get_exercise("nope")
