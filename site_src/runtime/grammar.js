/**
 * A JSON Schema (a small subset) compiled to an automaton over bytes that accepts exactly the
 * JSON texts the schema allows, written the way Outlines writes them: properties in the
 * schema's order, every listed property present, at most one space after `{`, `[`, `:` and `,`
 * and before `}` and `]`, strings of printable characters with `\"` and `\\` as the only
 * escapes (`outlines_core.json_schema.build_regex_from_schema` with the whitespace pattern
 * `[ ]?` gives the same language; tests/browser/test_guided_json.py checks the masks against it).
 *
 *   const grammar = compileSchema({ type: "object", properties: { name: { type: "string" } } });
 *   let state = grammar.start;
 *   for (const byte of bytes) state = grammar.next(state, byte);   // -1: the text left the schema
 *   grammar.accepts(state); grammar.bytesToEnd[state];             // complete? bytes still needed
 *
 * Supported: `type` object (with `properties`), array (with `items`, `minItems`, `maxItems`),
 * string (`minLength`, `maxLength`), integer, number, boolean, null; `enum` and `const` of JSON
 * values; annotations (`title`, `description`, ...). Anything else is refused with a
 * `SchemaError` that names the keyword and where it is.
 *
 * The schema becomes a nondeterministic automaton (Thompson's construction, one fragment per
 * schema node), then a deterministic one by the subset construction, with the states that
 * cannot reach the end removed: `next` is -1 exactly when no completion exists.
 * @module grammar
 */

/** The most states the deterministic automaton may have (a larger schema is refused). */
export const MAX_GRAMMAR_STATES = 20000;
/** The most states its nondeterministic automaton may have, on the way. */
const MAX_NFA_STATES = 200000;
const TOO_LARGE = "The schema is too large for a grammar in the browser: use fewer or smaller length limits.";

/** The largest count a length keyword may give (each unit of a bounded length is states of its own). */
export const MAX_COUNT = 256;

/** Keywords that describe a schema without constraining it. */
const ANNOTATIONS = new Set(["title", "description", "$schema", "$id", "$comment", "examples", "default", "required", "additionalProperties"]);
/** Keywords each type reads (any other is refused). */
const KEYWORDS = {
  object: ["properties"],
  array: ["items", "minItems", "maxItems"],
  string: ["minLength", "maxLength"],
  integer: [],
  number: [],
  boolean: [],
  null: [],
};

/** A schema this compiler cannot turn into a grammar; `message` names the part. */
export class SchemaError extends Error {
  constructor(message) {
    super(message);
    this.name = "SchemaError";
  }
}

// ---------------------------------------------------------------- the nondeterministic automaton

class Nfa {
  constructor() {
    this.epsilon = []; // state -> states reached without a byte
    this.edges = []; // state -> [lo, hi, to] byte ranges
  }

  state() {
    if (this.epsilon.length >= MAX_NFA_STATES) throw new SchemaError(TOO_LARGE);
    this.epsilon.push([]);
    this.edges.push([]);
    return this.epsilon.length - 1;
  }
}

// A pattern is a function that adds its fragment to an Nfa and returns {start, end}; a pattern
// can be used many times (each use builds a fresh fragment).
const empty = () => (nfa) => {
  const s = nfa.state();
  return { start: s, end: s };
};

/** One byte from any of the ranges [lo, hi]. */
const bytesIn =
  (...ranges) =>
  (nfa) => {
    const start = nfa.state();
    const end = nfa.state();
    for (const [lo, hi] of ranges) nfa.edges[start].push([lo, hi, end]);
    return { start, end };
  };

const seq =
  (...patterns) =>
  (nfa) => {
    if (patterns.length === 0) return empty()(nfa);
    const parts = patterns.map((p) => p(nfa));
    for (let i = 1; i < parts.length; i++) nfa.epsilon[parts[i - 1].end].push(parts[i].start);
    return { start: parts[0].start, end: parts[parts.length - 1].end };
  };

const alt =
  (...patterns) =>
  (nfa) => {
    const start = nfa.state();
    const end = nfa.state();
    for (const p of patterns) {
      const part = p(nfa);
      nfa.epsilon[start].push(part.start);
      nfa.epsilon[part.end].push(end);
    }
    return { start, end };
  };

const star = (pattern) => (nfa) => {
  const start = nfa.state();
  const end = nfa.state();
  const part = pattern(nfa);
  nfa.epsilon[start].push(part.start, end);
  nfa.epsilon[part.end].push(part.start, end);
  return { start, end };
};

const optional = (pattern) => alt(pattern, empty());

/** Up to `k` more times, nested as (p(p(p)?)?)? so that a state's closure stays short. */
const atMost = (pattern, k) => (k === 0 ? empty() : optional(seq(pattern, atMost(pattern, k - 1))));

/** `pattern` from `min` to `max` times (max may be Infinity). */
const repeat = (pattern, min, max) => seq(...Array(min).fill(pattern), max === Infinity ? star(pattern) : atMost(pattern, max - min));

const UTF8 = new TextEncoder();
/** The exact bytes of `text` in UTF-8. */
const literal = (text) => seq(...[...UTF8.encode(text)].map((b) => bytesIn([b, b])));

