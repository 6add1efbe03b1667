// Run test files of the demos package inside Pyodide (in Node), against the very
// Pyodide, NumPy and demos wheel that the built site serves to readers.
//
// usage: node tests/pyodide/run.mjs SITE_PYODIDE_DIR WHEELS_DIR TEST_FILE... [-- PYTEST_ARGS...]
//   SITE_PYODIDE_DIR  site/assets/vendor/pyodide (pyodide.mjs, lock file, numpy + demos wheels)
//   WHEELS_DIR        pure-Python wheels of pytest and its dependencies (tests/pyodide/requirements.txt)
//   TEST_FILE         paths under tests/ (the folder is mounted read-only at /repo/tests)
// Exits with pytest's exit code.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelsDir, ...rest] = process.argv.slice(2);
const split = rest.indexOf("--");
const testFiles = split < 0 ? rest : rest.slice(0, split);
const pytestArgs = split < 0 ? [] : rest.slice(split + 1);
if (!pyodideDir || !wheelsDir || testFiles.length === 0) {
  console.error("usage: node tests/pyodide/run.mjs SITE_PYODIDE_DIR WHEELS_DIR TEST_FILE... [-- PYTEST_ARGS...]");
  process.exit(2);
}
const testsDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

// The runtime comes from npm's identical copy (the site's folder sits under this repo's
// "type": "module" package.json, which makes Node misread pyodide.asm.js); the lock file
// and the wheels (NumPy, demos) come from the built site.
const runtimeDir = path.resolve(testsDir, "..", "node_modules", "pyodide") + "/";
const { loadPyodide } = await import(pathToFileURL(runtimeDir + "pyodide.mjs").href);
const pyodide = await loadPyodide({
  indexURL: runtimeDir,
  lockFileURL: path.resolve(pyodideDir, "pyodide-lock.json"),
  packageCacheDir: path.resolve(pyodideDir) + "/",
});
await pyodide.loadPackage("demos", { messageCallback: () => {} });

const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
for (const name of readdirSync(wheelsDir).filter((f) => f.endsWith(".whl"))) {
  pyodide.unpackArchive(new Uint8Array(readFileSync(path.join(wheelsDir, name))), "zip", { extractDir: sitePackages });
}

pyodide.FS.mkdirTree("/repo/tests");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: testsDir }, "/repo/tests");
pyodide.globals.set(
  "test_args",
  pyodide.toPy([
    ...testFiles.map((f) => "/repo/tests/" + path.relative(testsDir, path.resolve(f))),
    "-p",
    "no:cacheprovider",
    "-p",
    "no:faulthandler",
    "--capture=sys",
    "--rootdir=/repo",
    "-o",
    "addopts=",
    ...pytestArgs,
  ]),
);
const code = pyodide.runPython(`
import os, sys, pytest
os.chdir("/repo")
sys.dont_write_bytecode = True
import numpy, demos
print(f"Pyodide {sys.version.split()[0]} ({sys.platform}), NumPy {numpy.__version__}, demos from {os.path.dirname(demos.__file__)}")
int(pytest.main(list(test_args)))
`);
process.exit(code);
