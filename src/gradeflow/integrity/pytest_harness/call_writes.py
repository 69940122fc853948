"""Writes during a call (``_call_writes``), seen even when put back before the call ended: the version tags of the
namespaces a verdict is looked up in (``_verdict_modules`` and ``_verdict_spaces``: pytest's verdict helpers,
unittest's, the assertion rewriter's, the builtins however reached), of a unittest test's own classes and of the
classes whose equality the compared-values probe saw, against CPython's version counter taken as the call started:
``<namespace> (written during a test's call)`` in ``patched``. The builtins are also compared by identity after
every call."""

from typing import Any

import pytest

from .versions import _held


def _verdict_modules():
    # The modules that define what decides a test's verdict, by what the objects say, not by a list of names: pytest's
    # (``pytest.raises``, ``approx``, ``warns``, ``fail``, ``skip``, ``xfail``, ``importorskip``,
    # ``deprecated_call``, ``exit`` and the ``ExceptionInfo`` a ``raises`` fills: _pytest.python_api on pytest 7,
    # _pytest.raises and _pytest.approx on 9) and unittest's (TestCase's module and the modules of the functions it
    # takes from its own package). [pytest's, unittest's], each name once.
    import sys
    import unittest.case

    helpers = (
        "raises",
        "approx",
        "warns",
        "fail",
        "skip",
        "xfail",
        "importorskip",
        "deprecated_call",
        "exit",
        "RaisesExc",
        "RaisesGroup",
        "ExceptionInfo",
    )
    ours = [getattr(getattr(pytest, name, None), "__module__", None) for name in helpers]
    case = unittest.case.TestCase.__module__
    package = case.partition(".")[0] + "."
    function_type = type(lambda: None)
    theirs = [case] + [
        value.__module__
        for value in list(vars(sys.modules[case]).values())
        if type(value) is function_type and str(value.__module__).startswith(package)
    ]
    return [list(dict.fromkeys(name for name in names if type(name) is str)) for names in (ours, theirs)]


def _verdict_spaces(modules):
    # The namespaces a test's verdict is looked up in while it runs, [(namespace, label)], each once: pytest itself,
    # the modules of _verdict_modules and the assertion rewriter's helpers, each with the classes it defines; and the
    # builtins module's dict, the one ``builtins``, ``__builtins__``, ``len.__self__``, ``sys.modules['builtins']``
    # and ``vars()`` all reach.
    import builtins
    import sys

    import _pytest.assertion.rewrite
    import _pytest.assertion.util  # noqa: F401 (loaded, so that sys.modules holds it)

    names = ["pytest", "_pytest.assertion.rewrite", "_pytest.assertion.util", *modules[0], *modules[1]]
    found: list[tuple[Any, str]]
    found, seen = [(vars(builtins), "builtins")], {object.__hash__(vars(builtins))}
    code = (type(lambda: None), classmethod, staticmethod, property)
    for name in names:
        module = sys.modules.get(name) if type(name) is str else None
        if type(module) is not type(sys) or object.__hash__(module) in seen:
            continue
        seen.add(object.__hash__(module))
        found.append((vars(module), name))
        for value in list(vars(module).values()):
            # A class with code of its own (a warning class has none: what judges it is issubclass).
            if not (isinstance(value, type) and any(type(each) in code for each in vars(value).values())):
                continue
            if vars(value).get("__module__") == name and object.__hash__(value) not in seen:
                seen.add(object.__hash__(value))
                found.append((value, f"{name}.{value.__qualname__}"))
    return found