const CONT = [0x80, 0xbf]; // a UTF-8 continuation byte
/**
 * One character of a JSON string as Outlines allows it: a code point other than `"`, `\`,
 * U+0000–U+001F and U+007F–U+009F, in valid UTF-8, or the escapes `\"` and `\\`.
 */
const stringChar = alt(
  bytesIn([0x20, 0x21], [0x23, 0x5b], [0x5d, 0x7e]),
  seq(bytesIn([0xc2, 0xc2]), bytesIn([0xa0, 0xbf])),
  seq(bytesIn([0xc3, 0xdf]), bytesIn(CONT)),
  seq(bytesIn([0xe0, 0xe0]), bytesIn([0xa0, 0xbf]), bytesIn(CONT)),
  seq(bytesIn([0xe1, 0xec], [0xee, 0xef]), bytesIn(CONT), bytesIn(CONT)),
  seq(bytesIn([0xed, 0xed]), bytesIn([0x80, 0x9f]), bytesIn(CONT)),
  seq(bytesIn([0xf0, 0xf0]), bytesIn([0x90, 0xbf]), bytesIn(CONT), bytesIn(CONT)),
  seq(bytesIn([0xf1, 0xf3]), bytesIn(CONT), bytesIn(CONT), bytesIn(CONT)),
  seq(bytesIn([0xf4, 0xf4]), bytesIn([0x80, 0x8f]), bytesIn(CONT), bytesIn(CONT)),
  seq(literal("\\"), bytesIn([0x22, 0x22], [0x5c, 0x5c])),
);

const ws = optional(literal(" "));
const digit = bytesIn([0x30, 0x39]);
const integer = seq(optional(literal("-")), alt(literal("0"), seq(bytesIn([0x31, 0x39]), star(digit))));
const number = seq(
  integer,
  optional(seq(literal("."), digit, star(digit))),
  optional(seq(bytesIn([0x45, 0x45], [0x65, 0x65]), bytesIn([0x2b, 0x2b], [0x2d, 0x2d]), digit, star(digit))),
);

// ---------------------------------------------------------------- schema -> pattern

/** A JSON value written as Outlines writes an enum or const member (JSON.stringify). */
function jsonLiteral(value, where) {
  if (value !== null && typeof value === "object") throw new SchemaError(`${where}: enum and const values must be strings, numbers, booleans or null.`);
  return literal(JSON.stringify(value));
}

function whole(value, name, where) {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > MAX_COUNT) {
    throw new SchemaError(`${where}: “${name}” must be a whole number from 0 to ${MAX_COUNT}, got ${JSON.stringify(value)}.`);
  }
  return value;
}

/** The pattern of one schema node; `where` names it in messages ("the schema", "properties.name"). */
function patternOf(schema, where) {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    const kind = schema === null ? "null" : Array.isArray(schema) ? "a list" : `a ${typeof schema}`;
    throw new SchemaError(`${where} must be a JSON object such as {"type": "string"}, not ${kind}.`);
  }
  if ("enum" in schema || "const" in schema) {
    const values = "const" in schema ? [schema.const] : schema.enum;
    if (!Array.isArray(values) || values.length === 0) throw new SchemaError(`${where}: “enum” must be a non-empty list.`);
    return alt(...values.map((v) => jsonLiteral(v, where)));
  }
  const type = schema.type;
  if (typeof type !== "string" || !(type in KEYWORDS)) {
    throw new SchemaError(
      `${where}: “type” must be one of ${Object.keys(KEYWORDS).join(", ")} (or give “enum” or “const”), got ${JSON.stringify(type ?? "nothing")}.`,
    );
  }
  const unsupported = Object.keys(schema).find((key) => key !== "type" && !ANNOTATIONS.has(key) && !KEYWORDS[type].includes(key));
  if (unsupported)
    throw new SchemaError(`${where}: “${unsupported}” is not supported here (a ${type} takes ${[...KEYWORDS[type]].join(", ") || "no other keyword"}).`);
  switch (type) {
    case "object":
      return objectPattern(schema, where);
    case "array":
      return arrayPattern(schema, where);
    case "string": {
      const min = whole(schema.minLength, "minLength", where) ?? 0;
      const max = whole(schema.maxLength, "maxLength", where) ?? Infinity;
      if (max < min) throw new SchemaError(`${where}: maxLength ${max} is below minLength ${min}.`);
      return seq(literal('"'), repeat(stringChar, min, max), literal('"'));
    }
    case "integer":
      return integer;
    case "number":
      return number;
    case "boolean":
      return alt(literal("true"), literal("false"));
    default:
      return literal("null");
  }
}

function objectPattern(schema, where) {
  const properties = schema.properties;
  if (properties === null || typeof properties !== "object" || Array.isArray(properties)) {
    throw new SchemaError(`${where}: an object needs “properties”, each name with its schema.`);
  }
  const names = Object.keys(properties);
  if (names.length === 0) return seq(literal("{"), ws, literal("}"));
  const members = names.map((name) => seq(literal(JSON.stringify(name)), ws, literal(":"), ws, patternOf(properties[name], `properties.${name}`)));
  const joined = members.flatMap((member, i) => (i === 0 ? [member] : [ws, literal(","), ws, member]));
  return seq(literal("{"), ws, ...joined, ws, literal("}"));
}

