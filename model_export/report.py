"""``report.json`` and ``report.md``: what was built, how close it is to PyTorch, how fast it runs.

``report.json`` gathers the build record's numbers (sizes, validation rows and metrics, times,
speeds) in one place for tools; ``report.md`` shows them as tables for people, and the site's
"How this model was exported" page includes it.
"""

from __future__ import annotations

from pathlib import Path

from . import package
from .validate import CheckResult, bound_text, format_value
from .variants import VARIANTS

REPORT_JSON = "report.json"
REPORT_MD = "report.md"


def summarize(record: dict, manifest: dict | None) -> dict:
    """The report's data, from the build record and the manifest."""
    validation = record.get("validation", {})
    rows = validation.get("rows", [])
    speed = record.get("speed", {}).get("variants", {})
    variants = [
        {
            "name": "fp32",
            "dtype": "float32",
            "backends": [],
            "shipped": False,
            "bytes": record["reference"]["bytes"],
            "files": 1,
            "largest_file": record["reference"]["bytes"],
            "seconds": record["reference"]["export_s"],
            "validation": {},
            "speed": speed.get("fp32"),
        }
    ]
    for name, info in record.get("variants", {}).items():
        spec = VARIANTS[name]
        variants.append(
            {
                "name": name,
                "dtype": spec.dtype,
                "backends": list(spec.backends),
                "shipped": True,
                "bytes": info["bytes"],
                "files": info["files"],
                "largest_file": info["largest_file"],
                "seconds": info["quantize_s"],
                "validation": validation.get("metrics", {}).get(name, {}),
                "speed": speed.get(name),
            }
        )
    return {
        "name": record["name"],
        "source": record["source"],
        "seed": record.get("seed"),
        "random_weights": record["random_weights"],
        "weights": record.get("weights"),
        "config": record["config"],
        "variants": variants,
        "default_variants": (manifest or {}).get("default_variants", {}),
        "validation": {
            "rows": rows,
            "passed": bool(rows) and all(r["passed"] for r in rows),
            "failed": [r["name"] for r in rows if not r["passed"]],
            "seconds": validation.get("seconds"),
        },
        "timings": {
            "export_s": record["reference"]["export_s"],
            "quantize_s": {n: v["quantize_s"] for n, v in record.get("variants", {}).items()},
            "validate_s": validation.get("seconds"),
        },
        "speed": {k: v for k, v in record.get("speed", {}).items() if k != "variants"},
        "attention_cost": record.get("attention_cost"),
        "created_with": (manifest or {}).get("created_with", {}),
    }


def _mb(n_bytes: int | None) -> str:
    return "" if n_bytes is None else f"{n_bytes / 1e6:.1f}"


def _num(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"] + [
        "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows
    ]


