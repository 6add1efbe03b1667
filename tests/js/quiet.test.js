// Tests for runtime/quiet.js: what the service worker's registration waits for.
// Run with: node --test tests/js/
// In the browser: tests/browser/test_runtime.py::test_service_worker_registers_once_the_runtime_has_started.

import assert from "node:assert/strict";
import { test } from "node:test";

globalThis.document = { readyState: "complete" }; // quiet.js asks the document whether it has loaded

const { trackStart, whenQuiet } = await import("../../site_src/runtime/quiet.js");

const QUIET = 60; // ms: short, so that the test is quick
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds from now until `promise` resolves. */
async function msUntil(promise) {
  const t0 = performance.now();
  await promise;
  return performance.now() - t0;
}

test("quiet waits for a start to settle, then for the quiet time", async () => {
  let finish;
  trackStart(
    new Promise((resolve) => {
      finish = resolve;
    }),
  );
  const quiet = msUntil(whenQuiet(QUIET));
  await sleep(150);
  finish();
  assert.ok((await quiet) >= 150 + QUIET * 0.9, "resolved before the start had settled and the page stayed quiet");
});

test("a failed start counts as settled", async () => {
  trackStart(Promise.reject(new Error("the runtime did not start")));
  const waited = await msUntil(whenQuiet(QUIET));
  assert.ok(waited >= QUIET * 0.9 && waited < 1000, `waited ${waited} ms`);
});

test("a start that begins while waiting postpones it", async () => {
  const blip = sleep(0);
  trackStart(blip);
  await blip; // the last change is now: quiet, without the next start, in QUIET * 4
  const quiet = msUntil(whenQuiet(QUIET * 4));
  await sleep(QUIET);
  trackStart(sleep(QUIET * 2));
  assert.ok((await quiet) >= QUIET * 3 + QUIET * 4 * 0.9, "a start during the wait did not postpone it");
});

test("a document still loading is not quiet", async () => {
  document.readyState = "interactive";
  const quiet = msUntil(whenQuiet(QUIET));
  await sleep(QUIET * 3);
  document.readyState = "complete";
  assert.ok((await quiet) >= QUIET * 3, "resolved while the document was loading");
});
