/**
 * Whether a model fits in this device's memory, asked before anything is downloaded, and
 * what the reader chose when it did not. `model.js` is the only caller; the estimate itself
 * is `peakMemoryBytes` in variants.js, the wording `memoryMessage` in errors.js.
 *
 *   import { deviceMemoryGB, memoryProblem } from "./memory.js";
 *   memoryProblem({ manifest, backend: "wasm", deviceGB: 0.5 })
 *   // {message: "This device reports 0.5 GB of memory, …", fit: "q8"} or null when it fits
 *
 * The device's figure is `navigator.deviceMemory` (Chromium-based browsers; GB, rounded to a
 * power of two, at most 8). Where it is missing nothing is checked. A page may set
 * `globalThis.TX_DEVICE_MEMORY_GB = 0.5` before the runtime starts to stand for it (the
 * memory-guard tests do, through Playwright's `add_init_script`, as the fault tests set
 * `TX_LIMITS`, see limits.js).
 * @module memory
 */
import { memoryMessage } from "./errors.js";
import { memoryFit } from "./variants.js";

/**
 * The share of the device's memory one tab may use. The system, the browser itself and the
 * other apps hold the rest; on a phone the system ends a tab (Chrome on Android: its
 * renderer) well before all memory is gone, so a tab that counts on about half is still
 * running when its peak passes. GB here are 10^9 bytes (the browser reports GiB): on the
 * safe side by 7%.
 */
export const TAB_SHARE = 0.5;

/** The device's memory in GB: the page's `TX_DEVICE_MEMORY_GB`, else `navigator.deviceMemory`, else null. */
export function deviceMemoryGB() {
  for (const value of [globalThis.TX_DEVICE_MEMORY_GB, globalThis.navigator?.deviceMemory]) {
    if (Number.isFinite(value) && value > 0) return value;
  }
  return null;
}

/** Bytes a tab may use on a device with `deviceGB` GB (Infinity when unknown). */
export function memoryBudgetBytes(deviceGB) {
  return deviceGB === null ? Infinity : deviceGB * 1e9 * TAB_SHARE;
}

/**
 * Why the variant a load would use does not fit, or null when it does.
 * @param {{manifest: object, backend: "webgpu"|"wasm", deviceGB: number|null, variant?: string,
 *   needs?: string[], failure?: string}} request `failure`: the browser's words when an
 *   allocation already failed (then the answer is never null, and offers a smaller variant)
 * @returns {{message: string, fit: string|null}|null} `fit`: the variant to offer instead
 */
export function memoryProblem({ manifest, backend, deviceGB, variant, needs = [], failure }) {
  const budget = memoryBudgetBytes(deviceGB);
  const found = memoryFit(manifest, backend, budget, { variant, needs });
  if (failure === undefined && found.need <= budget) return null;
  const fit = found.fit && { name: found.fit.variant.name, need: found.fit.need };
  const message = memoryMessage({
    cause: failure === undefined ? "estimate" : "allocation",
    deviceGB,
    budget,
    variant: found.variant.name,
    need: found.need,
    fit,
    detail: failure,
  });
  return { message, fit: fit ? fit.name : null };
}

const choices = new Map(); // what the reader chose, per load request (see `memoryChoice`)

const choiceKey = ({ name, backend, variant, needs = [] }) => JSON.stringify([name, backend, variant || null, [...needs].sort()]);

/**
 * What the reader chose for this load request after a memory error: `{variant}` (a smaller
 * one) or `{anyway: true}` (load it, unchecked); undefined before any choice. Kept for the page.
 * @param {{name: string, backend: string, variant?: string, needs?: string[]}} request
 * @returns {{variant?: string, anyway?: boolean}|undefined}
 */
export function memoryChoice(request) {
  return choices.get(choiceKey(request));
}

/** Remember the reader's choice for this load request (see `memoryChoice`). */
export function chooseForMemory(request, choice) {
  choices.set(choiceKey(request), choice);
}
