/**
 * Where the site's runtime files live, resolved from this module's own URL so that
 * pages at any depth (and other origins embedding the widgets) find them.
 * Layout of the built site: assets/tx/runtime/ (this file), assets/vendor/, models/.
 * @module paths
 */
const here = new URL("./", import.meta.url);

/** Base URL of the vendored third-party runtimes (Pyodide, onnxruntime-web, KaTeX). */
export const vendorURL = new URL("../../vendor/", here).href;

/** Base URL of the exported models (models/index.json, models/<name>/manifest.json). */
export const modelsURL = new URL("../../../models/", here).href;
