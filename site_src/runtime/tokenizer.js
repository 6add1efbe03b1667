/**
 * GPT-2 byte-level BPE tokenizer for the browser, Web Workers and node >= 20.
 *
 * A native ES module with no dependencies. It reproduces the ids of the
 * Hugging Face `tokenizers` GPT-2 tokenizer (ByteLevel pre-tokenizer without a
 * prefix space, BPE by merge rank, `<|endoftext|>` as a special added token).
 *
 * Attribution: the algorithm (the pre-tokenization regex, the bytes-to-unicode
 * table and rank-ordered BPE merges) and the vocabulary files it reads
 * (vocab.json / encoder.json and merges.txt / vocab.bpe) come from OpenAI's
 * GPT-2, https://github.com/openai/gpt-2 , released under the MIT licence,
 * Copyright (c) 2019 OpenAI. This file is an independent implementation.
 *
 * @module tokenizer
 */

/** The special token GPT-2 uses for end of text (and as its only added token). */
const END_OF_TEXT = "<|endoftext|>";

/**
 * GPT-2's pre-tokenization pattern: contractions, letter runs, digit runs,
 * runs of other symbols (each optionally led by one space), then whitespace.
 * `\s+(?!\S)` leaves the last space of a run for the word that follows it.
 *
 * OpenAI's pattern writes whitespace as `\s`. HF tokenizers runs it under
 * Oniguruma, where `\s` is Unicode's White_Space property; JavaScript's `\s`
 * differs (it adds U+FEFF and lacks U+0085), so `\p{White_Space}` is spelled
 * out to get the same splits. `\p{L}` and `\p{N}` follow the JavaScript
 * engine's Unicode version: letters assigned after the version in HF's
 * Oniguruma (Unicode 16 for tokenizers 0.23) may split differently.
 */
const PRETOKENIZE_PATTERN = new RegExp(
  [
    "'s|'t|'re|'ve|'m|'ll|'d",
    " ?\\p{L}+",
    " ?\\p{N}+",
    " ?[^\\p{White_Space}\\p{L}\\p{N}]+",
    "\\p{White_Space}+(?!\\P{White_Space})",
    "\\p{White_Space}+",
  ].join("|"),
  "gu",
);

/** Default number of pre-tokenized words whose ids are remembered. */
const DEFAULT_CACHE_SIZE = 20000;

/**
 * Build GPT-2's reversible byte -> character table. Printable Latin-1 bytes
 * map to themselves; the others (control characters, space, ...) are shifted
 * to code points from U+0100 upwards so every byte has a visible character.
 * @returns {string[]} 256 single-character strings indexed by byte value.
 */
function buildByteToChar() {
  const isPrintable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table = new Array(256);
  let next = 0x100;
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCharCode(isPrintable(b) ? b : next++);
  }
  return table;
}

const BYTE_TO_CHAR = buildByteToChar();

/** Inverse of BYTE_TO_CHAR: character -> byte value. */
const CHAR_TO_BYTE = new Map(BYTE_TO_CHAR.map((ch, b) => [ch, b]));

const utf8Encoder = new TextEncoder();
/** Non-streaming decoder; keeps a leading BOM, replaces invalid UTF-8 with U+FFFD. */
const utf8Decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Parse merges.txt / vocab.bpe into a map from "left right" to rank (the
 * merge's position in the file; a lower rank merges first). The `#version`
 * header and blank lines are skipped.
 * @param {string} mergesText
 * @returns {Map<string, number>}
 */
function parseMerges(mergesText) {
  const ranks = new Map();
  let rank = 0;
  for (const rawLine of mergesText.split("\n")) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#version")) continue;
    const parts = line.split(/\s+/);
    if (parts.length !== 2) throw new Error(`Malformed merge line: ${JSON.stringify(rawLine)}`);
    ranks.set(`${parts[0]} ${parts[1]}`, rank++);
  }
  return ranks;
}

/** Escape a string for literal use inside a RegExp. */
function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A minimal binary min-heap of candidate merges, ordered by rank then by
 * position (the leftmost of equally ranked pairs merges first).
 */
class MergeHeap {
  constructor() {
    /** @type {{rank: number, pos: number, left: string, right: string}[]} */
    this.items = [];
  }

  get size() {
    return this.items.length;
  }

  static less(a, b) {
    return a.rank < b.rank || (a.rank === b.rank && a.pos < b.pos);
  }