function arrayPattern(schema, where) {
  if (!("items" in schema)) throw new SchemaError(`${where}: an array needs “items”, the schema of its elements.`);
  const item = patternOf(schema.items, `${where === "the schema" ? "" : `${where}.`}items`);
  const min = whole(schema.minItems, "minItems", where) ?? 0;
  const max = whole(schema.maxItems, "maxItems", where) ?? Infinity;
  if (max < min) throw new SchemaError(`${where}: maxItems ${max} is below minItems ${min}.`);
  if (max === 0) return seq(literal("["), ws, literal("]"));
  const more = seq(literal(","), ws, item);
  const items = seq(item, repeat(more, Math.max(min - 1, 0), max - 1));
  return seq(literal("["), ws, min === 0 ? optional(items) : items, ws, literal("]"));
}

// ---------------------------------------------------------------- the deterministic automaton

function closure(nfa, states) {
  const seen = new Set(states);
  const stack = [...states];
  while (stack.length) for (const next of nfa.epsilon[stack.pop()]) if (!seen.has(next)) (seen.add(next), stack.push(next));
  return [...seen].sort((a, b) => a - b);
}

/**
 * The automaton of a schema.
 * @param {object} schema a JSON Schema of the supported subset
 * @returns {{start: number, next: (state: number, byte: number) => number, accepts: (state: number) => boolean,
 *   transitions: Int32Array, accepting: Uint8Array, bytesToEnd: Int32Array, states: number}}
 *   `transitions[state * 256 + byte]` is the next state or -1; `bytesToEnd[state]` the fewest
 *   bytes that complete the text from `state`
 * @throws {SchemaError}
 */
export function compileSchema(schema) {
  const nfa = new Nfa();
  const { start, end } = patternOf(schema, "the schema")(nfa);
  const keys = new Map(); // closure key -> DFA state
  const sets = [];
  const rows = [];
  const add = (set) => {
    const key = set.join(",");
    if (!keys.has(key)) {
      if (sets.length >= MAX_GRAMMAR_STATES) throw new SchemaError(TOO_LARGE);
      keys.set(key, sets.length);
      sets.push(set);
    }
    return keys.get(key);
  };
  add(closure(nfa, [start]));
  const { classOf, classes } = byteClasses(nfa);
  for (let d = 0; d < sets.length; d++) {
    const targets = Array.from({ length: classes }, () => []); // per class of bytes: the states reached
    for (const s of sets[d]) for (const [lo, hi, to] of nfa.edges[s]) for (let c = classOf[lo]; c <= classOf[hi]; c++) targets[c].push(to);
    const rowOfClass = targets.map((reached) => (reached.length ? add(closure(nfa, reached)) : -1));
    rows.push(Int32Array.from(classOf, (c) => rowOfClass[c]));
  }
  const accepting = Uint8Array.from(sets, (set) => (set.includes(end) ? 1 : 0));
  return finish(rows, accepting);
}

/**
 * Bytes that every edge of the automaton treats alike share a class (the cuts are the edges'
 * range ends), so the subset construction computes one closure per class, not per byte.
 * @returns {{classOf: Uint16Array, classes: number}} classOf[byte]; classes are ordered like bytes
 */
function byteClasses(nfa) {
  const cut = new Uint8Array(257);
  for (const edges of nfa.edges) for (const [lo, hi] of edges) cut[lo] = cut[hi + 1] = 1;
  const classOf = new Uint16Array(256);
  let c = 0;
  for (let b = 0; b < 256; b++) {
    if (b > 0 && cut[b]) c++;
    classOf[b] = c;
  }
  return { classOf, classes: c + 1 };
}

/** Distances to the end by a breadth-first search backwards; states that cannot end are cut off. */
function finish(rows, accepting) {
  const n = rows.length;
  const incoming = Array.from({ length: n }, () => []);
  rows.forEach((row, from) => row.forEach((to) => to >= 0 && incoming[to].push(from)));
  const bytesToEnd = new Int32Array(n).fill(-1);
  let frontier = [];
  for (let s = 0; s < n; s++) if (accepting[s]) ((bytesToEnd[s] = 0), frontier.push(s));
  for (let d = 1; frontier.length; d++) {
    const next = [];
    for (const s of frontier) for (const from of incoming[s]) if (bytesToEnd[from] < 0) ((bytesToEnd[from] = d), next.push(from));
    frontier = next;
  }
  const transitions = new Int32Array(n * 256);
  rows.forEach((row, s) => row.forEach((to, b) => (transitions[s * 256 + b] = to >= 0 && bytesToEnd[to] >= 0 ? to : -1)));
  return {
    start: 0,
    states: n,
    transitions,
    accepting,
    bytesToEnd,
    next: (state, byte) => transitions[state * 256 + byte],
    accepts: (state) => accepting[state] === 1,
  };
}
