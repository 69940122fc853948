"""The standard library as it stood before any code of the repository was imported (``_standard_library``):
every function and class a loaded standard module binds, by identity. ``rebound()`` names each one rebound to the
repository's code since (``re.search`` that always matches) and the repository's callables in standard modules loaded
later; the session's end notes them in ``patched`` as ``standard library <name>``."""

from typing import Any


def _standard_library(workspace, started):
    # The standard library as it stood before any code of the repository was imported: every function and
    # class a loaded standard module (and builtins) binds, by identity. pytest's checks lean on it
    # (``pytest.raises(match=)`` calls ``re.search``; assertion messages call ``repr``, ``difflib``,
    # ``pprint``), so code under test that rebinds one changes what a test observes without touching
    # pytest. A standard module loaded after this snapshot (``fractions`` first imported by a test or the code
    # under test), or loaded again (deleted from ``sys.modules`` and imported anew), has no value to compare
    # with: each of its callables is judged by where its code comes from, as a rebound value is. Returns the
    # function listing the rebound names (``re.search``); the grader compares them with the base run's, where
    # pytest's own changes show as well.
    import builtins
    import os
    import sys
    import sysconfig

    home = sysconfig.get_paths()["stdlib"].rstrip("/") + os.sep
    kinds = (type, type(len), type(lambda: None))
    spaces: Any
    names: Any
    values: Any
    modules: Any
    spaces, names, values, modules = [], [], [], []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if module is not builtins and not (
            name in sys.builtin_module_names
            or (isinstance(file, str) and file.startswith(home) and "site-packages" not in file)
        ):
            continue
        space = vars(module)
        for attribute, value in list(space.items()):
            if isinstance(value, kinds) and not attribute.startswith("__"):
                spaces.append(space)
                names.append(attribute)
                values.append(value)
                modules.append(name)
    # Four columns, not a tuple per callable: thousands of small containers held all run are work for every
    # full collection of the garbage collector (pytest forces two at the end). A label is made when needed.
    spaces, names, values, modules = tuple(spaces), tuple(names), tuple(values), tuple(modules)
    from functools import partial
    from operator import is_not

    module_type = type(sys)
    # Every standard module's namespace at the start, held so that no later namespace takes one's id.
    identity = object.__hash__  # as id(), without its audited event (see _pytest_internals)
    known = {identity(vars(m)): vars(m) for m in list(sys.modules.values()) if type(m) is module_type}
    standard = frozenset(getattr(sys, "stdlib_module_names", ()))
    prefix = (workspace or "/nonexistent").rstrip("/") + "/"
    from types import MethodType

    function_type, heap, builtin_names, stat = type(lambda: None), 1 << 9, frozenset(sys.builtin_module_names), os.stat
    type_flags, type_module = type.__dict__["__flags__"].__get__, type.__dict__["__module__"].__get__
    type_dict = type.__dict__["__dict__"].__get__
    unwrapped = {MethodType: "__func__", classmethod: "__func__", staticmethod: "__func__", partial: "func"}
    made = {}

    def made_here(file):
        # The workspace's, or no file present when the run started (code made at run time); the interpreter's
        # frozen modules (``<frozen posixpath>``) are not.
        if not isinstance(file, str) or file.startswith(prefix):
            return True
        if file.startswith("<frozen "):
            return False
        if file not in made:
            try:
                made[file] = stat(file).st_mtime > started
            except OSError:
                made[file] = True
        return made[file]

    def foreign_class(kind):
        # A class (C types aside) with a method from a file of the repository (or one made during the run), or
        # whose module is the repository's (or no file at all: made at run time). A type a C extension made has
        # neither. Methods compiled from a string (``namedtuple``'s ``__new__``) are left to the audit's
        # ``compile``/``exec`` entries, which see who made them.
        if not type_flags(kind) & heap:
            return False
        for value in list(type_dict(kind).values()):
            value = value.__func__ if type(value) in (classmethod, staticmethod) else value
            if type(value) is function_type:
                file = value.__code__.co_filename
                if type(file) is str and file.startswith("/") and made_here(file):
                    return True
        name = type_module(kind)
        module = sys.modules.get(name)
        if type(module) is not module_type or name in builtin_names:
            return False
        return made_here(vars(module).get("__file__"))

    def foreign(value):
        # Whether the new value is the repository's (see made_here): pytest's own session-long replacements
        # (sys.unraisablehook) and installed packages' (typing_extensions) do not count. What cannot be told does.
        # Only known wrappers are unwrapped: an attribute read of any other object could run the repository's code.
        try:
            for _ in range(4):
                field = unwrapped.get(type(value))
                if field is None:
                    break
                value = getattr(value, field)
            if type(value) is function_type:
                return made_here(value.__code__.co_filename)
            return foreign_class(value if issubclass(type(value), type) else type(value))  # a class, or an object's
        except Exception:
            return True

    def rebound():
        found = late()
        if not any(map(is_not, map(dict.get, spaces, names), values)):
            return found
        for space, attribute, value, module in zip(spaces, names, values, modules):
            now = space.get(attribute)
            if now is not value and foreign(now):
                found.append(f"{module}.{attribute}")
        return found

    def late():
        # The standard modules (by name, or by file) whose namespace the snapshot did not take. A name of the
        # standard library bound to something other than a module is judged like a callable.
        found = []
        for name, module in list(sys.modules.items()):
            if type(module) is not module_type:
                if isinstance(name, str) and name.partition(".")[0] in standard and foreign(module):
                    found.append(name)
                continue
            space = vars(module)
            if identity(space) in known:
                continue
            file = space.get("__file__")
            if not (
                name.partition(".")[0] in standard
                or (isinstance(file, str) and file.startswith(home) and "site-packages" not in file)
            ):
                continue
            for attribute, value in list(space.items()):
                if isinstance(attribute, str) and not attribute.startswith("__") and callable(value) and foreign(value):
                    found.append(f"{name}.{attribute}")
        return found

    return rebound