  push(item) {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!MergeHeap.less(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop() {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) {
      items[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  siftDown(i) {
    const items = this.items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < items.length && MergeHeap.less(items[l], items[smallest])) smallest = l;
      if (r < items.length && MergeHeap.less(items[r], items[smallest])) smallest = r;
      if (smallest === i) return;
      [items[i], items[smallest]] = [items[smallest], items[i]];
      i = smallest;
    }
  }
}

/**
 * Validate the UTF-8 sequence starting at `bytes[i]`.
 * @param {Uint8Array} bytes
 * @param {number} i
 * @returns {number} its length (1-4), or 0 if no valid sequence starts there.
 */
function utf8SequenceLength(bytes, i) {
  const b0 = bytes[i];
  if (b0 < 0x80) return 1;
  let len;
  let lo = 0x80;
  let hi = 0xbf; // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) len = 2;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    if (b0 === 0xe0) lo = 0xa0; // no overlong forms
    if (b0 === 0xed) hi = 0x9f; // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    if (b0 === 0xf0) lo = 0x90; // no overlong forms
    if (b0 === 0xf4) hi = 0x8f; // nothing above U+10FFFF
  } else return 0;
  if (i + len > bytes.length) return 0;
  if (bytes[i + 1] < lo || bytes[i + 1] > hi) return 0;
  for (let k = 2; k < len; k++) {
    if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf) return 0;
  }
  return len;
}