def _call_writes(versions, record, note, workspace, modules):
    # Issue 33: a write made during a test's call to what decides its verdict, seen even when it was put back before
    # the call ended (``fail`` of pytest's raises module and ``matches`` of its class swapped for functions that put
    # the originals back as they are called: ``pytest.raises`` then accepts "nothing raised", and every check made
    # after the call finds the originals). The namespaces are _verdict_spaces', the classes of each unittest test's
    # MRO defined in the workspace (an ``assertEqual`` is looked up there first), and the classes whose methods
    # decided a comparison the compared-values probe saw in the call (``compared(kind)``, called by the probe with
    # the type of each operand whose equality comes from elsewhere: written after the probe saw it, as a swap armed
    # once the probe has looked and put back after the comparison is; a class the call made is written as it is
    # made). Honest pytest runs write none of them during a call (pytest's own per-call write is
    # ``sys.last_value`` and its kin, in ``sys``).
    #
    # ``start(item)`` as a call starts takes the value of CPython's dict version counter (a write to a dict of our
    # own: see _dict_versions); ``after(now, settled)`` as it ends is handed the values of the tags of the namespaces
    # ``spaces(...)`` listed (first in the per-call gate's one pass) and notes each whose tag is past that value, and
    # each class ``compared`` was handed whose tag moved since: "<label> (written during a test's call)". Which
    # name was written is not known when it was put back (no audit event is raised by a write to a module's or a
    # class's namespace); one that stayed is named by the per-call checks. A doctest's call (pytest's own item)
    # runs its examples as the interactive interpreter does, whose display hook sets
    # ``builtins._``: there the builtins are left to ``rebound``, which sees a name rebound that stayed.
    # ``rebound()`` compares every name of the builtins module with its value when the harness started, by
    # identity (``ZeroDivisionError`` bound to another standard class), with tags or without. Where this Python
    # keeps no tags (3.14, another layout) a write put back before its call ended is not seen: the record says so
    # (``call_writes``).
    import builtins
    import gc
    import sys

    type_mro, type_flags = type.__dict__["__mro__"].__get__, type.__dict__["__flags__"].__get__
    type_dict, identity, heap, module_type = type.__dict__["__dict__"].__get__, object.__hash__, 1 << 9, type(sys)
    type_qualname = type.__dict__["__qualname__"].__get__
    prefix = (workspace or "/nonexistent").rstrip("/") + "/"
    kinds: dict[int, Any]
    readers: dict[int, Any]
    kinds, readers, missing = {}, {}, object()
    static = _verdict_spaces(modules)
    state: dict[str, Any] = {"started": None, "labels": (), "skip": None, "doctest": None, "builtins": None, "alone": 0}
    clock_space = {0: False}
    clock = versions(clock_space) if versions is not None else None
    record["call_writes"] = (
        "version tags: a write during a call is seen, put back or not"
        if clock is not None
        else "values only (no dict version tags on this Python): a write put back before its call ended is not seen"
    )
    space = vars(builtins)
    entries = tuple(space.items())
    builtins_changed = _held([(space, name, value) for name, value in entries], versions)

    def underlying(value):
        # The dict behind a namespace (a class's mappingproxy holds it), so each is looked at once.
        if isinstance(value, type):
            value = type_dict(value)
        if type(value) is not dict:
            inner = gc.get_referents(value)
            value = inner[0] if len(inner) == 1 and type(inner[0]) is dict else value
        return value

    def label_of(klass):
        return f"{type_dict(klass).get('__module__')}.{type_qualname(klass)}"

    def workspace_class(klass):
        module = sys.modules.get(type_dict(klass).get("__module__") or "")
        file = vars(module).get("__file__") if type(module) is module_type else None
        return type(file) is str and file.startswith(prefix)

    def spaces(items, case_function, more, watched):
        # The namespaces to look at after each call, each once, in the order ``after`` is handed their tags: first
        # those no other per-call check reads a tag of, then those ``watched`` holds (identities of their dicts),
        # and how many come first. They are ours, ``more`` ((namespace, label): what the per-call checks of
        # pytest's machinery watch) and the test classes'.
        found = static + more
        for item in items:
            kind = getattr(item, "cls", None) if isinstance(item, case_function) else None  # a unittest test's
            if isinstance(kind, type):
                found += [
                    (klass, label_of(klass))
                    for klass in type_mro(kind)
                    if type_flags(klass) & heap and workspace_class(klass)
                ]
        doctest = sys.modules.get("_pytest.doctest")
        state["doctest"] = vars(doctest).get("DoctestItem") if type(doctest) is module_type else None
        unique: dict[int, Any] = {}
        for value, label in found:
            space = underlying(value)
            unique.setdefault(identity(space), (space, label))
        ordered = sorted(unique.items(), key=lambda pair: pair[0] in watched)  # stable: alone first
        state["labels"] = tuple(label for _key, (_space, label) in ordered)
        state["builtins"] = state["labels"].index("builtins")
        state["alone"] = alone = sum(1 for key, _entry in ordered if key not in watched)
        return [space for _key, (space, _label) in ordered], alone

    def start(item):
        if clock is not None:
            state["skip"] = state["builtins"] if type(item) is state["doctest"] else None
            kinds.clear()
            clock_space[0] = clock_space[0] is False
            state["started"] = clock.value

    def after(now, settled=False):
        # ``settled``: no namespace another per-call check watches was written since the last call ended, so only
        # those no other check watches (the first tags) can have been written during this one.
        started, labels = state["started"], state["labels"]
        state["started"] = None
        if started is None:
            return
        skip, count = state["skip"], state["alone"] if settled else len(labels)
        if count and max(now[:count]) > started:
            for index in range(count):
                if now[index] > started and index != skip:
                    note(f"{labels[index]} (written during a test's call)")
        for seen in list(kinds.values()):
            for klass, tag, since in seen:
                if tag.value > since:
                    note(f"{label_of(klass)} (written during a test's call)")

    def compared(kind):
        started = state["started"]
        if started is None or identity(kind) in kinds:
            return
        found = readers.get(identity(kind))
        if found is None:
            classes = [klass for klass in type_mro(kind) if type_flags(klass) & heap]
            found = readers[identity(kind)] = (kind, [(klass, versions(type_dict(klass))) for klass in classes])
        kinds[identity(kind)] = [(klass, tag, max(started, tag.value)) for klass, tag in found[1] if tag is not None]

    def rebound():
        if builtins_changed():
            for name, value in entries:
                if space.get(name, missing) is not value:
                    note(f"builtins.{name}")

    return spaces, start, after, rebound, compared, underlying
