/**
 * Building a `q8x` variant's int8 weights from the `q4x` pieces (`model_export/requant.py`
 * has the why and the format). Per scale group:
 *
 *   value = (code4 - 8) * blockScale                       float32
 *   scale = max |value| over the group / 127               float32 (0: an all-zero group)
 *   code8 = roundHalfEven(value / scale), in [-127, 127]   (0 where scale is 0)
 *
 * Each line is one float32 operation, done here in double precision and rounded with
 * `Math.fround`: the product of a small integer and a float32 is exact in a double, and
 * rounding a double quotient of two float32 numbers to float32 gives the correctly
 * rounded float32 quotient, so the bytes equal NumPy's.
 *
 * A group shares one scale: the whole matrix (`per: "matrix"`) or one row (`per: "row"`).
 * @module requant
 */

import { checkChunks, halfToFloatTable } from "./expand.js";

export const REQUANT_FORMAT = "tx-requant-1";
const QMAX = 127;

/** Check a `tx-requant-1` index against its pieces (raw chunks as in q4x, then the matrices). */
export function checkRequantIndex(index, pieces) {
  if (!index || index.format !== REQUANT_FORMAT) throw new Error(`The weight index has format ${index && index.format}, expected ${REQUANT_FORMAT}.`);
  checkChunks(index, pieces);
  for (const m of index.matrices || []) {
    const elements = m.parts.reduce((sum, p) => sum + p.elements, 0);
    if (
      !Number.isInteger(m.rows) ||
      !Number.isInteger(m.cols) ||
      elements !== m.rows * m.cols ||
      m.cols % index.block ||
      (m.per !== "matrix" && m.per !== "row")
    ) {
      throw new Error(`The int8 matrix ${m.tensor} does not match its 4-bit parts.`);
    }
    for (const p of m.parts) {
      if (!pieces[p.piece] || p.start + p.bytes > pieces[p.piece].byteLength || p.bytes !== p.elements / 2 + (p.elements / index.block) * 2) {
        throw new Error(`A 4-bit part of ${m.tensor} runs past the end of its file.`);
      }
    }
    for (const [where, bytes] of [
      [m.values, m.rows * m.cols],
      [m.scales, 4 * scaleCount(m)],
    ]) {
      const target = index.targets[where[0]];
      if (!target || where[1] + bytes > target.bytes) throw new Error(`The int8 matrix ${m.tensor} runs past the end of its file.`);
    }
    if (m.scales[1] % 4) throw new Error(`The scales of ${m.tensor} are not aligned to 4 bytes.`);
  }
}

/** How many scales a matrix has: one, or one per row. */
export function scaleCount(m) {
  return m.per === "row" ? m.rows : 1;
}

/**
 * Call `visit(source, codeStart, bits, group)` for every 4-bit block of a matrix, in element
 * order: the part's bytes, the byte offset of the block's codes, the float16 bits of its scale
 * and the scale group it belongs to (its row, or 0 for a whole-matrix scale).
 */
function eachBlock(m, pieces, block, visit) {
  const perRow = m.per === "row";
  let first = 0; // the block's first element in the matrix
  for (const p of m.parts) {
    const source = pieces[p.piece].subarray(p.start, p.start + p.bytes);
    const scaleAt = p.elements / 2;
    for (let b = 0; b < p.elements / block; b++, first += block) {
      visit(source, (b * block) / 2, source[scaleAt + 2 * b] | (source[scaleAt + 2 * b + 1] << 8), perRow ? (first / m.cols) | 0 : 0);
    }
  }
}

/** roundHalfEven(fround(value / scale)) clamped to the int8 range; 0 for a zero scale. */
function code8(value, scale) {
  if (scale === 0) return 0;
  const q = Math.fround(value / scale);
  let r = Math.round(q);
  if (r - q === 0.5 && (r & 1) !== 0) r -= 1; // Math.round rounds halves up; NumPy to even
  return r > QMAX ? QMAX : r < -QMAX ? -QMAX : r;
}

let largestDeviation = null;

/** max(|low nibble - 8|, |high nibble - 8|) of every byte (256 entries, built once). */
function deviationTable() {
  if (largestDeviation) return largestDeviation;
  largestDeviation = new Uint8Array(256);
  for (let byte = 0; byte < 256; byte++) largestDeviation[byte] = Math.max(Math.abs((byte & 15) - 8), Math.abs((byte >> 4) - 8));
  return largestDeviation;
}

