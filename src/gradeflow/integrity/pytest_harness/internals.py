"""pytest's, pluggy's and the loaded plugins' machinery, whole (``_pytest_internals``): every callable, class, module
and descriptor of their modules and classes, taken before any conftest is imported and compared by identity when
collection ends, after each call (the modules a call goes through) and when the session ends; each collected
item's class, and at its call that the item still has that class and that function. Each difference is a
``patched`` label (``_pytest.raises.RaisesExc``)."""

from typing import Any


def _pytest_internals(workspace, record, versions, verdict_modules=((), ())):
    # pytest's, pluggy's and the loaded plugins' own machinery, whole: ``take`` (called once the plugins are
    # loaded, before any conftest or code of the repository is imported) keeps, by identity, every callable,
    # class, module and descriptor bound in the namespace of every module of ``pytest``, ``_pytest``,
    # ``pluggy``, the harness and each plugin registered by then, and in the ``__dict__`` of every class they
    # define. What pytest looks up as it runs lives there (``_pytest.raises.RaisesExc`` for ``pytest.raises``,
    # ``_pytest.python.Function`` for every collected test), so code under test that swaps one changes an
    # outcome without touching ``pytest``'s own names. ``full()`` compares all of it (when collection ends
    # and when the session ends), ``fast()`` the namespaces of the few modules a test's call goes through
    # (after each call); either compares a namespace's values only when its dict's version tag moved since its
    # last check (see _dict_versions; every one without tags). ``items(items)`` checks each collected item's class
    # and takes it and the function it will call; ``called(item)``, as its call starts, that the item is still
    # of that class and holds that very object (a bound method's function; no ``__wrapped__`` unwrapping). Each
    # difference is noted in ``patched`` (``_pytest.raises.RaisesExc``), which the grader compares with the base run's.
    import sys
    from operator import attrgetter, is_not

    prefix = (workspace or "/nonexistent").rstrip("/") + "/"
    module_type: Any
    module_type, function_type, method_type = type(sys), type(lambda: None), type((lambda: None).__get__(0))
    descriptors = (module_type, classmethod, staticmethod, property)
    type_dict, type_mro = type.__dict__["__dict__"].__get__, type.__dict__["__mro__"].__get__
    type_qualname, module_dict = type.__dict__["__qualname__"].__get__, module_type.__dict__["__dict__"].__get__
    # The modules a test's call goes through, and those that define its verdict helpers (see _verdict_modules;
    # unittest's are taken with pytest's).
    frequent = (
        "pytest",
        "_pytest.runner",
        "_pytest.python",
        "_pytest.raises",
        "_pytest.python_api",
        "_pytest.outcomes",
        "_pytest.reports",
        "_pytest.unittest",
        "pluggy._callers",
        "pluggy._hooks",
        "pluggy._result",
        *verdict_modules[0],
        *verdict_modules[1],
    )
    missing = object()
    # Objects told apart by identity with object.__hash__ (its address, unique among live objects, as id() is, and
    # never a method of the object's own class): builtins.id is an audited event, the hook's cost thousands of times.
    any_, map_, len_, list_, type_, id_ = any, map, len, list, type, object.__hash__
    value_of = attrgetter("value")
    # One group per namespace: [namespace, its label, the kept names, their values, every key it held]; the
    # version tag of each (see _dict_versions) and its value when last checked; ``fast``: the groups of the
    # modules a test's call goes through.
    state: dict[str, Any] = {
        "groups": [],
        "tags": None,
        "seen": [],
        "fast": (),
        "known": frozenset(),
        "kinds": set(),
        "objects": {},
    }

    def note(label):
        if label not in record["patched"]:
            record["patched"].append(label)

    def kept(value):
        return isinstance(value, descriptors) or callable(value)

    def ours(name, extra):
        return (
            name in ("pytest", "_pytest", "pluggy")
            or name.startswith(("pytest.", "_pytest.", "pluggy."))
            or name in extra
        )

    def repository_file(file):
        # A file of the repository other than its tests and conftest files.
        if type_(file) is not str or not file.startswith(prefix):
            return False
        name = file.rpartition("/")[2]
        return not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")

    def legacy(value):
        # pytest's legacypath plugin adds its helpers to pytest's classes as it starts (``Cache.makedir``, its
        # own ``Config._getini_unknown_type``): one of its module's functions, or a property made of one.
        value = value.fget if type_(value) is property else value
        module = sys.modules.get("_pytest.legacypath")
        return (
            type_(value) is function_type
            and module is not None
            and module_dict(module).get(value.__name__) is value
            and value.__module__ == "_pytest.legacypath"
        )

    def group(space, label):
        names, values = [], []
        for name, value in list(space.items()):
            if kept(value):
                names.append(name)
                values.append(value)
        return [space, label, tuple(names), tuple(values), tuple(space)]

    lazy = set()

    def take(pm, own):
        extra = {own, *verdict_modules[1]}
        for plugin in pm.get_plugins():
            extra.add(plugin.__name__ if type_(plugin) is module_type else type_dict(type_(plugin)).get("__module__"))
        groups: list[Any]
        groups, known, fast = [], set(), []
        for name, module in list(sys.modules.items()):
            if type_(module) is not module_type or not ours(name, extra):
                continue
            space = module_dict(module)
            file = space.get("__file__")
            if type_(file) is str and file.startswith(prefix):
                continue
            if name in frequent:
                fast.append(len(groups))
            groups.append(group(space, name))
            for value in list(space.values()):
                if isinstance(value, type):
                    known.add(id_(value))
                    if type_dict(value).get("__module__") == name:
                        groups.append(group(type_dict(value), f"{name}.{type_qualname(value)}"))
                        if "__getattr__" in type_dict(type_(value)):
                            # Its metaclass makes class attributes as they are read (pytest 6's ``Junit``, a
                            # py.xml namespace, makes a tag class per name): an added one is no replacement.
                            lazy.add(f"{name}.{type_qualname(value)}")
        tags = [versions(each[0]) for each in groups] if versions is not None else None
        if tags is not None and None not in tags:
            state.update(tags=tuple(tags), seen=list_(map_(value_of, tags)))
        state.update(groups=groups, fast=tuple(fast), known=frozenset(known))

    def check(indices):
        # The groups at ``indices`` against their namespaces now: each value replaced or removed, each callable
        # added, noted once; then the namespace as it is now is taken as the group's new state (a change that
        # stays, like pytest's legacypath plugin patching ``Config`` as it starts, is noted once).
        groups, tags, seen = state["groups"], state["tags"], state["seen"]
        for index in indices:
            tag = tags[index].value if tags is not None else None  # read before the values (see _held)
            space, label, names, values, keys = groups[index]
            now = tuple(space.get(name, missing) for name in names)
            if any_(map_(is_not, now, values)):
                for name, before, after in zip(names, values, now):
                    if after is not before and not legacy(after):
                        note(f"{label}.{name}")
            if label not in lazy and (len_(space) != len_(keys) or any_(key not in space for key in keys)):
                before = frozenset(keys)
                for name, value in list(space.items()):
                    if name not in before and callable(value) and type_(value) is not module_type and not legacy(value):
                        note(f"{label}.{name} (added)")
            groups[index] = group(space, label)
            if tags is not None:
                seen[index] = tag

    def moved(indices):
        # Those of the groups at ``indices`` whose namespace was written to since it was last checked (all of
        # them where there are no version tags).
        tags, seen = state["tags"], state["seen"]
        if tags is None:
            return indices
        return [index for index in indices if tags[index].value != seen[index]]

    def full():
        check(moved(range(len_(state["groups"]))))

    def fast():
        # After a call that wrote to a watched namespace (see gate in _make_harness): the frequent modules'
        # namespaces whose tag moved.
        check(moved(state["fast"]))

    def where(value):
        # The file of a function's code (the repository's relative to it), else the object's type.
        value = value.__func__ if type_(value) is method_type else value
        if type_(value) is function_type:
            file = value.__code__.co_filename
            return file[len(prefix) :] if file.startswith(prefix) else file
        kind = type_(value)
        return f"<{type_dict(kind).get('__module__', '?')}.{type_qualname(kind)}>"

    def class_problem(klass):
        # None when the class is where it says it was made, outside the repository's own (non-test) files.
        space = type_dict(klass)
        module = sys.modules.get(space.get("__module__") or "")
        if type_(module) is not module_type:
            return "its module is not loaded"
        if repository_file(module_dict(module).get("__file__")):
            return "defined by the repository"
        value: Any = module
        for part in type_qualname(klass).split("."):
            kind = type_(value)
            value = (
                module_dict(value) if kind is module_type else type_dict(value) if isinstance(value, type) else {}
            ).get(part)
        if value is not klass:
            return "not the class its module holds under that name"
        for value in list(space.values()):
            value = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            value = value.fget if isinstance(value, property) else value
            if type_(value) is function_type and repository_file(value.__code__.co_filename):
                return f"code from {where(value)}"
        return None

    def items(collected):
        objects, kinds, known = state["objects"], state["kinds"], state["known"]
        for item in collected:
            kind = type_(item)
            if id_(kind) not in kinds:
                kinds.add(id_(kind))
                for klass in type_mro(kind):
                    problem = None if id_(klass) in known else class_problem(klass)
                    if problem is not None:
                        note(
                            f"collected item class {type_dict(klass).get('__module__')}."
                            f"{type_qualname(klass)} ({problem})"
                        )
            try:
                value = item.obj
            except Exception:
                value = missing
            objects[id_(item)] = (item, value.__func__ if type_(value) is method_type else value, kind)

    def called(item):
        taken = state["objects"].get(id_(item))
        if taken is None:
            return
        if type_(item) is not taken[2]:
            # ``item.__class__`` assigned after collection (a subclass whose runtest swallows failures).
            kind = type_(item)
            note(
                f"a collected test's class (replaced after collection by {type_dict(kind).get('__module__')}."
                f"{type_qualname(kind)})"
            )
        if taken[1] is missing:
            return
        try:
            value = item.obj
        except Exception:  # pytest's own call raises the same
            return
        if (value.__func__ if type_(value) is method_type else value) is not taken[1]:
            note(f"a collected test's function (replaced after collection by {where(value)})")

    def fast_spaces():
        # (namespace, label) of the modules a test's call goes through.
        return [(state["groups"][index][0], state["groups"][index][1]) for index in state["fast"]]

    return take, full, fast, items, called, fast_spaces
