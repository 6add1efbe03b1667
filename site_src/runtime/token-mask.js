/**
 * Which tokens a grammar (grammar.js) allows next: the mask of guided decoding.
 *
 * A token is allowed in a grammar state when each of its bytes, in turn, has a transition;
 * the state after its last byte is where the text then stands. The vocabulary is kept as a
 * trie of its tokens' bytes, so one walk from a state visits every token that starts with an
 * allowed byte once and stops at the first byte the grammar refuses (most tokens, in most
 * states, at their first byte). Each state's list is computed once and kept.
 *
 * A length budget is applied on top: a token is offered only if the text can still be
 * completed in the tokens left after it (every byte is itself a token of GPT-2's byte-level
 * vocabulary, so `bytesToEnd` tokens always suffice), so a guided generation always ends in a
 * complete text.
 * @module token-mask
 */

/** The vocabulary's tokens as a trie of their bytes (arrays indexed by node). */
export class VocabularyTrie {
  /**
   * @param {(id: number) => Uint8Array} tokenBytes each token's bytes
   * @param {number} size the vocabulary size
   * @param {Iterable<number>} [special] ids left out (e.g. <|endoftext|>, whose text is not its meaning)
   */
  constructor(tokenBytes, size, special = []) {
    const skip = new Set(special);
    const children = [new Map()];
    const token = [-1];
    for (let id = 0; id < size; id++) {
      if (skip.has(id)) continue;
      let node = 0;
      for (const byte of tokenBytes(id)) {
        let child = children[node].get(byte);
        if (child === undefined) {
          child = children.length;
          children.push(new Map());
          token.push(-1);
          children[node].set(byte, child);
        }
        node = child;
      }
      token[node] = id;
    }
    // Flattened: node -> its children's [byte, node] pairs in `edges` from `first[node]` to `first[node + 1]`.
    this.first = new Int32Array(children.length + 1);
    const pairs = [];
    children.forEach((map, node) => {
      this.first[node] = pairs.length / 2;
      for (const [byte, child] of map) pairs.push(byte, child);
    });
    this.first[children.length] = pairs.length / 2;
    this.edges = Int32Array.from(pairs);
    this.token = Int32Array.from(token);
    this.nodes = children.length;
  }
}

/** A grammar's allowed tokens per state, over one vocabulary. */
export class TokenMask {
  /**
   * @param {ReturnType<import("./grammar.js").compileSchema>} grammar
   * @param {VocabularyTrie} trie
   */
  constructor(grammar, trie) {
    this.grammar = grammar;
    this.trie = trie;
    this.cache = new Map(); // state -> {ids, next}
  }

  /**
   * Every token the grammar allows in `state`, and the state after it.
   * @param {number} state
   * @returns {{ids: Int32Array, next: Int32Array}} in the order of the trie walk
   */
  allowed(state) {
    let found = this.cache.get(state);
    if (found) return found;
    const { first, edges, token } = this.trie;
    const { transitions } = this.grammar;
    const ids = [];
    const next = [];
    const stack = [0, state]; // (trie node, grammar state) pairs
    while (stack.length) {
      const at = stack.pop();
      const node = stack.pop();
      for (let e = first[node]; e < first[node + 1]; e++) {
        const to = transitions[at * 256 + edges[2 * e]];
        if (to < 0) continue;
        const child = edges[2 * e + 1];
        if (token[child] >= 0) (ids.push(token[child]), next.push(to));
        stack.push(child, to);
      }
    }
    found = { ids: Int32Array.from(ids), next: Int32Array.from(next) };
    this.cache.set(state, found);
    return found;
  }

  /**
   * The tokens allowed in `state` that leave the text completable within `tokensLeft` more
   * tokens after them.
   * @param {number} state
   * @param {number} tokensLeft tokens that may follow this one
   * @returns {{ids: number[], next: number[]}}
   */
  allowedWithin(state, tokensLeft) {
    const { ids, next } = this.allowed(state);
    const { bytesToEnd } = this.grammar;
    const out = { ids: [], next: [] };
    for (let i = 0; i < ids.length; i++) {
      if (bytesToEnd[next[i]] <= tokensLeft) (out.ids.push(ids[i]), out.next.push(next[i]));
    }
    return out;
  }
}