/** Format one byte as `<0xE2>`. */
function hexByte(b) {
  return `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
}

/** GPT-2 byte-level BPE tokenizer. */
export class GPT2Tokenizer {
  /**
   * Fetch vocab.json and merges.txt and build a tokenizer.
   * @param {string | URL} vocabUrl URL of vocab.json (token -> id).
   * @param {string | URL} mergesUrl URL of merges.txt.
   * @param {{fetch?: (url: string | URL) => Promise<Response>}} [options]
   *   `fetch`: an alternative fetch function (defaults to the global one).
   * @returns {Promise<GPT2Tokenizer>}
   */
  static async load(vocabUrl, mergesUrl, { fetch: fetchImpl = (url) => globalThis.fetch(url) } = {}) {
    const get = async (url) => {
      const response = await fetchImpl(url);
      if (!response.ok) throw new Error(`Could not fetch ${url}: HTTP ${response.status}`);
      return response;
    };
    const [vocabResponse, mergesResponse] = await Promise.all([get(vocabUrl), get(mergesUrl)]);
    const [vocab, mergesText] = await Promise.all([vocabResponse.json(), mergesResponse.text()]);
    return new GPT2Tokenizer(vocab, mergesText);
  }

  /**
   * @param {Record<string, number>} vocab token (in byte-to-char form) -> id.
   * @param {string} mergesText contents of merges.txt, one "left right" pair a line.
   * @param {{cacheSize?: number}} [options] how many words' ids to remember.
   */
  constructor(vocab, mergesText, { cacheSize = DEFAULT_CACHE_SIZE } = {}) {
    /** @type {Map<string, number>} */
    this.encoder = new Map(Object.entries(vocab));
    /** @type {string[]} id -> token */
    this.decoder = [];
    for (const [token, id] of this.encoder) this.decoder[id] = token;
    this.mergeRanks = parseMerges(mergesText);

    this.specialTokens = new Map();
    if (this.encoder.has(END_OF_TEXT)) this.specialTokens.set(END_OF_TEXT, this.encoder.get(END_OF_TEXT));
    this.specialPattern = this.specialTokens.size ? new RegExp([...this.specialTokens.keys()].map(escapeRegExp).join("|"), "g") : null;

    /** @type {Map<string, number[]>} pre-tokenized word -> ids */
    this.cache = new Map();
    this.cacheSize = cacheSize;
  }

  /** Number of entries in the vocabulary (50257 for GPT-2). */
  get vocabSize() {
    return this.decoder.length;
  }

  /** Id of `<|endoftext|>` (50256 for GPT-2), or undefined if absent. */
  get eosTokenId() {
    return this.specialTokens.get(END_OF_TEXT);
  }

  /**
   * Encode text to token ids. Literal `<|endoftext|>` becomes its special id
   * and the text on either side of it is tokenized on its own.
   * Lone UTF-16 surrogates are encoded as U+FFFD (as TextEncoder does).
   * @param {string} text
   * @returns {number[]}
   */
  encode(text) {
    const ids = [];
    for (const segment of this.splitOnSpecialTokens(text)) {
      if (typeof segment === "number") ids.push(segment);
      else this.encodeOrdinary(segment, ids);
    }
    return ids;
  }

  /**
   * Split text into plain-text strings and special-token ids, in order.
   * @param {string} text
   * @returns {(string | number)[]}
   */
  splitOnSpecialTokens(text) {
    if (!this.specialPattern) return [text];
    const segments = [];
    let start = 0;
    for (const match of text.matchAll(this.specialPattern)) {
      if (match.index > start) segments.push(text.slice(start, match.index));
      segments.push(this.specialTokens.get(match[0]));
      start = match.index + match[0].length;
    }
    if (start < text.length) segments.push(text.slice(start));
    return segments;
  }

  /**
   * Encode text that holds no special tokens, appending ids to `out`.
   * @param {string} text
   * @param {number[]} out
   */
  encodeOrdinary(text, out) {
    for (const match of text.matchAll(PRETOKENIZE_PATTERN)) {
      for (const id of this.encodeWord(match[0])) out.push(id);
    }
  }

  /**
   * Ids of one pre-tokenized word, through the cache.
   * @param {string} word
   * @returns {number[]}
   */
  encodeWord(word) {
    let ids = this.cache.get(word);
    if (ids === undefined) {
      const symbols = Array.from(utf8Encoder.encode(word), (b) => BYTE_TO_CHAR[b]);
      ids = this.bpe(symbols).map((token) => this.tokenId(token));
      this.remember(word, ids);
    }
    return ids;
  }

  /** Look up a token's id, failing loudly if the vocabulary lacks it. */
  tokenId(token) {
    const id = this.encoder.get(token);
    if (id === undefined) throw new Error(`Token not in vocabulary: ${JSON.stringify(token)}`);
    return id;
  }

  /**
   * Store a word's ids. A full cache is emptied and starts over: evicting
   * entries one by one from the front of a Map is slow in V8 (deleted slots
   * are skipped on every `keys().next()`), and common words return at once.
   */
  remember(word, ids) {
    if (this.cacheSize <= 0) return;
    if (this.cache.size >= this.cacheSize) this.cache.clear();
    this.cache.set(word, ids);
  }

  /**
   * Apply BPE merges to a word: repeatedly merge the adjacent pair with the
   * lowest rank (leftmost first on ties) until no mergeable pair is left.
   * Symbols live in a doubly linked list; candidate pairs in a min-heap, so a
   * word of n bytes costs O(n log n).
   * @param {string[]} symbols the word's bytes as byte-to-char characters.
   * @returns {string[]} the final tokens.
   */
  bpe(symbols) {
    const n = symbols.length;
    if (n < 2) return symbols;
    const parts = symbols.slice();
    const prev = Array.from({ length: n }, (_, i) => i - 1);
    const next = Array.from({ length: n }, (_, i) => (i + 1 < n ? i + 1 : -1));
    const heap = new MergeHeap();
    const consider = (pos) => {
      const right = next[pos];
      if (pos < 0 || right < 0) return;
      const rank = this.mergeRanks.get(`${parts[pos]} ${parts[right]}`);
      if (rank !== undefined) heap.push({ rank, pos, left: parts[pos], right: parts[right] });
    };
    for (let i = 0; i + 1 < n; i++) consider(i);

    while (heap.size > 0) {
      const { pos, left, right } = heap.pop();
      const rightPos = next[pos];
      // Skip candidates made stale by an earlier merge.
      if (parts[pos] !== left || rightPos < 0 || parts[rightPos] !== right) continue;
      parts[pos] = left + right;
      parts[rightPos] = null;
      next[pos] = next[rightPos];
      if (next[pos] >= 0) prev[next[pos]] = pos;
      consider(prev[pos]);
      consider(pos);
    }

    const tokens = [];
    for (let i = 0; i >= 0; i = next[i]) tokens.push(parts[i]);
    return tokens;
  }

  /**
   * Raw bytes of one token.
   * @param {number} id
   * @returns {Uint8Array}
   */
  tokenBytes(id) {
    const token = this.decoder[id];
    if (token === undefined) throw new RangeError(`Unknown token id: ${id}`);
    const bytes = new Uint8Array(token.length);
    for (let i = 0; i < token.length; i++) bytes[i] = CHAR_TO_BYTE.get(token[i]);
    return bytes;
  }

  /**
   * Concatenated bytes of a sequence of tokens.
   * @param {Iterable<number>} ids
   * @returns {Uint8Array}
   */
  idsToBytes(ids) {
    const chunks = [];
    let length = 0;
    for (const id of ids) {
      const bytes = this.tokenBytes(id);
      chunks.push(bytes);
      length += bytes.length;
    }
    const out = new Uint8Array(length);
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }

  /**
   * Decode token ids to text. Invalid UTF-8 becomes U+FFFD (like HF's
   * `errors="replace"`). Throws a RangeError on an id outside the vocabulary.
   * @param {Iterable<number>} ids
   * @returns {string}
   */
  decode(ids) {
    return utf8Decoder.decode(this.idsToBytes(ids));
  }

  /**
   * A streaming decoder for generated tokens: `push(id)` returns the text that
   * is now complete, holding back the bytes of an unfinished UTF-8 character;
   * `flush()` returns what is left (U+FFFD for a character that never completed).
   * @returns {{push: (id: number) => string, flush: () => string}}
   */
  createDecoder() {
    const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
    return {
      push: (id) => utf8.decode(this.tokenBytes(id), { stream: true }),
      flush: () => utf8.decode(),
    };
  }

  /**
   * Display form of one token: its bytes decoded as UTF-8, with any byte that
   * is not part of a complete, valid UTF-8 character shown as `<0xE2>`.
   * @param {number} id
   * @returns {string}
   */
  tokenToString(id) {
    const bytes = this.tokenBytes(id);
    let out = "";
    let i = 0;
    while (i < bytes.length) {
      const len = utf8SequenceLength(bytes, i);
      if (len === 0) {
        out += hexByte(bytes[i]);
        i += 1;
      } else {
        out += utf8Decoder.decode(bytes.subarray(i, i + len));
        i += len;
      }
    }
    return out;
  }
}
