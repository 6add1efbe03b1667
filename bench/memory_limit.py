"""The lowest memory limit at which the default model still loads and generates.

For each limit (largest first) a child process is started inside a cgroup (v1 memory
controller, Linux, root) with that limit for everything it starts: the local server, the
Playwright driver and headless Chromium. The child loads the site's default WASM variant
through the site's runtime (``model.js``) in a fresh profile and generates 16 greedy tokens.
A limit passes when that finishes; it fails when the kernel kills a process for memory or the
tab crashes. The JSON records each limit's outcome and the cgroup's peak usage
(``memory.max_usage_in_bytes``), and replaces ``bench/results/memory-limit.json``.

usage: python bench/memory_limit.py --model build/models/small-random [--site site]
           [--limits 2.0,1.8,1.6,1.4] [--out bench/results/memory-limit.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import BROWSER_ARGS, git_commit, machine

ROOT = Path(__file__).resolve().parent.parent


CGROUP_ROOT = Path("/sys/fs/cgroup/memory")
NEW_TOKENS = 16

CHILD_JS = """async ([model, newTokens]) => {
  const { loadModel } = await import('./assets/tx/runtime/model.js');
  const m = await loadModel({ model, backend: 'wasm' });
  const run = m.generate('The Transformer reads a sequence of tokens', { maxNewTokens: newTokens, temperature: 0, stopAtEos: false });
  for await (const token of run) { /* drain */ }
  const res = await run.result;
  return { variant: m.info.variant, newTokens: res.newTokens, tokensPerSecond: res.tokensPerSecond };
}"""


def child(model_dir: Path, site: Path) -> int:
    """Runs inside the cgroup: serve, load, generate; prints one JSON line."""
    from playwright.sync_api import sync_playwright

    from browser import serve_dir  # bench/browser.py: the site's runtime beside the model
    from sitebuild.chromium import find_chromium
    from sitebuild.serve import serve_in_thread

    manifest = json.loads((model_dir / "manifest.json").read_text())
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as work:
        root = serve_dir(site, model_dir, manifest, Path(work), set())
        server, url = serve_in_thread(root)
        try:
            with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
                context = p.chromium.launch_persistent_context(profile, executable_path=find_chromium(), headless=True, args=BROWSER_ARGS)
                page = context.new_page()
                crashed = []
                page.on("crash", lambda *_: crashed.append(True))
                page.goto(url + "index.html")
                try:
                    out = page.evaluate(CHILD_JS, [manifest["name"], NEW_TOKENS])
                except Exception as err:  # the tab crashed or the worker died
                    out = {"error": str(err).split("\n")[0][:300], "crashed": bool(crashed)}
                context.close()
        finally:
            server.shutdown()
    print(json.dumps(out), flush=True)
    return 0 if "error" not in out else 1


def run_limited(limit_gb: float, model_dir: Path, site: Path, timeout: int) -> dict:
    group = CGROUP_ROOT / f"tx-bench-{os.getpid()}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(int(limit_gb * 1e9)))
        try:
            (group / "memory.memsw.limit_in_bytes").write_text(str(int(limit_gb * 1e9)))  # no swap beyond it
        except OSError:
            pass
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, __file__, "--child", "--model", str(model_dir), "--site", str(site)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())),
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": (stderr.strip().splitlines() or ["no output"])[-1][:300]}
        oom = int(next((line.split()[1] for line in (group / "memory.oom_control").read_text().splitlines() if line.startswith("oom_kill ")), "0"))
        return {
            "limit_gb": limit_gb,
            "ok": "error" not in result and result.get("newTokens") == NEW_TOKENS,
            "result": result,
            "exit": process.returncode,
            "oom_kills": oom,
            "seconds": round(time.perf_counter() - started, 1),
            "peak_usage_mb": round(int((group / "memory.max_usage_in_bytes").read_text()) / 1e6),
        }
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
        time.sleep(0.5)
        group.rmdir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--limits", default="2.0,1.8,1.6,1.4,1.2")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "memory-limit.json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.model, args.site)
    if not (CGROUP_ROOT / "memory.limit_in_bytes").exists():
        ap.error(f"needs the cgroup v1 memory controller at {CGROUP_ROOT} (Linux, root)")
    load_before = os.getloadavg()
    rows = []
    for limit in (float(x) for x in args.limits.split(",")):
        rows.append(run_limited(limit, args.model, args.site, args.timeout))
        print(json.dumps(rows[-1]), flush=True)
    passing = [r["limit_gb"] for r in rows if r["ok"]]
    report = {
        "benchmark": "bench/memory_limit.py",
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": args.model.name,
        "new_tokens": NEW_TOKENS,
        "machine": machine(load_before),
        "limits": rows,
        "summary": {
            "lowest_passing_limit_gb": min(passing) if passing else None,
            "highest_failing_limit_gb": max((r["limit_gb"] for r in rows if not r["ok"]), default=None),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"]))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
