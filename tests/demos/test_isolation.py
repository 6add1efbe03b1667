"""demos._isolation: the reader's code in an exercise or a spot-the-bug check changes nothing
that outlives the check, and what it replaces cannot make a wrong answer pass.

One row per kind of hostile code: it runs as an exercise check (a wrong `cosine`, so the check
must fail whatever the code patched), then the interpreter must be as before (the same
builtins, NumPy functions, checker functions, `sys` settings and modules), the exercise's
solution must pass, and spot-the-bug and another demo must give the answers they gave before.
"""

import builtins
import os
import sys

import numpy as np
import pytest

from demos import _isolation, _sandbox, attention, bugs, exercises

WRONG = "def cosine(a, b):\n    return a @ b\n"  # no normalisation: wrong on every seeded input

HOSTILE = {
    "deletes a builtin": "import builtins\ndel builtins.len\n",
    "replaces builtins": "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n",
    "replaces NumPy's comparison": "np.allclose = lambda *a, **k: True\nnp.isfinite = lambda x: np.ones(np.shape(x), bool)\n",
    "replaces the checker": "import demos._sandbox as s\ns._compare = lambda got, expected: (True, 0.0, '')\n",
    "patches while it runs": "def cosine(a, b):\n    np.allclose = lambda *a, **k: True\n    np.abs = lambda x: x * 0\n    return a @ b\n",
    "changes sys": "import sys\nsys.setrecursionlimit(60)\nsys.path.insert(0, '/nowhere')\nsys.stdout = None\nsys.meta_path.clear()\n",
    "changes modules": (
        "import sys, json\njson.dumps = None\nsys.modules['numpy'] = None\nimport demos.attention\ndel demos.attention.scaled_dot_product_attention\n"
    ),
    "imports a new module and patches it": "import fractions\nfractions.Fraction = None\n",
    "changes a class": "import demos.exercises as e\ne.Exercise.make_inputs = lambda self, rng: {}\n",
    "changes the directory": "import os\nos.chdir('/')\n",
    "exits at import": "raise SystemExit(3)\n",
    "undoes the undo": "import builtins, demos._isolation as i\ndel builtins.len, i._put_back, i._MISSING, i.sys\ni.Snapshot.restore = lambda self: []\n",
}


def interpreter_state():
    """What reader code must leave alone, by identity."""
    return {
        "builtins": dict(vars(builtins)),
        "numpy": dict(vars(np)),
        "sandbox": dict(vars(_sandbox)),
        "modules": dict(sys.modules),
        "path": list(sys.path),
        "meta_path": list(sys.meta_path),
        "recursion": sys.getrecursionlimit(),
        "cwd": os.getcwd(),
        "stdout": sys.stdout,
        "exercise class": dict(vars(exercises.Exercise)),
    }


def same(before, after):
    """Names of the entries of `before` that `after` no longer holds (compared by identity)."""
    changed = []
    for key, value in before.items():
        now = after[key]
        if isinstance(value, dict):
            if value.keys() != now.keys() or any(now[k] is not v for k, v in value.items()):
                changed.append(key)
        elif now != value:
            changed.append(key)
    return changed


@pytest.fixture(scope="module")
def answers_before():
    """Answers the checker and a demo give before any hostile code has run."""
    q = np.random.default_rng(0).normal(size=(4, 8))
    return {
        "bug": bugs.check("causal_mask", bugs.reveal("causal_mask")["reference"]),
        "attention": attention.scaled_dot_product_attention(q.tolist(), q.tolist(), q.tolist()),
        "query": q,
    }


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_code_changes_nothing_that_outlives_its_check(kind, answers_before):
    code = HOSTILE[kind]
    code = code if "def cosine" in code else code + WRONG
    before = interpreter_state()
    result = exercises.check("cosine", code)
    assert not result["passed"], f"{kind}: a wrong cosine passed: {result['message']}"
    assert same(before, interpreter_state()) == [], kind
    assert exercises.check("cosine", exercises.solution("cosine")["reference"])["passed"]
    assert bugs.check("causal_mask", bugs.reveal("causal_mask")["reference"]) == answers_before["bug"]
    q = answers_before["query"].tolist()
    assert attention.scaled_dot_product_attention(q, q, q) == answers_before["attention"]


@pytest.mark.parametrize("kind", ["replaces NumPy's comparison", "replaces the checker", "patches while it runs"])
def test_spot_the_bug_cannot_be_fooled_either(kind):
    code = HOSTILE[kind].replace("def cosine(a, b)", "def causal_attention(q, k, v)").replace("a @ b", "v")
    if "def causal_attention" not in code:
        code += bugs.get_bug("causal_mask")["code"]  # the buggy snippet, unfixed
    before = interpreter_state()
    result = bugs.check("causal_mask", code)
    assert not result["passed"], result["message"]
    assert same(before, interpreter_state()) == []


def test_isolated_reports_what_it_put_back():
    changed = []
    with _isolation.isolated(changed):
        del builtins.len
        sys.path.append("/nowhere")
        import decimal  # noqa: F401 - a module the block imports (or finds loaded)
    assert builtins.len is len
    assert "module builtins" in changed and "sys.path" in changed
    assert "/nowhere" not in sys.path


def test_isolated_restores_after_keyboard_interrupt():
    """The interrupt that stops an endless loop passes through, and the restore still happens."""
    with pytest.raises(KeyboardInterrupt), _isolation.isolated():
        np.allclose = None
        raise KeyboardInterrupt
    assert callable(np.allclose)
