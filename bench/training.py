"""Benchmark training in the reader's browser: `<tx-train>` in headless Chromium, on the site's own
Python worker (Pyodide, NumPy), against the same `demos.training` run in CPython on this machine.

For each task ("text", "induction") and round (``--repeat``, default 3; the tasks alternate and
their order flips from round to round) it opens the widget's embed page in a fresh tab, presses
Train with the task's default settings and ``--steps`` steps, and reads what the widget shows when
the run ends: its steps per second (time in Python calls only), the wall time from the click to
the end, and, for the induction task, the step at which the second copy's held-out loss first fell
below half its start, if it did. Between the browser rounds it runs the same settings in CPython
(`demos.training.train`) and times them. The summary gives medians with their spread; the JSON
replaces ``bench/results/training.json`` (or ``--out``).

There is no peer to run beside it: Transformers.js and the other in-browser Transformer demos run
trained models and do not train.

Usage::

    .venv/bin/python bench/training.py [--site site] [--steps 300] [--repeat 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS, ROOT, git_commit, machine, spread  # noqa: E402
from demos import training  # noqa: E402
from sitebuild.serve import make_server  # noqa: E402

TASKS = ("text", "induction")


def browser_run(context, base: str, task: str, steps: int) -> dict:
    """One run of `<tx-train>` in a fresh tab: what the widget reports at its end."""
    page = context.new_page()
    try:
        page.goto(f"{base}embed/train/?task={task}&steps={steps}")
        page.wait_for_function("() => document.querySelector('tx-train')?.dataset.state === 'ready'", timeout=180_000)
        started = time.perf_counter()
        page.locator("tx-train button.go").click()
        page.wait_for_function(
            "n => { const el = document.querySelector('tx-train'); return el.dataset.running === 'false' && el.dataset.step === String(n); }",
            arg=steps,
            timeout=900_000,
        )
        wall = time.perf_counter() - started
        el = page.locator("tx-train")
        phase = el.get_attribute("data-phase")
        return {"steps_per_second": float(el.get_attribute("data-steps-per-second")), "wall_s": wall, "phase_step": int(phase) if phase else None}
    finally:
        page.close()


def cpython_run(task: str, steps: int) -> dict:
    started = time.perf_counter()
    run = training.train(task, steps=steps)
    took = time.perf_counter() - started
    return {"steps_per_second": steps / took, "wall_s": took, "phase_step": run["phase"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "site")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "training.json")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from sitebuild.chromium import QUIET_ARGS, find_chromium, resolver_rule

    load_before = os.getloadavg()
    server = make_server(args.site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    rounds = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=[*QUIET_ARGS, resolver_rule("127.0.0.1")])
            context = browser.new_context()
            for r in range(args.repeat):
                order = TASKS if r % 2 == 0 else TASKS[::-1]
                for task in order:
                    rounds.append({"round": r, "task": task, "where": "browser", **browser_run(context, base, task, args.steps)})
                    rounds.append({"round": r, "task": task, "where": "cpython", **cpython_run(task, args.steps)})
            browser.close()
    finally:
        server.shutdown()

    summary = {}
    for task in TASKS:
        for where in ("browser", "cpython"):
            rows = [x for x in rounds if x["task"] == task and x["where"] == where]
            summary[f"{task}/{where}"] = {
                "steps_per_second": spread([x["steps_per_second"] for x in rows]),
                "wall_s": spread([x["wall_s"] for x in rows]),
                "phase_steps": [x["phase_step"] for x in rows],
            }
    report = {
        "benchmark": "bench/training.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "setup": {"steps": args.steps, "settings": {task: training.defaults(task) for task in TASKS}, "repeat": args.repeat},
        "rounds": rounds,
        "summary": summary,
        "machine": machine(load_before),
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
