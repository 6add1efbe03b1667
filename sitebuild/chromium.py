"""Find (or install) the Chromium that the browser tests drive through Playwright.

Order: ``$CHROMIUM`` if set; a system Chromium (Debian's ``/usr/bin/chromium``);
Playwright's own download if one is installed. With ``--ensure`` and none found, it
installs Debian's ``chromium`` when running as root on Debian (registries only), or
else runs ``playwright install chromium`` (a laptop with internet).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: Flags for every headless Chromium the tests and benchmarks start: no background traffic.
QUIET_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]


def resolver_rule(*hosts: str) -> str:
    """A flag that resolves no host but `hosts`: Chromium contacts Google hosts at start-up even
    with QUIET_ARGS, and a test or benchmark must reach nothing but its own server."""
    return "--host-resolver-rules=MAP * ~NOTFOUND" + "".join(f" , EXCLUDE {host}" for host in hosts)


#: QUIET_ARGS with only 127.0.0.1 resolved: what the browser tests and the benchmarks pass.
HEADLESS_ARGS = [*QUIET_ARGS, resolver_rule("127.0.0.1")]

#: Added for a WebGPU adapter on a machine without a GPU: SwiftShader, a GPU in software.
WEBGPU_ARGS = [
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-angle=swiftshader",
    "--use-webgpu-adapter=swiftshader",
    "--enable-unsafe-swiftshader",
]


def playwright_chromium() -> str | None:
    """Path of Playwright's downloaded Chromium, if there is one."""
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            path = p.chromium.executable_path
    except Exception:  # no driver or no browser download: not an error here
        return None
    return path if path and Path(path).exists() else None


def find_chromium() -> str | None:
    """Path of a Chromium to launch, or None."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in SYSTEM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return playwright_chromium()


def install() -> None:
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if is_root and shutil.which("apt-get") and Path("/etc/debian_version").exists():
        print("Installing Debian's chromium for the browser tests (once)...", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"], check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        )
    else:
        print("Downloading Playwright's Chromium for the browser tests (once)...", flush=True)
        subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], check=True)


def main() -> int:
    path = find_chromium()
    if path is None and "--ensure" in sys.argv:
        install()
        path = find_chromium()
    if path is None:
        print("No Chromium found: set CHROMIUM=/path/to/chromium", file=sys.stderr)
        return 1
    print(f"Chromium for browser tests: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
