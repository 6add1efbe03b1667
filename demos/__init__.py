"""NumPy demos behind the textbook's interactive widgets.

Each module teaches one concept (for example `demos.sampling`: from logits to the
next token) in short, readable functions. The same code serves two masters:

* the browser, where Pyodide runs it inside a Web Worker and a widget calls the
  functions with keyword arguments; and
* CPython, where the unit tests check every function against PyTorch and
  Hugging Face `transformers`.

To make that possible the modules follow three rules:

1. Plain data in, plain data out: arguments and return values are lists of
   floats/ints/bools, dicts, and Python numbers, never NumPy arrays or scalars,
   so results cross the worker boundary unchanged.
2. NumPy only, and nothing newer than NumPy 2.0 (the version Pyodide ships).
   Computation is done internally in float64.
3. Bad input raises `ValueError` with a message written for a reader, because
   the widget shows it verbatim.

This file deliberately imports nothing, so loading one demo module does not load
the others.
"""
