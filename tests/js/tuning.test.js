// Tests for the session settings (tuning.js): a benchmark's override is checked, and each
// setting reaches onnxruntime-web under the config key onnxruntime defines for it
// (onnxruntime_session_options_config_keys.h: session.disable_prepacking,
// session.intra_op.allow_spinning, session.disable_quant_qdq; onnxruntime-web flattens
// `extra` with dots). Whether a setting is *faster* is bench/browser.py's question.
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { test } from "node:test";

import { TUNING, sessionOptions, withTuning } from "../../site_src/runtime/tuning.js";

/** The `extra` options flattened the way onnxruntime-web passes them to onnxruntime. */
function configEntries(options) {
  const out = {};
  const walk = (object, prefix) => {
    for (const [key, value] of Object.entries(object || {})) {
      if (typeof value === "object") walk(value, `${prefix}${key}.`);
      else out[`${prefix}${key}`] = String(value);
    }
  };
  walk(options.extra, "");
  return out;
}

test("an override is checked field by field, and the defaults stay frozen", () => {
  assert.deepEqual(withTuning(), { ...TUNING });
  assert.equal(withTuning({ prepacking: false }).prepacking, false);
  assert.throws(() => withTuning({ prepack: false }), /Unknown tuning option "prepack"/);
  assert.throws(() => withTuning({ prepacking: "no" }), /cannot be "no"/);
  assert.throws(() => withTuning({ optimizationLevel: "max" }), /cannot be "max"/);
  assert.throws(() => withTuning({ warmupSteps: -1 }), /cannot be -1/);
  assert.ok(Object.isFrozen(TUNING));
});

test("each WASM setting becomes its onnxruntime option", () => {
  const data = [{ path: "model.onnx.data.0", data: new Uint8Array(4) }];
  const site = sessionOptions("wasm", data, [], withTuning());
  assert.deepEqual(site.executionProviders, ["wasm"]);
  assert.equal(site.externalData, data);
  assert.equal(site.graphOptimizationLevel, TUNING.optimizationLevel);

  const off = sessionOptions(
    "wasm",
    data,
    [],
    withTuning({
      prepacking: false,
      spinning: false,
      foldDequantize: true,
      fixBatch: true,
      memArena: false,
      optimizationLevel: "basic",
    }),
  );
  assert.deepEqual(configEntries(off), {
    "session.disable_prepacking": "1",
    "session.intra_op.allow_spinning": "0",
    "session.disable_quant_qdq": "1",
  });
  assert.deepEqual(off.freeDimensionOverrides, { batch_size: 1 });
  assert.equal(off.enableCpuMemArena, false);
  assert.equal(off.graphOptimizationLevel, "basic");

  const on = sessionOptions("wasm", data, [], withTuning({ prepacking: true, spinning: true, foldDequantize: false }));
  assert.deepEqual(configEntries(on), {});
});

test("on WebGPU the KV cache outputs stay on the GPU and no WASM option is sent", () => {
  const options = sessionOptions("webgpu", [], ["present.0.key", "present.0.value"], withTuning({ prepacking: false }));
  assert.deepEqual(options.preferredOutputLocation, { "present.0.key": "gpu-buffer", "present.0.value": "gpu-buffer" });
  assert.equal(options.extra, undefined);
});
