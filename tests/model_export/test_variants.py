"""One owner for every variant fact: ``model_export/variants.py``.

Its specs are consistent (a variant is written after the one it is built from, by a writer the
exporter has, ranked without ties on the backends it runs on), and no other module of the
exporter, the site build or the browser's runtime names a variant: they read the specs, or the
manifest that carries them (``backends``, ``gpu_features``, ``variant_order``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from model_export.quantize import CONVERTERS
from model_export.variants import PACKED, VARIANTS, tolerances, variant_order

ROOT = Path(__file__).resolve().parents[2]
# The browser's model runtime; the widgets' lessons (the size calculator's precisions) are not variants.
JS_DIRS = ["site_src/runtime"]
PY_DIRS = ["model_export", "sitebuild"]
# The same spelling for another fact: a packed chunk's encoding (compact.py, expand.js), defined once.
ALLOWED = {"Q4_ENCODING"}


def python_literals(path) -> list[tuple[int, str]]:
    """(line, value) of every string constant that is a variant's name, outside ALLOWED definitions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ALLOWED for t in node.targets)
    }
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in VARIANTS and id(n) not in allowed]


def js_literals(path) -> list[tuple[int, str]]:
    """(line, value) of every quoted variant name outside comments and ALLOWED definitions."""
    quoted = re.compile(r"([\"'`])(" + "|".join(map(re.escape, VARIANTS)) + r")\1")
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("//", 1)[0]
        if code.lstrip().startswith("*") or any(f"const {name} =" in code for name in ALLOWED):
            continue
        found += [(number, m.group(2)) for m in quoted.finditer(code)]
    return found


def test_nothing_but_variants_py_names_a_variant():
    named = []
    for folder in PY_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name != "variants.py":
                named += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in python_literals(path)]
    for folder in JS_DIRS:
        for path in sorted((ROOT / folder).rglob("*.js")):
            named += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in js_literals(path)]
    assert not named, "variant names outside model_export/variants.py:\n" + "\n".join(named)


def test_the_scans_find_a_variant_named_elsewhere(tmp_path):
    """The checks above catch what they look for (and leave the chunk encoding alone)."""
    py = tmp_path / "m.py"
    py.write_text('Q4_ENCODING = "q4"\nif name == "q8x":\n    pass\n')
    assert python_literals(py) == [(2, "q8x")]
    js = tmp_path / "m.js"
    js.write_text('export const Q4_ENCODING = "q4";\n// the "fp16" case\n * "q4x" in a doc comment\nif (v.name !== "fp16") go();\n')
    assert js_literals(js) == [(4, "fp16")]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_spec_is_consistent(name):
    spec = VARIANTS[name]
    assert spec.name == name
    assert spec.writer in {"compact", "requant", *CONVERTERS}, spec.writer
    if spec.writer == "requant":
        assert spec.built_from in VARIANTS and list(VARIANTS).index(spec.built_from) < list(VARIANTS).index(name)
        assert VARIANTS[spec.built_from].writer == "compact"
    else:
        assert spec.built_from is None
    assert spec.ranks and set(spec.ranks) <= {"webgpu", "wasm"}
    assert spec.backends[0] == min(spec.ranks, key=spec.ranks.get)
    assert not spec.gpu_features or "webgpu" in spec.ranks
    assert set(spec.tolerances) == {"trained", "random"}
    for bounds in spec.tolerances.values():  # agreements are shares, errors positive
        assert 0 < bounds.top1 <= 1 and 0 < bounds.top5 <= 1 and bounds.kl > 0 and bounds.cache_kl > 0 and bounds.ppl_ratio > 1


def test_ranks_order_every_backend_without_ties():
    for backend in ("webgpu", "wasm"):
        ranks = [spec.ranks[backend] for spec in VARIANTS.values() if backend in spec.ranks]
        assert sorted(ranks) == list(range(1, len(ranks) + 1)), (backend, ranks)
    order = variant_order(list(VARIANTS))
    assert set(order) == {"webgpu", "wasm"}
    assert variant_order(["fp16", "q4"]) == {"webgpu": ["q4", "fp16"], "wasm": ["q4"]}
    assert PACKED in VARIANTS and VARIANTS[PACKED].writer == "compact"
    assert tolerances(True)["q8"] == VARIANTS["q8"].tolerances["random"]
