"""Reader code leaves the interpreter as it found it: `isolated()` undoes what it changed.

The exercises and spot-the-bug run the reader's code in the same Python as every other
widget of the page (one Pyodide per page). Code that deletes a builtin, replaces
``np.allclose``, appends to ``sys.path`` or lowers the recursion limit would otherwise break
every later check and every widget beside it. `isolated()` takes a snapshot on entry and
puts it back on exit, whatever happened in between (an exception, ``SystemExit``, the
``KeyboardInterrupt`` that stops an endless loop):

* the namespace of every loaded module (``builtins`` and ``sys`` included), key by key;
* the attributes of the mutable classes those modules define;
* ``sys.modules``: a module imported inside is forgotten again (the next import loads a
  clean copy), a module removed inside comes back;
* ``sys.path``, ``sys.meta_path``, ``sys.path_hooks``, the recursion limit, the trace and
  profile functions and the working directory.

It guards against a reader experimenting, not against an attacker: code that digs out the
snapshot itself (through the garbage collector, or by rewriting this module's functions'
code objects) could still get past it. What it does not undo: changes inside objects (an item put into a module's list or
dict), and what only a new interpreter resets (an ``os._exit``, a crash): the page's worker
restarts Python for those. A check therefore computes the reference before the reader's
code runs and compares after the restore, so nothing the reader replaced takes part in it.
"""

import builtins
import contextlib
import os
import sys

_MISSING = object()
_SYS_LISTS = ("path", "meta_path", "path_hooks")
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in and extension types, not patchable


def _own_classes(name, namespace):
    """The classes module `name` defines whose attributes Python code can change."""
    return [value for value in namespace.values() if issubclass(type(value), type) and value.__module__ == name and not value.__flags__ & _IMMUTABLE_TYPE]


class Snapshot:
    """What `isolated()` restores, taken when it is created."""

    def __init__(self):
        # What the restore itself needs, put back first with dict methods alone: the reader may
        # have deleted `len` or this module's own names.
        self.first = [(vars(builtins), dict(vars(builtins)), "module builtins"), (globals(), dict(globals()), f"module {__name__}")]
        self.modules = dict(sys.modules)
        self.namespaces = {name: dict(vars(m)) for name, m in self.modules.items() if hasattr(m, "__dict__")}
        self.classes = {cls: dict(vars(cls)) for name, ns in self.namespaces.items() for cls in _own_classes(name, ns)}
        self.sys_lists = {name: list(getattr(sys, name)) for name in _SYS_LISTS}
        self.recursion_limit = sys.getrecursionlimit()
        self.trace, self.profile = sys.gettrace(), sys.getprofile()
        self.cwd = os.getcwd()

    def restore(self):
        """Put everything back; returns what had changed ("module builtins", "sys.path", …)."""
        changed = []
        for namespace, saved, label in self.first:
            differs = namespace.keys() != saved.keys()
            for key, value in saved.items():
                differs = differs or namespace.get(key, self) is not value  # self: in no namespace
            if differs:
                namespace.clear()
                namespace.update(saved)
                changed.append(label)
        for name in [n for n in sys.modules if n not in self.modules]:
            del sys.modules[name]
            changed.append(f"imported {name}")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                changed.append(f"sys.modules[{name!r}]")
        for name, saved in self.namespaces.items():
            if _put_back(vars(self.modules[name]), saved):
                changed.append(f"module {name}")
        for cls, saved in self.classes.items():
            if _put_back_class(cls, saved):
                changed.append(f"class {cls.__module__}.{cls.__qualname__}")
        for name, saved in self.sys_lists.items():
            current = getattr(sys, name)
            if current != saved:
                current[:] = saved
                changed.append(f"sys.{name}")
        if sys.getrecursionlimit() != self.recursion_limit:
            sys.setrecursionlimit(self.recursion_limit)
            changed.append("sys.setrecursionlimit")
        if sys.gettrace() is not self.trace or sys.getprofile() is not self.profile:
            sys.settrace(self.trace)
            sys.setprofile(self.profile)
            changed.append("sys.settrace/setprofile")
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
            changed.append("os.chdir")
        return changed


def _put_back(namespace, saved):
    """Make the dict `namespace` hold exactly `saved` again (the same objects); whether it differed."""
    if len(namespace) == len(saved) and all(namespace.get(k, _MISSING) is v for k, v in saved.items()):
        return False
    for key in [k for k in namespace if k not in saved]:
        del namespace[key]
    for key, value in saved.items():
        if namespace.get(key, _MISSING) is not value:
            namespace[key] = value
    return True


def _put_back_class(cls, saved):
    """`_put_back` for a class, whose namespace only setattr and delattr may change."""
    current = vars(cls)
    if len(current) == len(saved) and all(current.get(k, _MISSING) is v for k, v in saved.items()):
        return False
    for key in [k for k in current if k not in saved]:
        delattr(cls, key)
    for key, value in saved.items():
        if current.get(key, _MISSING) is not value and key not in ("__dict__", "__weakref__"):
            setattr(cls, key, value)
    return True


@contextlib.contextmanager
def isolated(changed=None):
    """Run the block, then undo what it changed in the interpreter (see the module's docstring).

    Args:
        changed: A list that receives what had to be put back (for tests and messages).
    """
    restore = Snapshot().restore  # bound now: the reader's code may replace Snapshot.restore
    try:
        yield
    finally:
        undone = restore()
        if changed is not None:
            changed.extend(undone)
