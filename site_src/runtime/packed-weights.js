/**
 * Reading single tensors of a compact (`q4x`) variant on the page, from the same files the
 * model worker downloads: `download.js` verifies them against the manifest's sha256 and
 * keeps them in Cache Storage, so a read after the model has loaded costs no network. Only
 * the elements asked for are expanded (with `expand.js`, to the float32 values the worker
 * gives onnxruntime-web); each packed file is let go as soon as the chunks asked for are
 * copied out of it.
 *
 *   const packed = await openPacked(manifestUrl, "q4x");
 *   const [w, row5] = await packed.read(["val_97", "lm_head.weight"],
 *     (view) => [view.tensor("val_97"), view.range("lm_head.weight", 5 * 64, 64)]); // row 5 of a (V, 64) table
 *
 * @module packed-weights
 */
import { fetchVerified } from "./download.js";
import { notSavedOfflineMessage } from "./errors.js";
import { Q4_ENCODING, checkIndex, expandQ4 } from "./expand.js";
import { keepModelFiles, notSavedOffline } from "./offline-use.js";
import { variantFiles } from "./variants.js";

const opened = new Map();

/** `err`, or the offline sentence when the file is not stored and the network is gone. */
async function explainOffline(err, manifestUrl) {
  if (err?.kind !== "network" || !(await notSavedOffline(manifestUrl, err))) return err;
  const offline = new Error(notSavedOfflineMessage("figure"));
  offline.kind = "offline";
  offline.retryable = true;
  return offline;
}

/**
 * The packed variant `variantName` of the model whose manifest is at `manifestUrl` (memoised).
 * @returns {Promise<PackedVariant>}
 */
export function openPacked(manifestUrl, variantName) {
  const key = `${manifestUrl}|${variantName}`;
  if (!opened.has(key)) {
    const promise = (async () => {
      const response = await fetch(manifestUrl, { cache: "no-cache" });
      if (!response.ok) throw new Error(`HTTP ${response.status} for ${manifestUrl}`);
      const manifest = await response.json();
      const variant = (manifest.variants || []).find((v) => v.name === variantName);
      if (!variant) throw new Error(`The model has no ${variantName} variant to read the weights from.`);
      const { index, packed } = variantFiles(variant);
      if (!index) throw new Error(`The ${variantName} variant has no weight index.`);
      keepModelFiles(manifestUrl, [index, ...packed]); // the figures read these: keep them for offline reading
      const { files } = await fetchVerified([index], { baseUrl: manifestUrl });
      const parsed = JSON.parse(new TextDecoder().decode(files.get(index.path)));
      checkIndex(
        parsed,
        packed.map((f) => ({ byteLength: f.bytes })),
      ); // checkIndex reads only their lengths
      // Variants built from these same packed files (q8x from q4x's): a model running one of
      // them downloaded exactly these bytes.
      const paths = new Set(packed.map((f) => f.path));
      const sharedBy = (manifest.variants || []).filter((v) => v.files.filter((f) => paths.has(f.path)).length === paths.size).map((v) => v.name);
      return new PackedVariant(manifestUrl, parsed, packed, sharedBy);
    })().catch(async (err) => {
      throw await explainOffline(err, manifestUrl);
    });
    promise.catch(() => opened.delete(key));
    opened.set(key, promise);
  }
  return opened.get(key);
}

/** The chunks of one tensor, each with `first`, its first element in the tensor. */
function chunksByTensor(index) {
  const out = new Map();
  for (const chunk of index.chunks) {
    if (!out.has(chunk.tensor)) out.set(chunk.tensor, []);
    out.get(chunk.tensor).push(chunk);
  }
  for (const chunks of out.values()) {
    chunks.sort((a, b) => a.offset - b.offset);
    for (const c of chunks) c.first = (c.offset - chunks[0].offset) / 4; // float32 elements
  }
  return out;
}

