/**
 * A small seedable random number generator, so that a seed reproduces a sampled
 * continuation exactly (in the browser, in node, and in the Python reference that the
 * browser tests carry).
 *
 * The generator is Mulberry32 (Tommy Ettinger's 32-bit state mixer): each call adds a
 * fixed odd constant to the state and scrambles it into one 32-bit output. It has a
 * period of 2^32, plenty for drawing a few thousand tokens. `random()` glues two
 * outputs into a double in [0, 1) with 53 random bits, like Python's `random.random()`.
 *
 *   const rng = new Rng(42);
 *   rng.random(); // 0.6011037487409305, the same on every machine
 *
 * @module rng
 */

const TWO_POW_26 = 67108864;
const TWO_POW_53 = 9007199254740992;

/** Largest accepted seed (seeds are unsigned 32-bit integers). */
export const MAX_SEED = 0xffffffff;

export class Rng {
  /** @param {number} seed an integer in [0, 2^32) */
  constructor(seed) {
    if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
      throw new RangeError(`The seed must be a whole number from 0 to ${MAX_SEED}, got ${seed}.`);
    }
    this.state = seed >>> 0;
  }

  /** Next unsigned 32-bit integer. */
  nextUint32() {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform double in [0, 1): 27 high bits of one output, 26 of the next. */
  random() {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * TWO_POW_26 + b) / TWO_POW_53;
  }
}

/** A fresh seed from the browser's cryptographic generator (or Math.random in old runtimes). */
export function randomSeed() {
  if (globalThis.crypto?.getRandomValues) return globalThis.crypto.getRandomValues(new Uint32Array(1))[0];
  return Math.floor(Math.random() * (MAX_SEED + 1));
}
