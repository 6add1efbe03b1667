/**
 * The keys of a widget's code box (a plain textarea), shared by <tx-spot-the-bug> and
 * <tx-exercise>: Tab indents and Shift+Tab dedents the selected lines, Esc then Tab leaves
 * the box (so a keyboard reader is never trapped), Ctrl+Enter (Cmd+Enter) runs the check.
 * @module widgets/code-box
 */

const INDENT = "    ";

/** Indent or dedent the lines touched by the selection, keeping them selected. */
export function indentSelection(textarea, dedent) {
  const { value, selectionStart: start, selectionEnd: end } = textarea;
  if (!dedent && start === end) {
    textarea.setRangeText(INDENT, start, end, "end");
    return;
  }
  const lineStart = value.lastIndexOf("\n", start - 1) + 1;
  const lines = value.slice(lineStart, end).split("\n");
  const changed = lines.map((line) => (dedent ? line.replace(/^ {1,4}/, "") : INDENT + line));
  const text = changed.join("\n");
  textarea.setRangeText(text, lineStart, end, "preserve");
  const firstShift = changed[0].length - lines[0].length;
  textarea.selectionStart = Math.max(lineStart, start + firstShift);
  textarea.selectionEnd = lineStart + text.length;
}

/**
 * The look the code-box widgets share (the exercise and spot-the-bug labs): the code box, the
 * hint, the buttons and the result panel with its verdict colours. Each adds its own layout.
 */
export const CODE_BOX_CSS = `
  .code { font-family: var(--md-code-font-family, monospace); font-size: 0.95em; line-height: 1.4;
          tab-size: 4; white-space: pre; overflow-wrap: normal; overflow-x: auto; resize: vertical; }
  .code:focus { outline: 2px solid var(--tx-accent); outline-offset: 1px; }
  .signature { font-family: var(--md-code-font-family, monospace); }
  .help { font-size: 0.9em; font-style: italic; }
  details.hint { margin: 0.4em 0; }
  details.hint summary { cursor: pointer; }
  details.hint summary:focus-visible { outline: 2px solid var(--tx-fg); outline-offset: 1px; }
  .buttons { margin-top: 0.5em; }
  button { font: inherit; padding: 0.25em 0.9em; border-radius: 4px; border: 1px solid var(--tx-border);
           background: var(--md-default-bg-color, #fff); color: inherit; cursor: pointer; }
  button.primary { background: var(--tx-accent); border-color: var(--tx-accent); color: #fff; }
  button:disabled { opacity: 0.5; cursor: default; }
  button:focus-visible { outline: 2px solid var(--tx-fg); outline-offset: 1px; }
  .result { margin-top: 0.6em; padding: 0.5em 0.7em; border-radius: 4px; border: 1px solid var(--tx-border);
            background: var(--md-default-bg-color, #fff); overflow-wrap: anywhere; }
  .result:empty, .result[hidden] { display: none; }
  .result.passed { border-left: 4px solid #2e7d32; }
  .result.failed, .result.error { border-left: 4px solid #c62828; }
  .result.stopped, .result.ended { border-left: 4px solid #ef6c00; }
  .verdict { font-weight: 700; margin-right: 0.3em; }
  pre { font-family: var(--md-code-font-family, monospace); font-size: 0.9em; white-space: pre; overflow-x: auto;
        background: var(--tx-bg); padding: 0.4em 0.6em; border-radius: 4px; margin: 0.3em 0; }
`;

/** How the code box is used, for the line under the task (the box points at it: `code-help`). */
export const CODE_HELP = `<span class="help" id="code-help">Tab indents, Shift+Tab dedents; press Esc, then Tab, to leave the editor. Ctrl+Enter checks.</span>`;

/**
 * The hint (filled in later: `.hint-text`), the code box of `rows` lines and the row of buttons:
 * the check button (`name="check"`), Stop, then the widget's own, all disabled until it is ready.
 * @param {{rows: number, check: string, buttons: [string, string][]}} spec `buttons`: [name, label]
 * @returns {string} HTML
 */
export function codeBoxHTML({ rows, check, buttons }) {
  const own = buttons.map(([name, label]) => `<button name="${name}" disabled>${label}</button>`).join("\n        ");
  return `<details class="hint"><summary>Hint</summary><p class="hint-text"></p></details>
      <label class="code-label">Code
        <textarea class="code" rows="${rows}" spellcheck="false" autocapitalize="off" autocomplete="off"
                  aria-describedby="code-help"></textarea></label>
      <div class="row buttons">
        <button class="primary" name="check" disabled>${check}</button>
        <button name="stop" disabled>Stop</button>
        ${own}
      </div>`;
}

/**
 * Show a code-box widget's result panel with a verdict and a message (its printed output
 * hidden); the widget then hides or empties its own parts.
 * @param {{$: (selector: string) => Element}} widget
 * @param {string} kind the panel's class: "passed", "failed", "error", "stopped", "ended"
 * @param {string} verdict
 * @param {string} message
 * @returns {HTMLElement} the panel
 */
export function showResultPanel(widget, kind, verdict, message) {
  const box = widget.$(".result");
  box.hidden = false;
  box.className = `result ${kind}`;
  widget.$(".verdict").textContent = verdict;
  widget.$(".message").textContent = message;
  widget.$(".output").hidden = true;
  return box;
}

/** The first line of a code-box widget's result panel: the verdict, then the message. */
export const RESULT_LINE = `<p><span class="verdict"></span><span class="message"></span></p>`;

/**
 * A keydown listener for a code box.
 * @param {{check: () => unknown, busy?: () => boolean, edited?: (value: string) => unknown}} actions
 *   what Ctrl+Enter runs (not while `busy()`: a check is running), and what to tell after Tab
 *   changed the text (an input event does not fire then)
 * @returns {(event: KeyboardEvent) => void}
 */
export function codeBoxKeys({ check, busy = () => false, edited = () => {} }) {
  let escaped = false; // after Esc, the next Tab moves focus instead of indenting
  return (event) => {
    if (event.key === "Escape") {
      escaped = true;
      return;
    }
    if (event.key === "Tab" && !escaped && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault();
      indentSelection(event.target, event.shiftKey);
      edited(event.target.value);
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (!busy()) check();
    }
    if (event.key !== "Shift") escaped = false;
  };
}

/**
 * Show, in a code-box widget's result panel, that the reader's code ended Python (a
 * `PythonError` of type "PythonEnded"): the page is already starting Python again, so the
 * panel has no Retry (it would run the same code); the reader edits and checks again.
 * @param {{dataset: DOMStringMap, panel: (kind: string, verdict: string, message: string) => unknown}} widget
 * @param {Error} err
 * @returns {boolean} whether `err` was of that kind (and so is shown)
 */
export function showPythonEnded(widget, err) {
  if (err.pythonType !== "PythonEnded") return false;
  widget.dataset.result = "ended";
  widget.panel("ended", "✗ Python ended.", `${err.message} Edit the code and check again.`);
  return true;
}
