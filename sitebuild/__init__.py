"""The build-time Python of the site: everything that runs on the maintainer's machine, none
of it in the reader's browser.

- MkDocs hooks (listed in ``mkdocs.yml``): :mod:`.hooks` (runtime files into the site),
  :mod:`.model_hook`, :mod:`.embed_hook`, :mod:`.pipeline_hook`, :mod:`.bench_hook`,
  :mod:`.offline_hook`;
- command-line tools: ``python -m sitebuild.assets`` (vendor the third-party runtimes),
  ``python -m sitebuild.serve`` (the dev server), ``python -m sitebuild.check_budgets``,
  ``python -m sitebuild.chromium`` (find or install the browser the tests drive);
- helpers of the embed hook: :mod:`.widget_docs` (the widget catalogue, read from the
  widget files' doc comments) and :mod:`.embed_costs` (each runtime's download size);
- :mod:`.paths`: where the repository keeps what the build reads.

The browser code it copies into the site lives beside it in ``site_src/`` (``runtime/``,
``widgets/``, ``embed/``, ``styles/``) and is served verbatim.
"""