/**
 * The int8 codes and scales of one matrix. Every block lies in one scale group, so its 16
 * possible codes are computed once per block, and, where the group is the whole matrix, once
 * per distinct float16 block scale; the block is then written by table lookup.
 * @param {object} m the matrix entry (`rows`, `cols`, `per`, `parts`)
 * @param {Uint8Array[]} pieces the q4x pieces
 * @param {number} block elements per 4-bit block
 * @param {Int8Array} codes receives rows * cols codes
 * @param {Float32Array} scales receives `scaleCount(m)` scales
 */
export function requantizeMatrix(m, pieces, block, codes, scales) {
  const half = block / 2;
  const float = halfToFloatTable();
  const deviation = deviationTable();
  const maxima = new Float64Array(scales.length); // exact: |code - 8| * |block scale|
  eachBlock(m, pieces, block, (source, c, bits, group) => {
    let top = 0;
    for (let i = c; i < c + half && top < 8; i++) if (deviation[source[i]] > top) top = deviation[source[i]];
    const magnitude = top * Math.abs(float[bits]);
    if (magnitude > maxima[group]) maxima[group] = magnitude;
  });
  for (let i = 0; i < maxima.length; i++) scales[i] = Math.fround(Math.fround(maxima[i]) / QMAX);
  const perMatrix = m.per !== "row";
  const tables = new Int8Array(perMatrix ? 65536 * 16 : 16); // per float16 scale: its 16 codes
  const known = new Uint8Array(65536);
  let o = 0; // the next code to write
  for (const p of m.parts) {
    // a plain loop: this one runs for every weight
    const source = pieces[p.piece].subarray(p.start, p.start + p.bytes);
    const scaleAt = p.elements / 2;
    for (let b = 0, c = 0; b < p.elements / block; b++, c += half) {
      const bits = source[scaleAt + 2 * b] | (source[scaleAt + 2 * b + 1] << 8);
      const at = perMatrix ? bits * 16 : 0;
      if (!perMatrix || !known[bits]) {
        const group = perMatrix ? 0 : (o / m.cols) | 0;
        for (let k = 0; k < 16; k++) tables[at + k] = code8(Math.fround((k - 8) * float[bits]), scales[group]);
        known[bits] = 1;
      }
      for (let i = c; i < c + half; i++) {
        const byte = source[i];
        codes[o] = tables[at + (byte & 15)];
        codes[o + 1] = tables[at + (byte >> 4)];
        o += 2;
      }
    }
  }
}

/**
 * Build a q8x variant's external-data files from the q4x pieces.
 * @param {object} index the parsed expand.json (`tx-requant-1`)
 * @param {Uint8Array[]} pieces the q4x packed files, in `index.pieces` order
 * @param {(done: number, total: number) => void} [onProgress] bytes written so far
 * @returns {Map<string, Uint8Array>} target name -> bytes (what `externalData` needs)
 */
export function requantWeights(index, pieces, onProgress = () => {}) {
  checkRequantIndex(index, pieces);
  const targets = new Map(index.targets.map((t) => [t.name, new Uint8Array(t.bytes)]));
  const at = ([target, offset]) => {
    const bytes = targets.get(index.targets[target].name);
    return { buffer: bytes.buffer, offset: bytes.byteOffset + offset };
  };
  const total = index.targets.reduce((sum, t) => sum + t.bytes, 0);
  let done = 0;
  for (const chunk of index.chunks) {
    targets.get(index.targets[chunk.target].name).set(pieces[chunk.piece].subarray(chunk.start, chunk.start + chunk.bytes), chunk.offset);
    done += chunk.bytes;
  }
  onProgress(done, total);
  for (const m of index.matrices) {
    const groups = scaleCount(m);
    const values = at(m.values);
    const scales = at(m.scales);
    requantizeMatrix(
      m,
      pieces,
      index.block,
      new Int8Array(values.buffer, values.offset, m.rows * m.cols),
      new Float32Array(scales.buffer, scales.offset, groups),
    );
    done += m.rows * m.cols + 4 * groups;
    onProgress(done, total);
  }
  return targets;
}
