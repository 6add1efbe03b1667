"""The site builds with `mkdocs build --strict` and serves only its own files."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_strict_build_is_clean(tmp_path):
    out = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                            cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's end-of-life banner
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    for required in ["assets/vendor/pyodide/pyodide.mjs", "assets/vendor/ort/ort.webgpu.min.mjs",
                     "assets/vendor/ort/ort-wasm-simd-threaded.asyncify.wasm", "assets/vendor/katex/katex.min.js",
                     "assets/tx/widgets/index.js", "models/index.json"]:
        assert (out / required).is_file(), required
    # Pages load scripts, styles and fonts only from their own origin.
    loaded = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(https?:)?//[^"]+"')
    for page in out.rglob("*.html"):
        html = page.read_text()
        external = [m.group(0) for m in loaded.finditer(html) if 'rel="canonical"' not in m.group(0)]
        assert not external, (page, external)
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html
