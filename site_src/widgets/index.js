/**
 * Registers every custom element of the textbook. Pages (and, later, other sites)
 * load this one module; each widget loads Pyodide or the model only when it needs it.
 */
import "./tx-sampling.js";
import "./tx-next-token.js";
