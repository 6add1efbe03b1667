/**
 * The reader's prompt, shared by every pipeline widget: kept in localStorage (so it is typed
 * once and follows the reader from stage page to stage page), with an in-memory copy where
 * storage is blocked, and a window event that tells the other widgets on the page.
 * @module widgets/pipeline/prompt
 */

export const PROMPT_KEY = "tx-pipeline-prompt";
export const DEFAULT_PROMPT = "Data visualization empowers users to";
const PROMPT_EVENT = "tx-pipeline-prompt";
let memoryPrompt = null;

/** The reader's prompt (the default one until they type their own). */
export function getPrompt() {
  try {
    const stored = localStorage.getItem(PROMPT_KEY);
    if (stored !== null) return stored;
  } catch {
    // storage blocked: keep it in memory for this page
  }
  return memoryPrompt ?? DEFAULT_PROMPT;
}

/** Store the prompt and tell every pipeline widget on the page. */
export function setPrompt(text) {
  memoryPrompt = text;
  try {
    localStorage.setItem(PROMPT_KEY, text);
  } catch {
    // storage blocked: the in-memory copy serves this page
  }
  window.dispatchEvent(new CustomEvent(PROMPT_EVENT, { detail: text }));
}

/** Markup of the shared prompt box. */
export function promptBar() {
  return `<label class="pl-prompt">Your prompt (shared by every stage page)
      <input type="text" spellcheck="false" autocomplete="off" maxlength="2000"></label>`;
}

/**
 * Wire the prompt box of `widget`: typing stores the prompt and calls `onChange` (debounced);
 * a change made by another pipeline widget on the page updates the box and calls it too.
 * @returns {() => void} removes the listener
 */
export function bindPrompt(widget, onChange) {
  const input = widget.$(".pl-prompt input");
  input.value = getPrompt();
  let timer = null;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => setPrompt(input.value), 300);
  });
  const listener = (event) => {
    if (input.value !== event.detail) input.value = event.detail;
    onChange(event.detail);
  };
  window.addEventListener(PROMPT_EVENT, listener);
  return () => window.removeEventListener(PROMPT_EVENT, listener);
}
