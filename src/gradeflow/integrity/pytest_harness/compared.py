"""Compared values (``_compared_values``): pytest's assertion rewrite is wrapped so that each operand of an assert's
comparison, a bare assert's value and ``self.assert...``'s first arguments pass through a probe that returns them
unchanged and notes, per test and place, whether a class of the repository decides the comparison (``r``) or the
value equals anything (``a``): the record's ``compared``, judged against the base run's
(``equality-from-repository``, ``equal-to-anything``). pytest's rewrite cache of the workspace is neither read nor
written."""

from typing import Any


def _compared_values(workspace, record, compared_kind=None):
    # Issue 22, compared values: what a test's assertions compare, and where the equality of each operand
    # comes from. pytest's assertion rewrite is wrapped (the module attribute, replaced once here, before any
    # test module is rewritten): after pytest rewrote a module, each comparison of an assert (and the value of
    # a bare assert, and the first two arguments of a ``self.assert...`` call) is passed through a probe that
    # returns it unchanged; pytest's explanation text was made before, so failure messages do not change.
    # During a test's call the probe notes, per ``file:line:operand:operator``, the operand's type and whether
    # the methods deciding the comparison (``__eq__``, ``__ne__``, ``__contains__``, ordering, ``__bool__``)
    # are defined by a class of the repository (``r``) or elsewhere (``e``: builtins, stdlib, installed
    # packages). The grader compares that with a trusted run's. Returns the function that names the test
    # whose call is running (``None`` between calls). ``compared_kind`` is handed each type the probe looked at (an
    # operand's, or an element's of a container) whose equality comes from elsewhere and whose namespace can be
    # written (not a static type): the check of writes made during the call looks at its MRO (see _call_writes).
    import ast
    import os
    import re
    import sys
    import weakref

    import _pytest.assertion.rewrite as rewrite

    prefix = (workspace or "/nonexistent").rstrip("/") + "/"
    compared_kind = (lambda kind: None) if compared_kind is None else compared_kind
    keys: list[Any]
    origins: dict[Any, Any]
    compared: dict[str, dict[str, str]] = {}
    record["compared"] = compared
    current, keys, origins = [None], [], {}
    type_dict, type_mro = type.__dict__["__dict__"].__get__, type.__dict__["__mro__"].__get__
    type_flags, type_qualname = type.__dict__["__flags__"].__get__, type.__dict__["__qualname__"].__get__
    module_type, module_dict = type(sys), type(sys).__dict__["__dict__"].__get__  # type: ignore[index]
    # id_: identity without an audited builtins.id (see _pytest_internals)
    modules, isabs, join, getcwd, id_, type_ = (
        sys.modules,
        os.path.isabs,
        os.path.join,
        os.getcwd,
        object.__hash__,
        type,
    )
    heap, str_, function_type = 1 << 9, str, type(lambda: None)
    ordering = ("__lt__", "__le__", "__gt__", "__ge__")
    methods = {
        ast.Eq: ("__eq__",),
        ast.NotEq: ("__ne__", "__eq__"),
        ast.In: ("__contains__", "__eq__"),
        ast.NotIn: ("__contains__", "__eq__"),
        ast.Lt: ordering,
        ast.LtE: ordering,
        ast.Gt: ordering,
        ast.GtE: ordering,
    }
    asserting: dict[str, tuple[str, ...]] = {
        name: ("__eq__",)
        for name in (
            "assertEqual",
            "assertEquals",
            "failUnlessEqual",
            "assertListEqual",
            "assertTupleEqual",
            "assertDictEqual",
            "assertSetEqual",
            "assertSequenceEqual",
            "assertCountEqual",
            "assertMultiLineEqual",
            "assertAlmostEqual",
            "assertAlmostEquals",
        )
    }
    asserting.update(dict.fromkeys(("assertNotEqual", "assertNotEquals", "assertNotAlmostEqual"), ("__ne__", "__eq__")))
    asserting.update(dict.fromkeys(("assertIn", "assertNotIn"), ("__contains__", "__eq__")))
    asserting.update(dict.fromkeys(("assertGreater", "assertGreaterEqual", "assertLess", "assertLessEqual"), ordering))
    load = ast.Load()  # one context for every node made, as the parser shares its own
    truth, truthy = ("__bool__", "__len__"), frozenset(("assertTrue", "assertFalse", "failUnless", "failIf"))

    def in_workspace(file):
        if type_(file) is not str_ or file.startswith("<"):
            return False
        return (file if isabs(file) else join(getcwd(), file)).startswith(prefix)

    def code_of(value):
        # Only exact functions and their static or class method wrappers: reading an attribute of any other
        # object could run the repository's code.
        for _ in range(4):
            kind = type_(value)
            if kind is function_type:
                return value.__code__
            if kind is not staticmethod and kind is not classmethod:
                return None
            value = value.__func__
        return None

    def resolves(klass):
        # The class is where it says it was made: its module (a real module of sys.modules) holds it under
        # its qualified name, and that module's file is outside the workspace.
        name = type_dict(klass).get("__module__")
        found = modules.get(name) if type_(name) is str_ else None
        if type_(found) is not module_type or in_workspace(module_dict(found).get("__file__")):
            return False
        value = found
        for part in type_qualname(klass).split("."):
            kind = type_(value)
            space = module_dict(value) if kind is module_type else type_dict(value) if issubclass(kind, type) else {}
            value = space.get(part)
        return value is klass

    def origin(klass, attribute):
        if not type_flags(klass) & heap:
            return "e"  # a static type: builtins or a compiled extension
        code = code_of(attribute)
        if code is not None and in_workspace(code.co_filename):
            return "r"
        return "e" if resolves(klass) else "r"

    def fingerprint(kind, names):
        for name in names:
            for klass in type_mro(kind):
                namespace = type_dict(klass)
                if name in namespace:
                    attribute = namespace[name]
                    key = (id_(klass), id_(attribute))
                    found = origins.get(key)
                    if found is None:
                        found = origins[key] = (origin(klass, attribute), klass, attribute)
                    if found[0] == "r":
                        return f"r {type_qualname(kind)} ({type_qualname(klass)}.{name})"
                    break
        return f"e {type_qualname(kind)}"

    class Nothing:
        # Equal to nothing but itself: a value equal to an instance is equal to anything.
        __slots__ = ()

    nothing = Nothing()

    def equal_to_anything(value):
        # Asked only of values whose equality comes from elsewhere (``unittest.mock.ANY``, say): the
        # repository's own classes are already told apart by where their methods are defined.
        try:
            return (value == nothing) is True
        except Exception:
            return False

    # A weak proxy hands every comparison (and ``__class__``) to the object it refers to, whose class it hides: its
    # type is the standard library's, its rules are its referent's. So a proxy is the repository's rule (``r``)
    # unless it equals anything (``a``); an honest test rarely compares one, and the base run's entry is the judge.
    proxies = frozenset({weakref.ProxyType, weakref.CallableProxyType})

    def proxy_print(value, names):
        if "__eq__" in names and equal_to_anything(value):
            return f"a {type_qualname(type_(value))} (equal to anything)"
        return f"r {type_qualname(type_(value))} (its referent's rules)"

    statics: dict[int, str] = {}  # id of a static type -> its fingerprint (every class of its MRO is static too: "e")
    containers = frozenset({list, tuple, set, frozenset, dict})
    from itertools import chain

    def members(value):
        return chain(value.keys(), value.values()) if type_(value) is dict else value

    def element_print(value, depth):
        # A built-in container compares its elements (a dict its keys and values) by their own rules: the first
        # element whose equality the repository defines (``r``) or that equals anything (``a``), nested
        # containers followed three deep; None when every element's rule is from elsewhere. The element types
        # are gathered in C (a million ints cost some 20 ms); only exact built-in containers are walked, so no
        # method of the repository runs but an ``__eq__`` asked whether it equals anything (as for a value).
        for kind in set(map(type_, members(value))):
            if kind in proxies:
                for inner in members(value):
                    if type_(inner) is kind:
                        return proxy_print(inner, ("__eq__",))
            if kind in containers:
                if depth < 3:
                    for inner in members(value):
                        if type_(inner) is kind and inner:
                            found = element_print(inner, depth + 1)
                            if found is not None:
                                return found
                continue
            if not type_flags(kind) & heap:
                continue
            found = fingerprint(kind, ("__eq__",))
            if found[0] == "r":
                return found
            compared_kind(kind)
            for inner in members(value):
                if type_(inner) is kind and equal_to_anything(inner):
                    return f"a {type_qualname(kind)} (equal to anything)"
                if type_(inner) is kind:
                    break  # one instance asked per type
        return None

    def note(test, number, value):
        kind = type_(value)
        place, names = keys[number]
        entries = compared.get(test)
        if entries is None:
            if len(compared) >= 20000:
                return
            entries = compared[test] = {}
        before = entries.get(place)
        if before is None and len(entries) >= 200:
            return
        if before is None or before[0] == "e":
            if kind in proxies:
                entries[place] = proxy_print(value, names)
                return
            if not type_flags(kind) & heap:  # a static type (builtins, an extension's): its answer never changes
                found = statics.get(id_(kind))
                if found is None:
                    found = statics[id_(kind)] = fingerprint(kind, names)
                if kind in containers and value and "__eq__" in names:
                    inner = element_print(value, 0)
                    if inner is not None:
                        found = f"{inner[0]} {type_qualname(kind)} of {inner[2:]}"
                entries[place] = found
                return
            found = fingerprint(kind, names)
            if found[0] == "e":
                compared_kind(kind)
                if "__eq__" in names and type_flags(kind) & heap and equal_to_anything(value):
                    found = f"a {type_qualname(kind)} (equal to anything)"
            entries[place] = found

    def probed(node, path, line, index, names):
        if isinstance(node, ast.Starred):
            return node
        keys.append((f"{path}:{line}:{index}:{'/'.join(names)}", names))
        at = {
            "lineno": node.lineno,
            "col_offset": node.col_offset,
            "end_lineno": node.end_lineno,
            "end_col_offset": node.end_col_offset,
        }
        helper = ast.Attribute(ast.Name("@pytest_ar", load, **at), "_call_compared", load, **at)
        return ast.Call(helper, [node, ast.Constant(len(keys) - 1, **at)], [], **at)

    def probe_compare(node, path, line, done, constants=frozenset()):
        # ``constants``: names just assigned a literal (pytest's rewrite puts ``6`` of ``== 6`` in a temporary):
        # a literal's type is a built-in one in every run, so its side needs no probe.
        names = methods.get(type(node.ops[0])) if len(node.ops) == 1 else None
        if names is not None and node not in done:  # AST nodes hash by identity, without an audited id()
            done.add(node)
            if not literal(node.left, constants):
                node.left = probed(node.left, path, line, 0, names)
            if not literal(node.comparators[0], constants):
                node.comparators[0] = probed(node.comparators[0], path, line, 1, names)

    def literal(node, constants):
        return isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in constants)

    # statement type -> its fields holding statements (none for most: assignments, expressions)
    blocks: dict[type, tuple[str, ...]] = {}

    def statements(body):
        # Every statement, nested ones included, without walking expressions (a module's expressions are
        # many; its asserts few).
        for each in bodies(body):
            yield from each

    def bodies(body, places=frozenset()):
        # Every list of statements (a module's, a function's, an ``if``'s...), each in its own order. Not those
        # of an ``if`` at one of ``places`` (an assert's): pytest's rewrite put it there, and its body only
        # formats the failure message (a dozen statements per assert, never probed).
        stack = [body]
        while stack:
            current = stack.pop()
            yield current
            for node in current:
                kind = type(node)
                if kind is ast.If and places and (node.lineno, node.col_offset) in places:
                    continue
                fields = blocks.get(kind)
                if fields is None:
                    fields = blocks[kind] = tuple(
                        f for f in ("body", "orelse", "finalbody", "handlers", "cases") if f in kind._fields
                    )
                for field in fields:
                    value = getattr(node, field, None)
                    if value and (field == "handlers" or field == "cases"):
                        stack += [part.body for part in value]
                    elif value:
                        stack.append(value)

    kinds: dict[type, tuple[str, ...]] = {}  # node type -> its fields

    def compares(root):
        # The comparisons in an assert's expression, in ast.walk's order, without its two generators per node
        # (an assert's expression is small; a module's asserts many).
        found, queue, position = [], [root], 0
        while position < len(queue):
            node = queue[position]
            position += 1
            if isinstance(node, ast.Compare):
                found.append(node)
            fields = kinds.get(type(node))
            if fields is None:
                fields = kinds[type(node)] = type(node)._fields
            for field in fields:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    queue.append(value)
                elif isinstance(value, list):
                    queue += [item for item in value if isinstance(item, ast.AST)]
        return found

    keywords = re.compile(rb"\b(?:in|is)\b").findall

    def operators(lines, node):
        # How many comparison operators the node's source text could hold, counted over: every operator of a
        # ``Compare`` is written there (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``is``, each ``not``
        # form), so a text with at most one holds no comparison but the node's own. ``lines``: the module's
        # source (ASCII) split as Python splits lines; the node's offsets count bytes.
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            text = lines[first][node.col_offset : node.end_col_offset]
        else:
            text = b"\n".join(
                [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
            )
        count = text.count(b"==") + text.count(b"!=") + text.count(b"<") + text.count(b">")
        if count < 2 and (b"in" in text or b"is" in text):
            count += len(keywords(text))
        return count

    def asserted(mod, source=b""):
        # Before pytest's rewrite: where the asserts are, the comparisons inside them that pytest leaves in
        # place (in a generator, a lambda), and the ``self.assert...`` calls. An assert whose text holds at most
        # one comparison operator is not walked for more (see operators).
        places, nested, calls = set(), [], []
        # ASCII only: another encoding's bytes (a coding cookie) are not the UTF-8 the offsets count.
        lines = source.splitlines() if type(source) is bytes and source.isascii() else None
        for node in statements(mod.body):
            if isinstance(node, ast.Assert):
                places.add((node.lineno, node.col_offset))
                if lines is not None:
                    try:
                        count = operators(lines, node.test)
                    except (IndexError, TypeError):  # offsets that are not the text's: walked
                        count = 2
                    if count == 0 or (count == 1 and type(node.test) is ast.Compare):
                        continue
                found = compares(node.test)
                # An assert's own comparison (``assert a == b``) is the one pytest always takes apart (its
                # visit_Compare makes new nodes): never left in the tree, so never probed where it stood.
                nested += found[1:] if found and found[0] is node.test else found
            elif (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and unittest_assertion(node.value.func)
            ):
                calls.append(node.value)
                for argument in node.value.args[:2]:  # ``assertTrue(a == b)``: the comparison inside, too
                    nested += compares(argument)
        return places, nested, calls

    def instrument(mod, path, places, nested, calls):
        # After it: pytest assigns each comparison of an assert (``@py_assert3 = @py_assert1 == @py_assert2``)
        # and tests the assert's value (``if not @py_assert3: raise``) in statements at the assert's place; a
        # value that is a comparison's result needs no probe of its truth (the comparison has one).
        # A temporary pytest assigned a literal counts as one until the same list of statements assigns it
        # anything else (a comparison in a nested list never takes a literal from its parent's).
        done: set[Any]
        results: set[str]
        names: Any
        done, results = set(), set()
        lines = frozenset(line for line, _column in places)  # an int looked up first: no tuple for most statements
        assign, if_, name_, constant, compare, unary, not_ = (
            ast.Assign,
            ast.If,
            ast.Name,
            ast.Constant,
            ast.Compare,
            ast.UnaryOp,
            ast.Not,
        )
        for body in bodies(mod.body, places):
            constants = set()
            for node in body:
                if node.lineno not in lines or (node.lineno, node.col_offset) not in places:
                    continue
                kind = type(node)  # pytest's rewrite makes exact node types, as the parser does
                if kind is assign:
                    targets, value = node.targets, node.value
                    if type(value) is constant and len(targets) == 1 and type(targets[0]) is name_:
                        constants.add(targets[0].id)
                        continue
                    names = [target.id for target in targets if type(target) is name_]
                    if constants:
                        constants.difference_update(names)
                    if type(value) is compare:
                        probe_compare(value, path, node.lineno, done, constants)
                        results.update(names)
                elif kind is if_:
                    test = node.test
                    if type(test) is unary and type(test.op) is not_:
                        value = test.operand
                        if not (type(value) is name_ and value.id in results):
                            test.operand = probed(value, path, node.lineno, 0, truth)
        for node in nested:  # still in the tree, or left behind by pytest (then harmless)
            probe_compare(node, path, node.lineno, done)
        for node in calls:
            names, count = (truth, 1) if node.func.attr in truthy else (asserting[node.func.attr], 2)
            node.args[:count] = [probed(a, path, node.lineno, i, names) for i, a in enumerate(node.args[:count])]

    def unittest_assertion(func):
        # ``self.assertEqual(...)`` and its kin, as written in a test module.
        return (
            isinstance(func, ast.Attribute)
            and (func.attr in asserting or func.attr in truthy)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        )

    original, read_pyc, write_pyc = rewrite.rewrite_asserts, rewrite._read_pyc, rewrite._write_pyc

    # The functions set on pytest's rewrite module (the code under test reaches them) hold nothing in a closure:
    # ``__closure__`` is read without an audit event, and ``note``'s leads to ``compared``, the record's own
    # entry, before it is signed. Their state is in keyword-only defaults, whose reads the audit hook refuses.
    def probe(value, number, *, _current=current, _note=note):
        test = _current[0]
        if test is not None:
            try:
                _note(test, number, value)
            except Exception:  # the probe never changes what the test sees
                pass
        return value

    def rewrite_asserts(
        mod,
        source,
        module_path=None,
        config=None,
        *,
        _prefix=prefix,
        _asserted=asserted,
        _original=original,
        _instrument=instrument,
        _import=ast.Import,
    ):
        # The workspace's test modules and conftest files only: installed packages' pytest plugins (xdist's)
        # are rewritten by pytest as they always are, and keep their bytecode cache.
        if not str(module_path).startswith(_prefix):
            return _original(mod, source, module_path, config)
        found = _asserted(mod, source)
        _original(mod, source, module_path, config)
        for node in mod.body:  # a loop, not a generator: a generator's code would close over _import
            if isinstance(node, _import) and node.names[0].asname == "@pytest_ar":
                _instrument(mod, str(module_path), *found)
                break

    rewrite.rewrite_asserts = rewrite_asserts
    rewrite._call_compared = probe  # type: ignore[attr-defined]

    # Probed code exists only in this process: pytest's rewrite cache of the workspace's modules
    # (``__pycache__/*-pytest-*.pyc``, or under PYTHONPYCACHEPREFIX) is neither written, or a later plain pytest
    # would run code calling a probe it has not got, nor read, or a module cached by a plain run (or planted by
    # the candidate) would run unprobed.
    def _pyc_read(source, pyc, trace=lambda x: None, *, _prefix=prefix, _read=read_pyc):
        return None if str(source).startswith(_prefix) else _read(source, pyc, trace)

    def _pyc_write(state, co, source_stat, pyc, *, _prefix=prefix, _write=write_pyc):
        return False if co.co_filename.startswith(_prefix) else _write(state, co, source_stat, pyc)

    rewrite._read_pyc = _pyc_read
    rewrite._write_pyc = _pyc_write

    def running(nodeid):
        current[0] = nodeid

    return running
