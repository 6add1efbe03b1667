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
 * A keydown listener for a code box.
 * @param {{check: () => unknown, edited?: (value: string) => unknown}} actions what Ctrl+Enter
 *   runs, and what to tell after Tab changed the text (an input event does not fire then)
 * @returns {(event: KeyboardEvent) => void}
 */
export function codeBoxKeys({ check, edited = () => {} }) {
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
      check();
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
