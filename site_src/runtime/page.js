// Page-level work after every (instant-navigation) page load:
// - render $...$ and $$...$$ (arithmatex generic mode) with the self-hosted KaTeX;
// - give the search dialog an accessible name (the theme leaves it unnamed);
// - make scrollable tables and wide formulas reachable by keyboard.
/* global document$, renderMathInElement */
(function () {
  function renderMath() {
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

  function improveAccessibility() {
    const search = document.querySelector(".md-search");
    if (search && !search.hasAttribute("aria-label")) search.setAttribute("aria-label", "Search the book");
    // Code blocks may overflow later (widgets fill some in): make them all focusable.
    for (const el of document.querySelectorAll(".md-typeset pre > code:not([tabindex])")) el.setAttribute("tabindex", "0");
    const scrollable = document.querySelectorAll(".md-typeset__scrollwrap, .md-typeset div.arithmatex");
    for (const el of scrollable) {
      if (el.scrollWidth > el.clientWidth + 1 && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        if (!el.hasAttribute("role")) el.setAttribute("role", "region");
        if (!el.hasAttribute("aria-label")) el.setAttribute("aria-label", "Scrollable content");
      }
    }
  }

  function onPage() {
    renderMath();
    improveAccessibility();
  }
  if (typeof document$ !== "undefined") document$.subscribe(onPage);
  else document.addEventListener("DOMContentLoaded", onPage);
})();
