/**
 * Expanding a compact (`q4x`) variant: its weights arrive as 4-bit numbers in blocks of
 * 32 with one float16 scale per block, and become the float32 external-data files of an
 * ordinary fp32 graph before onnxruntime-web creates the session. The download is about
 * an eighth of fp32's; the arithmetic is fp32's (onnxruntime-web's 4-bit and 8-bit
 * matrix products are much slower than its float32 one in WebAssembly).
 *
 * The index (`expand.json`, written by `model_export/compact.py`) lists
 *   pieces:  the packed files, in order;
 *   targets: [{name, bytes}], the files the graph's external data refers to;
 *   chunks:  [{tensor, target, offset, encoding, piece, start, bytes, elements?}], each a
 *            run of one tensor's elements written at `offset` bytes into `target`:
 *            encoding "q4": `elements / 2` bytes of codes (element 2i in the low nibble of
 *            byte i) then `elements / block` little-endian float16 scales;
 *            value = (code - 8) * scale, rounded to float32;
 *            encoding "raw": `bytes` bytes copied as they are.
 * @module expand
 */

export const FORMAT = "tx-compact-1";
/** A chunk's encoding for 4-bit codes in blocks, then their float16 scales (model_export/compact.py). */
export const Q4_ENCODING = "q4";

let halfTable = null;

/** Float32 value of every float16 bit pattern (256 KB, built once). */
export function halfToFloatTable() {
  if (halfTable) return halfTable;
  halfTable = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    let value;
    if (exponent === 0)
      value = fraction * 2 ** -24; // subnormal
    else if (exponent === 31) value = fraction ? NaN : Infinity;
    else value = (1 + fraction / 1024) * 2 ** (exponent - 15);
    halfTable[h] = sign * value;
  }
  return halfTable;
}

/**
 * Check an index before trusting its numbers (it came over the network).
 * @param {object} index the parsed expand.json
 * @param {Uint8Array[]} pieces the packed files, in `index.pieces` order
 * @throws {Error} naming the first problem
 */
export function checkIndex(index, pieces) {
  if (!index || index.format !== FORMAT) throw new Error(`The weight index has format ${index && index.format}, expected ${FORMAT}.`);
  checkChunks(index, pieces);
}

/**
 * Check an index's block size, piece count and chunks (the part every compact format shares).
 * @param {object} index the parsed index
 * @param {Uint8Array[]} pieces the packed files, in `index.pieces` order
 * @throws {Error} naming the first problem
 */
export function checkChunks(index, pieces) {
  const { block } = index;
  if (!Number.isInteger(block) || block < 2 || block % 2) throw new Error(`The weight index has a bad block size ${block}.`);
  if (pieces.length !== index.pieces.length) throw new Error(`The weight index names ${index.pieces.length} packed files; ${pieces.length} arrived.`);
  for (const chunk of index.chunks) {
    const where = `chunk of ${chunk.tensor}`;
    const piece = pieces[chunk.piece];
    const target = index.targets[chunk.target];
    if (!piece || !target) throw new Error(`The ${where} refers to a missing file.`);
    if (chunk.start + chunk.bytes > piece.byteLength) throw new Error(`The ${where} runs past the end of ${index.pieces[chunk.piece]}.`);
    const length = chunk.encoding === Q4_ENCODING ? chunk.elements * 4 : chunk.bytes;
    if (chunk.encoding === Q4_ENCODING) {
      if (chunk.elements % block || chunk.bytes !== chunk.elements / 2 + (chunk.elements / block) * 2) {
        throw new Error(`The ${where} has ${chunk.bytes} bytes for ${chunk.elements} elements.`);
      }
      if (chunk.offset % 4) throw new Error(`The ${where} is not aligned to 4 bytes.`);
    } else if (chunk.encoding !== "raw") {
      throw new Error(`The ${where} has an unknown encoding "${chunk.encoding}".`);
    }
    if (chunk.offset + length > target.bytes) throw new Error(`The ${where} runs past the end of ${target.name}.`);
  }
}

/**
 * Expand blocks of a q4 chunk into `out` (a Float32Array, filled from index 0).
 * @param {Uint8Array} source the chunk's bytes: codes, then float16 scales
 * @param {number} elements the chunk's element count
 * @param {number} block elements per block
 * @param {Float32Array} out receives `count * block` values
 * @param {number} [first=0] first block to expand
 * @param {number} [count=elements / block] blocks to expand
 */
export function expandQ4(source, elements, block, out, first = 0, count = elements / block) {
  const table = halfToFloatTable();
  const half = block / 2;
  const scales = elements / 2; // byte offset of the float16 scales
  let o = 0;
  for (let b = first; b < first + count; b++) {
    const scale = table[source[scales + 2 * b] | (source[scales + 2 * b + 1] << 8)];
    for (let i = 0, c = b * half; i < half; i++, c++) {
      const byte = source[c];
      out[o++] = ((byte & 15) - 8) * scale;
      out[o++] = ((byte >> 4) - 8) * scale;
    }
  }
}

/**
 * Build the float32 external-data files from the packed pieces.
 * @param {object} index the parsed expand.json
 * @param {Uint8Array[]} pieces the packed files, in `index.pieces` order
 * @param {(done: number, total: number) => void} [onProgress] bytes written so far
 * @returns {Map<string, Uint8Array>} target name -> bytes (what `externalData` needs)
 */
export function expandWeights(index, pieces, onProgress = () => {}) {
  checkIndex(index, pieces);
  const targets = new Map(index.targets.map((t) => [t.name, new Uint8Array(t.bytes)]));
  const total = index.targets.reduce((sum, t) => sum + t.bytes, 0);
  let done = 0;
  for (const chunk of index.chunks) {
    const piece = pieces[chunk.piece];
    const source = piece.subarray(chunk.start, chunk.start + chunk.bytes);
    const target = targets.get(index.targets[chunk.target].name);
    if (chunk.encoding === Q4_ENCODING) {
      expandQ4(source, chunk.elements, index.block, new Float32Array(target.buffer, target.byteOffset + chunk.offset, chunk.elements));
      done += chunk.elements * 4;
    } else {
      target.set(source, chunk.offset);
      done += chunk.bytes;
    }
    onProgress(done, total);
  }
  return targets;
}
