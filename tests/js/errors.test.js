// Tests for what the reader reads when something fails (errors.js), the limits the runtimes
// wait by (limits.js) and the manifest check (variants.js missingManifestField).
// Run with: node --test tests/js/
// The browser side (each fault provoked for real, with its Retry) is tests/browser/test_faults.py.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  LoadError,
  deviceLostMessage,
  explain,
  fileName,
  isRetryable,
  manifestMessage,
  pythonEndedMessage,
  pythonRestartNote,
  pythonStartMessage,
  stallNotice,
  workerMessage,
} from "../../site_src/runtime/errors.js";
import { LIMITS, limits } from "../../site_src/runtime/limits.js";
import { missingManifestField } from "../../site_src/runtime/variants.js";

test("low-level errors become sentences, and say whether Retry can help", () => {
  const cases = [
    [new TypeError("Failed to fetch"), /^A file could not be downloaded: the connection failed/, true],
    [new SyntaxError("Unexpected token 'o', \"not json\" is not valid JSON"), /^A data file is damaged: it is not valid JSON\.$/, true],
    [new WebAssembly.CompileError("WebAssembly.instantiate(): expected magic word"), /^A WebAssembly file is damaged/, true],
    [
      new TypeError("Failed to fetch dynamically imported module: http://x/assets/vendor/ort/ort.wasm.min.mjs"),
      /^A script \(ort\.wasm\.min\.mjs\) could not be downloaded/,
      true,
    ],
    [new Error("HTTP 404 for http://x/models/tiny/tables/block.0.bin"), /^A file \(block\.0\.bin\) could not be downloaded \(HTTP 404\)\.$/, true],
    [new Error("The prompt is empty: type some text."), /^The prompt is empty: type some text\.$/, false],
  ];
  for (const [error, message, retryable] of cases) {
    assert.match(explain(error), message, String(error));
    assert.equal(isRetryable(error), retryable, String(error));
  }
  assert.equal(explain("Tick at least one word."), "Tick at least one word.");
  assert.equal(isRetryable("Tick at least one word."), false);
  assert.equal(explain(null), "Something went wrong.");
  // An error that says it is (not) retryable is believed.
  assert.equal(isRetryable(Object.assign(new TypeError("Failed to fetch"), { retryable: false })), false);
  assert.equal(isRetryable(new LoadError("x")), true);
});