/** A compact variant's index, and its packed files on demand. */
export class PackedVariant {
  /**
   * @param {string} manifestUrl the packed files' paths are relative to it
   * @param {object} index the parsed, checked expand.json
   * @param {object[]} packed manifest entries of the packed files, in index order
   * @param {string[]} [sharedBy] names of the variants whose files include all of `packed`
   */
  constructor(manifestUrl, index, packed, sharedBy = []) {
    this.manifestUrl = manifestUrl;
    this.index = index;
    this.packed = packed;
    this.chunks = chunksByTensor(index);
    this.kept = new Map(); // pieces held for the page when the browser cannot cache them
    /** Names of the variants whose files include all of these packed files (this one among them). */
    this.sharedBy = sharedBy;
  }

  /** Element count of a tensor. */
  size(name) {
    const chunks = this.chunksOf(name);
    const last = chunks[chunks.length - 1];
    return last.first + (last.encoding === Q4_ENCODING ? last.elements : last.bytes / 4);
  }

  /** The chunks of a tensor, in order. */
  chunksOf(name) {
    const chunks = this.chunks.get(name);
    if (!chunks) throw new Error(`The weight index has no tensor ${name}.`);
    return chunks;
  }

  /** Packed file `p`, from Cache Storage (downloaded only when missing), checked against its sha256. */
  async piece(p) {
    if (this.kept.has(p)) return this.kept.get(p);
    const entry = this.packed[p];
    let fetched;
    try {
      fetched = await fetchVerified([entry], { baseUrl: this.manifestUrl });
    } catch (err) {
      throw await explainOffline(err, this.manifestUrl);
    }
    const { files, storage } = fetched;
    if (storage === "memory") this.kept.set(p, files.get(entry.path)); // else the next read downloads again
    return files.get(entry.path);
  }

  /**
   * Run `fn(view)` with the packed bytes of `names` at hand; `view.tensor(name)` and
   * `view.range(name, first, count)` expand float32 values synchronously. One packed file
   * at a time is read, and only the chunks of `names` are kept from it, until `fn` returns.
   * @template T
   * @param {string[]} names tensors `fn` reads
   * @param {(view: {tensor: (name: string) => Float32Array, range: (name: string, first: number, count: number) => Float32Array}) => T} fn
   * @returns {Promise<T>}
   */
  async read(names, fn) {
    const chunks = [...new Set(names)].flatMap((name) => this.chunksOf(name));
    const bytes = new Map(); // chunk -> a copy of its packed bytes
    for (const p of new Set(chunks.map((c) => c.piece))) {
      const data = await this.piece(p);
      for (const c of chunks) if (c.piece === p) bytes.set(c, data.slice(c.start, c.start + c.bytes));
    }
    const range = (name, first, count) => this.expand(bytes, name, first, count);
    return fn({ range, tensor: (name) => range(name, 0, this.size(name)) });
  }

  /**
   * Elements [first, first + count) of a tensor from its chunks' bytes (q4 runs must start and
   * end on block edges).
   */
  expand(bytes, name, first, count) {
    const out = new Float32Array(count);
    const { block } = this.index;
    for (const chunk of this.chunksOf(name)) {
      const length = chunk.encoding === Q4_ENCODING ? chunk.elements : chunk.bytes / 4;
      const a = Math.max(first, chunk.first),
        b = Math.min(first + count, chunk.first + length);
      if (a >= b) continue;
      const source = bytes.get(chunk);
      const into = out.subarray(a - first, b - first);
      if (chunk.encoding === Q4_ENCODING) {
        if ((a - chunk.first) % block || (b - a) % block) throw new Error(`Elements ${a}…${b} of ${name} do not fall on ${block}-element blocks.`);
        expandQ4(source, chunk.elements, block, into, (a - chunk.first) / block, (b - a) / block);
      } else {
        into.set(new Float32Array(source.buffer, source.byteOffset + (a - chunk.first) * 4, b - a)); // source starts its own buffer
      }
    }
    return out;
  }
}
