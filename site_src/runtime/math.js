// Render $...$ and $$...$$ (arithmatex generic mode) with the self-hosted KaTeX,
// on first load and after every instant-navigation page change.
/* global document$, renderMathInElement */
(function () {
  function render() {
    if (typeof renderMathInElement !== "function") return;
    for (const el of document.querySelectorAll(".arithmatex")) {
      renderMathInElement(el, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    }
  }
  if (typeof document$ !== "undefined") document$.subscribe(render);
  else document.addEventListener("DOMContentLoaded", render);
})();