def render_markdown(report: dict) -> str:
    """``report.md``: Markdown with second-level headings (the page supplies the title)."""
    config = report["config"]
    lines = []
    weights = weights_text(report)
    lines += [
        f"**Model** `{report['name']}` from `{report['source']}`, {weights}: "
        f"{config['n_layer']} layers, {config['n_head']} heads, width {config['n_embd']}, "
        f"{config['n_positions']} positions, vocabulary {config['vocab_size']}.",
        "",
    ]
    if report["created_with"]:
        lines += ["Built with " + ", ".join(f"{k} {v}" for k, v in report["created_with"].items()) + ".", ""]

    lines += ["## Variants", ""]
    speed = report["speed"]
    header = ["variant", "weights", "runs on", "MB", "files", "largest file MB", "KL vs fp32", "top-1", "top-5", "perplexity ratio", "CPU tok/s", "made in s"]
    rows = []
    for v in report["variants"]:
        m = v["validation"]
        tok = v["speed"]["tok_per_s"] if v.get("speed") else None
        label = v["name"] if v["shipped"] else f"{v['name']} (reference, not shipped)"
        rows.append(
            [
                label,
                v["dtype"],
                ", ".join(v["backends"]) or "Python only",
                _mb(v["bytes"]),
                str(v["files"]),
                _mb(v["largest_file"]),
                _num(m.get("kl")),
                _num(m.get("top1")),
                _num(m.get("top5")),
                _num(m.get("ppl_ratio"), 4),
                _num(tok),
                _num(v["seconds"]),
            ]
        )
    lines += _table(header, rows, "lllrrrrrrrrr") + [""]
    if speed:
        threads = speed.get("threads") or "ONNX Runtime's default number of"
        lines += [
            f"CPU tok/s: ONNX Runtime in Python on the build machine, {threads} threads, greedy decoding of "
            f"{speed['new_tokens']} tokens after a {speed['prompt']}-token prompt with the KV cache, median of "
            f"{speed['runs']} runs. "
            "KL, top-1, top-5 and perplexity ratio compare each variant's next-token distributions with the fp32 "
            "graph's on a text shipped with the exporter (teacher-forced)."
            + (
                " With random weights the distributions are nearly flat: top-1 agreement is low even for a "
                "faithful variant and the perplexity is close to the vocabulary size."
                if report["random_weights"]
                else ""
            ),
            "",
        ]
    if report["default_variants"]:
        lines += ["Default variant per backend: " + ", ".join(f"{backend} → {name}" for backend, name in report["default_variants"].items()) + ".", ""]

    validation = report["validation"]
    lines += ["## Validation", ""]
    if validation["rows"]:
        verdict = "all checks passed" if validation["passed"] else f"{len(validation['failed'])} check(s) FAILED"
        lines += [f"{len(validation['rows'])} checks, {verdict}.", ""]
        table = []
        for row in validation["rows"]:
            r = CheckResult.from_dict(row)
            table.append([r.name, format_value(r.measured), bound_text(r), "ok" if r.passed else "**FAIL**"])
        lines += _table(["check", "measured", "bound", "result"], table, "lrrl") + [""]
    else:
        lines += ["Validation was not run.", ""]

    timings = report["timings"]
    lines += ["## Times", ""]
    rows = [["export of the fp32 graph", _num(timings["export_s"])]]
    rows += [[f"{name}: conversion", _num(s)] for name, s in timings["quantize_s"].items()]
    if timings["validate_s"] is not None:
        rows.append(["validation", _num(timings["validate_s"])])
    lines += _table(["step", "seconds"], rows, "lr") + [""]

    cost = report.get("attention_cost")
    if cost:
        lines += render_attention_cost(cost)
    return "\n".join(lines).rstrip() + "\n"


def weights_text(report: dict) -> str:
    """``trained weights``, ``random weights (seed 0)`` for a preset, or why a checkpoint's
    weights count as random (``validate.weights_verdict``)."""
    if not report["random_weights"]:
        return "trained weights"
    if report["seed"] is not None:
        return f"random weights (seed {report['seed']})"
    share = (report.get("weights") or {}).get("share")
    measured = f", mean next-token entropy {share:.2%} of the uniform distribution's" if share is not None else ""
    return f"random weights (nearly flat next-token distributions{measured})"


def render_attention_cost(cost: dict) -> list[str]:
    """The attention-output cost table: one row per case, one column per way of running."""
    configs = cost["configs"]
    lines = ["## What the attention and hidden-state outputs cost", ""]
    header = ["forward pass", *[f"{c} (ms)" for c in configs], "full/plain", "fused/plain"]
    rows = []
    for row in cost["rows"]:
        case = f"prompt of {row['tokens']}" if row["case"] == "prefill" else f"1 token after {row['past']}"
        plain = row["plain"]
        rows.append([case, *[_num(row[c], 4) for c in configs], f"{row['full, fetch all'] / plain:.2f}", f"{row['fused'] / plain:.2f}"])
    lines += _table(header, rows, "l" + "r" * (len(header) - 1)) + [""]
    fusions = ", ".join(f"{k} × {v}" for k, v in cost["fusions"].items()) or "none"
    lines += [
        f"CPU time of one thread per forward pass, minimum of {cost['repeats']} runs "
        f"(fewer for the longest prompts). Fusions applied to the fused graph: {fusions}. "
        "The attention probabilities of one forward pass take "
        + ", ".join(f"{int(n):,} tokens: {b / 1e6:.1f} MB" for n, b in cost["attention_bytes"].items())
        + " when fetched. Every variant of this build is one graph with these outputs: generation that does "
        'not fetch them runs as in the column "full, fetch logits+present".',
        "",
    ]
    return lines


def write_reports(root: str | Path, record: dict, manifest: dict | None) -> dict:
    """Writes ``report.json`` and ``report.md`` into the build directory; returns the report."""
    root = Path(root)
    report = summarize(record, manifest)
    package.write_json(root / REPORT_JSON, report)
    (root / REPORT_MD).write_text(render_markdown(report), encoding="utf-8")
    return report
