"""The test modules watched (``_test_modules``): when collection ends, each test module's imported names (its
``pytest``, ``from helpers import close``), its ``__builtins__`` and its own classes' attributes are taken, each
imported name checked against a fresh resolution, and its names against those its source binds; after every call
they are compared by identity (a name rebound, a method set on a test class, a name its code never binds: a
repository class put there as ``ZeroDivisionError``). Each is in the record's ``namespaces``."""

from typing import Any

from .sources import _bound_names


def _test_modules(record, held, handed_names, startup_modules, is_canary):
    # Returns watch(items) (when collection ends), check() (after every call and at the session's end) and
    # namespaces(), the namespaces watched (for the per-call gate's version tags).
    import ast
    import builtins as own_builtins
    import sys

    module_type, function_type, identity, missing = type(sys), type(lambda: None), object.__hash__, object()
    list_, map_, bound_names = list, map, _bound_names
    state: list[Any] = [((), held(()), (), (), (), [])]

    def note_namespace(label):
        if label not in record["namespaces"]:
            record["namespaces"].append(label)

    def imported(module, name, value):
        # A module, or a function or class another module defines: what ``import``/``from ... import`` bind.
        if name.startswith("__"):
            return False
        if isinstance(value, module_type):
            return True
        return isinstance(value, (type, function_type)) and getattr(value, "__module__", None) != module.__name__

    def fresh(value):
        # What the name resolves to now, from scratch: the module in sys.modules, the attribute of its module.
        if isinstance(value, module_type):
            return startup_modules.get(value.__name__) or sys.modules.get(value.__name__)
        owner = sys.modules.get(getattr(value, "__module__", None) or "")
        return getattr(owner, getattr(value, "__name__", ""), missing)

    def source_names(module):
        # The names the module's own code can bind (see _bound_names), None where that cannot be told.
        file = getattr(module, "__file__", None)
        found, names = handed_names(file)
        if found:
            return names
        if not isinstance(file, str) or not file.endswith(".py"):
            return None
        try:
            with open(file, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
            return bound_names(ast.parse(text), text)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def unbound(allowed, names):
        # Names in a test module's namespace its code never binds: put there by other code (a builtin's name
        # shadowed with the repository's class, so a test's ``pytest.raises(ZeroDivisionError)`` catches it).
        # Python's and pytest's own (dunders, the assertion rewriter's ``@py_`` names, xunit fixtures) are left.
        return sorted(
            name
            for name in names
            if name not in allowed
            and not (
                name[:2] == "__" == name[-2:]
                or name.startswith(("@py", "@pytest", "_pytest", "__pytest", "_Module__pytest"))
            )
        )

    def watch(items):
        # Each test module's imported names and its own classes' attributes, by identity: taken when
        # collection ends (each checked against a fresh resolution then), compared after every call. And its
        # names against those its source binds, then and whenever its namespace grows.
        modules = {}
        for item in items:
            module = getattr(item, "module", None)
            if isinstance(module, module_type) and not is_canary(item):
                modules[identity(module)] = module
        entries: list[Any]
        classes: list[Any]
        spaces: list[Any]
        entries, classes, spaces = [], [], []
        for module in modules.values():
            where = str(getattr(module, "__file__", module.__name__))
            allowed = source_names(module)
            if allowed is not None:
                for name in unbound(allowed, list(vars(module))):
                    note_namespace(f"{where} {name} (not bound by its code)")
                spaces.append((vars(module), where, allowed))
            # The builtins its functions look names up in (made from the module's ``__builtins__`` as each is
            # made, and read from it by every frame on 3.9): the builtins module's own.
            found = vars(module).get("__builtins__", missing)
            if found is not missing:
                entries.append((vars(module), "__builtins__", found, f"{where} __builtins__"))
                if found is not own_builtins and found is not vars(own_builtins):
                    note_namespace(f"{where} __builtins__")
            for name, value in list(vars(module).items()):
                if imported(module, name, value):
                    entries.append((vars(module), name, value, f"{where} {name}"))
                    if fresh(value) is not value:
                        note_namespace(f"{where} {name}")
                elif isinstance(value, type) and value.__module__ == module.__name__:
                    space = vars(value)
                    classes.append((space, f"{where} {name}", frozenset(space)))
                    entries += [(space, attr, v, f"{where} {name}.{attr}") for attr, v in space.items()]
        state[0] = (
            tuple(entries),
            held([(namespace, name, value) for namespace, name, value, _label in entries]),
            tuple(classes),
            tuple(len(namespace) for namespace, _label, _keys in classes),
            tuple(spaces),
            [len(namespace) for namespace, _where, _allowed in spaces],
        )

    def check():
        entries, changed, classes, sizes, spaces, counts = state[0]
        now = list_(map_(len, (namespace for namespace, _where, _allowed in spaces)))
        if now != counts:
            for namespace, where, allowed in spaces:
                for name in unbound(allowed, list(namespace)):
                    note_namespace(f"{where} {name} (not bound by its code)")
            counts[:] = now
        if changed():
            for namespace, name, value, label in entries:
                if namespace.get(name, missing) is not value:
                    note_namespace(label)
        if list_(map_(len, (namespace for namespace, _label, _keys in classes))) != list_(sizes):
            # A method set on a test class (an assertEqual that accepts anything); unittest's own bookkeeping
            # (a ``tearDown_exceptions`` list) is data, not a method.
            for namespace, label, keys in classes:
                added = [name for name in namespace if name not in keys and callable(namespace[name])]
                if added or any(name not in namespace for name in keys):
                    note_namespace(f"{label} (methods added or removed: {', '.join(sorted(added))})")

    def namespaces():
        entries, _changed, classes, _sizes, modules, _counts = state[0]
        found = [namespace for namespace, _name, _value, _label in entries]
        return (
            found
            + [namespace for namespace, _label, _keys in classes]
            + [namespace for namespace, _where, _names in modules]
        )

    return watch, check, namespaces
