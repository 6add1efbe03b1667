/**
 * The styles the pipeline widgets share (each one inserts them in its template): the prompt
 * box, shape lines, rows of controls and figures, token chips, heatmaps and tables.
 * @module widgets/pipeline/styles
 */

/** Styles shared by the pipeline widgets (inserted in each template). */
export const PIPELINE_CSS = `<style>
  .pl-prompt { display: block; margin-bottom: 0.5em; }
  .pl-prompt input { display: block; width: 100%; box-sizing: border-box; font: inherit; padding: 0.3em; }
  .pl-shape { font-family: var(--md-code-font-family, monospace); font-size: 0.9em; margin: 0.3em 0; }
  .pl-row { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: center; margin: 0.4em 0; }
  .pl-figs { display: flex; flex-wrap: wrap; gap: 0.8em; align-items: flex-start; }
  /* A figure wider than a phone scrolls in its own box (class "scroll": on purpose). */
  figure.pl-fig { margin: 0; max-width: 100%; overflow-x: auto; }
  figure.pl-fig figcaption { font-size: 0.85em; margin-bottom: 0.2em; }
  .pl-readout { font-size: 0.85em; margin: 0.1em 0 0; min-height: 1.4em; }
  .pl-tokens { display: flex; flex-wrap: wrap; gap: 0.3em; }
  .pl-token { border: 1px solid currentColor; border-radius: 3px; padding: 0.1em 0.35em; text-align: center; font-family: var(--md-code-font-family, monospace); }
  .pl-token small { display: block; opacity: 0.8; }
  .pl-note { font-size: 0.85em; margin: 0.3em 0; }
  svg.pl-heat text { font-size: 9px; fill: currentColor; }
  table.pl-table { border-collapse: collapse; font-size: 0.9em; }
  table.pl-table td, table.pl-table th { padding: 0.1em 0.5em; border-bottom: 1px solid rgba(128,128,128,0.4); text-align: right; }
  table.pl-table td:first-child, table.pl-table th:first-child { text-align: left; }
  select, button, input[type=number], input[type=range] { font: inherit; }
</style>`;