test("Python start-up messages name the file and what is wrong with it", () => {
  assert.equal(
    pythonStartMessage({ kind: "http", file: "pyodide.asm.wasm", status: 404 }),
    "Python could not start: a runtime file (pyodide.asm.wasm) could not be downloaded (HTTP 404).",
  );
  assert.equal(
    pythonStartMessage({ kind: "damaged", file: "pyodide-lock.json", detail: "it is not valid JSON" }),
    "Python could not start: a runtime file (pyodide-lock.json) is damaged: it is not valid JSON.",
  );
  assert.match(
    pythonStartMessage({ kind: "damaged", file: "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl", detail: "x" }),
    /^Python could not start: the NumPy package \(numpy-2\.0\.2-/,
  );
  assert.match(pythonStartMessage({ kind: "http", file: "demos-0.1.0-py3-none-any.whl", status: 500 }), /the textbook's demos package/);
  assert.equal(
    pythonStartMessage({ kind: "stalled", file: "python_stdlib.zip", seconds: 30.2 }),
    "Python could not start: a runtime file (python_stdlib.zip) stopped arriving: no data for 30 s.",
  );
  assert.equal(pythonStartMessage({ kind: "timeout", seconds: 120 }), "Python could not start: it made no progress for 120 s.");
  assert.equal(pythonStartMessage({ detail: "something odd." }), "Python could not start: something odd.");
  assert.equal(workerMessage("python"), "Python could not start: its worker script (python-worker.js) could not be loaded.");
  assert.match(workerMessage("model", "Uncaught Error: boom"), /^The model stopped: its worker crashed \(Uncaught Error: boom\)\.$/);
});

test("manifest messages and the stall notice", () => {
  assert.equal(manifestMessage({ kind: "http", status: 500 }), "The model's file list (manifest.json) could not be downloaded (HTTP 500).");
  assert.equal(manifestMessage({ kind: "json" }), "The model's file list (manifest.json) is damaged: it is not valid JSON.");
  assert.equal(manifestMessage({ kind: "fields", field: "config.n_layer" }), "The model's file list (manifest.json) is incomplete: it has no config.n_layer.");
  assert.equal(stallNotice(6.7), "No data for 6 s — still waiting…");
  assert.equal(stallNotice(5.2, "pyodide.asm.wasm"), "No data for 5 s — still waiting for pyodide.asm.wasm…");
  assert.equal(stallNotice(0.34), "No data for 0.3 s — still waiting…");
  assert.equal(fileName("http://x/a/b/pyodide.asm.wasm?v=1#y"), "pyodide.asm.wasm");
  assert.equal(
    deviceLostMessage("Device was destroyed."),
    "The GPU stopped working for this page (WebGPU device lost: Device was destroyed). Retry to start the model again.",
  );
});

test("limits: defaults, and a page may lower them through TX_LIMITS", () => {
  assert.deepEqual(limits(), { ...LIMITS });
  assert.equal(LIMITS.stallNoticeMs, 5000);
  globalThis.TX_LIMITS = { stallNoticeMs: 500, unknown: 1, stallTimeoutMs: -3 };
  try {
    assert.deepEqual(limits(), { ...LIMITS, stallNoticeMs: 500 });
    assert.equal(limits({ stallNoticeMs: 200 }).stallNoticeMs, 200); // a call's own option wins
  } finally {
    delete globalThis.TX_LIMITS;
  }
});

test("missingManifestField names the first field the runtime cannot do without", () => {
  const file = { path: "q4/model.onnx", bytes: 10, sha256: "ab" };
  const good = {
    config: { n_layer: 2, n_head: 4, n_embd: 64, n_positions: 1024, vocab_size: 50257, layer_norm_epsilon: 1e-5, eos_token_id: 50256 },
    tokenizer: { vocab: { ...file, path: "vocab.json" }, merges: { ...file, path: "merges.txt" } },
    variants: [{ name: "q4", backends: ["wasm"], files: [file] }],
  };
  assert.equal(missingManifestField(good), null);
  const without = (mutate) => {
    const copy = structuredClone(good);
    mutate(copy);
    return missingManifestField(copy);
  };
  assert.equal(
    without((m) => delete m.config.n_layer),
    "config.n_layer",
  );
  assert.equal(
    without((m) => delete m.config.layer_norm_epsilon),
    "config.layer_norm_epsilon",
  );
  assert.equal(
    without((m) => (m.config.layer_norm_epsilon = "1e-5")),
    "config.layer_norm_epsilon",
  );
  assert.equal(
    without((m) => delete m.tokenizer.merges.sha256),
    "tokenizer.merges",
  );
  assert.equal(
    without((m) => (m.variants = [])),
    "variants",
  );
  assert.equal(
    without((m) => delete m.variants[0].files[0].bytes),
    "complete file list for the q4 variant",
  );
  const inspectable = (m) => (m.variants[0].inspect = { ...file, path: "q4/inspect.onnx" });
  assert.equal(without(inspectable), "probes", "an inspect graph needs the probe contract");
  assert.equal(
    without((m) => {
      inspectable(m);
      m.probes = { head_scale: { shape: ["layers", 2], neutral: 1 } };
    }),
    "probes",
  );
  assert.equal(
    without((m) => {
      inspectable(m);
      m.probes = { head_scale: { shape: ["layers", "heads", "sequence"], neutral: 1 } };
    }),
    null,
  );
  assert.equal(missingManifestField([1, 2]), "fields at all (it is not a JSON object)");
});

test("a Python that ended or was replaced says why, in the reader's units", () => {
  assert.match(pythonEndedMessage("exit(1)"), /^That code ended Python \(exit\(1\)\); Python is starting again, so every widget/);
  assert.equal(pythonRestartNote({ heapBytes: 1.5 * 1024 ** 3 }), "Python had grown to 1.5 GB of memory, so it is starting again to give it back: ");
  assert.equal(pythonRestartNote({ ms: LIMITS.pythonAnswerMs }), "Python stopped answering for 5 s, so it is starting again: ");
});
