// Tests for reading single tensors of a compact (q4x) variant: expand.js's block ranges and
// packed-weights.js's element ranges over a tensor split into chunks (no network: the
// chunks' bytes are given directly).
// Run with: node --test tests/js/

import assert from "node:assert/strict";
import { test } from "node:test";

import { expandQ4 } from "../../site_src/runtime/expand.js";
import { PackedVariant } from "../../site_src/runtime/packed-weights.js";

const BLOCK = 4;

/** A q4 chunk of `blocks` blocks: codes 0..15 cycling, scale 2^-b for block b (exact in float16). */
function q4Chunk(blocks, salt = 0) {
  const elements = blocks * BLOCK;
  const bytes = new Uint8Array(elements / 2 + blocks * 2);
  for (let i = 0; i < elements / 2; i++) bytes[i] = ((2 * i + salt) % 16) | (((2 * i + 1 + salt) % 16) << 4);
  for (let b = 0; b < blocks; b++) {
    const half = (15 - b) << 10; // float16 2^-b
    bytes[elements / 2 + 2 * b] = half & 0xff;
    bytes[elements / 2 + 2 * b + 1] = half >> 8;
  }
  return { bytes, elements };
}

test("a range of blocks expands to the same values as the whole chunk", () => {
  const { bytes, elements } = q4Chunk(5);
  const all = new Float32Array(elements);
  expandQ4(bytes, elements, BLOCK, all);
  assert.equal(all[0], -8); // code 0, scale 1
  assert.equal(all[BLOCK + 1], (((BLOCK * 1 + 1) % 16) - 8) / 2);
  const part = new Float32Array(2 * BLOCK);
  expandQ4(bytes, elements, BLOCK, part, 2, 2);
  assert.deepEqual(part, all.subarray(2 * BLOCK, 4 * BLOCK));
});

test("element ranges cross chunk boundaries, q4 and raw alike", () => {
  const a = q4Chunk(3),
    b = q4Chunk(2, 5);
  const raw = new Float32Array([1.5, -2.25, 3, 4.125, 5, 6]);
  const index = {
    format: "tx-compact-1",
    block: BLOCK,
    pieces: ["packed.0"],
    targets: [{ name: "t", bytes: 1000 }],
    chunks: [
      { tensor: "w", target: 0, offset: 0, encoding: "q4", elements: a.elements, piece: 0, start: 0, bytes: a.bytes.length },
      { tensor: "w", target: 0, offset: a.elements * 4, encoding: "q4", elements: b.elements, piece: 0, start: 100, bytes: b.bytes.length },
      { tensor: "v", target: 0, offset: 400, encoding: "raw", piece: 0, start: 200, bytes: 8 },
      { tensor: "v", target: 0, offset: 408, encoding: "raw", piece: 0, start: 300, bytes: 16 },
    ],
  };
  const packed = new PackedVariant("http://x/manifest.json", index, [{ path: "q4x/packed.0", bytes: 400, sha256: "" }]);
  const [cw0, cw1, cv0, cv1] = index.chunks;
  const bytes = new Map([
    [cw0, a.bytes],
    [cw1, b.bytes],
    [cv0, new Uint8Array(raw.buffer.slice(0, 8))],
    [cv1, new Uint8Array(raw.buffer.slice(8))],
  ]);
  assert.equal(packed.size("w"), 20);
  assert.equal(packed.size("v"), 6);
  const whole = new Float32Array(20);
  expandQ4(a.bytes, a.elements, BLOCK, whole.subarray(0, 12));
  expandQ4(b.bytes, b.elements, BLOCK, whole.subarray(12));
  assert.deepEqual(packed.expand(bytes, "w", 0, 20), whole);
  assert.deepEqual(packed.expand(bytes, "w", 8, 8), whole.subarray(8, 16)); // rows 2 and 3 of a (5, 4) matrix
  assert.deepEqual(packed.expand(bytes, "v", 1, 4), raw.subarray(1, 5));
  assert.throws(() => packed.expand(bytes, "w", 2, 4), /blocks/);
  assert.throws(() => packed.size("nope"), /no tensor nope/);
});
