"""Test code served from memory (``_serve_sources``): a finder first in ``sys.meta_path`` compiles each test module and
conftest file from the text the grader handed over (a hidden test is an empty file on the run's disk), with
pytest's assertion rewriting and never from or to a bytecode cache. It notes a finder no longer first, a handed
module loaded some other way and a ``conftest.py`` the grader did not hand over (``patched``, ``conftests``).
``_bound_names``: the names a module's own code can bind, for the test modules' namespace check."""

from typing import Any


def _bound_names(tree, text):
    # Every name a module's own code can bind in its namespace (an over-count: names its module-level code
    # stores anywhere, a comprehension's too, its functions' and classes' names, and names its functions
    # declare global), from its parsed source; None where its code binds names no reading can list (globals(),
    # vars(), exec, a star import, its own __dict__ or entry in sys.modules). Only module-level code is walked,
    # unless the text declares a name global somewhere.
    import ast
    import re

    # The patterns only where their words are in the text at all (a substring test, in C): at a thousand tests the
    # pattern's alternation at every position of every test module cost more than the rest of this function.
    if (
        any(word in text for word in ("globals", "vars", "exec", "eval", "locals", "__import__", "__dict__", "modules"))
        or ("*" in text and "import" in text)
    ) and re.search(r"\b(?:globals|vars|exec|eval|locals|__import__)\s*\(|__dict__|\.\s*modules\b|\bimport\s+\*", text):
        return None
    deep = ("global" in text or "nonlocal" in text) and re.search(r"\b(?:global|nonlocal)\b", text) is not None
    defining = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    names, stack = set(), list(tree.body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in defining:
            names.add(node.name)
            if deep:
                stack += [inner for inner in ast.walk(node) if type(inner) in (ast.Global, ast.Nonlocal)]
            stack += node.decorator_list  # evaluated at module level (a walrus there binds a module name)
            continue
        if kind is ast.Lambda:
            continue
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:
                names.add(node.id)
        elif kind is ast.alias:
            names.add(node.asname or node.name.partition(".")[0])
        elif kind is ast.Global or kind is ast.Nonlocal:
            names.update(node.names)
        elif kind is ast.ExceptHandler and node.name:
            names.add(node.name)
        elif type(getattr(node, "name", None)) is str and kind.__name__.startswith(("Match", "Type", "Param")):
            names.add(node.name)  # match captures, type parameters
        elif kind.__name__ == "MatchMapping" and node.rest:
            names.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _serve_sources(sources, workspace, record):
    # The test modules and conftest files the grader handed over (Harness.channel: absolute path -> text),
    # served from memory by a finder first in sys.meta_path, installed before any code of the repository
    # runs: each is compiled from its handed text (pytest's assertion rewriting applied where pytest would
    # apply it, through the module attribute at call time), never from the file on disk (a placeholder for a
    # hidden test) nor from or to a bytecode cache. The loader holds the text out of reach (see below) and has no
    # get_source; nothing goes into linecache. Returns front(), which puts the finder first again once pytest
    # has installed its own import hook (called before any conftest loads), and check(pm, items): notes a
    # finder that is no longer first, and (given items) a handed module loaded some other way or a conftest.py
    # of the workspace that was not handed over (made during the run).
    import ast
    import os
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import spec_from_file_location

    import _pytest.assertion.rewrite as rewrite

    sources = {os.path.abspath(path): text for path, text in sources.items() if isinstance(text, str)}
    tails: set[str]
    served: dict[str, Any]
    names: dict[str, Any]
    tails, served, names, bound_names = set(), {}, {}, _bound_names
    for path in sources:
        folder, name = os.path.split(path)
        tails.add(os.path.basename(folder) if name == "__init__.py" else name[:-3])
    find, parse, abspath, compile_, exec_, meta_path = (
        PathFinder.find_spec,
        ast.parse,
        os.path.abspath,
        compile,
        exec,
        sys.meta_path,
    )
    identity = object.__hash__  # an object's address, as id() without its audited event (see _pytest_internals)
    prefix = (workspace or "/nonexistent").rstrip("/") + "/"

    def compiled(name, path):
        data = sources[path].encode("utf-8", "surrogateescape")
        tree = parse(data, filename=path)
        names[path] = bound_names(tree, sources[path])  # before pytest's rewrite adds its own
        hook = next((f for f in meta_path if type(f) is rewrite.AssertionRewritingHook), None)
        if hook is not None and rewrites(hook, name, path):
            rewrite.rewrite_asserts(tree, data, path, hook.config)
        return compile_(tree, path, "exec", dont_inherit=True)

    def rewrites(hook, name, path):
        try:
            return hook._should_rewrite(name, path, hook.config.stash[rewrite.assertstate_key])
        except Exception:  # another pytest's private API: conftest files at least, as every pytest does
            return os.path.basename(path) == "conftest.py"

    class Loader:
        __slots__ = ("exec_module",)

        def create_module(self, spec):
            return None

    # What the code under test can reach (the finder in sys.meta_path, each served module's loader) holds
    # nothing in a closure: ``__closure__`` and ``cell_contents`` are read without an audit event, so the
    # handed texts (hidden tests) would be one walk away. Their state is in keyword-only defaults, whose
    # reads the audit hook refuses for the plugin's functions.
    def loader(name, path):
        def exec_module(module, *, _name=name, _path=path, _served=served, _compiled=compiled, _exec=exec_):
            _served[_path] = module
            _exec(_compiled(_name, _path), module.__dict__)

        made = Loader()
        made.exec_module = exec_module  # type: ignore[attr-defined]
        return made

    class Finder:
        def find_spec(
            self,
            name,
            path=None,
            target=None,
            *,
            _tails=frozenset(tails),
            _paths=frozenset(sources),
            _find=find,
            _abspath=abspath,
            _spec=spec_from_file_location,
            _loader=loader,
        ):
            if name.rpartition(".")[2] not in _tails:
                return None
            found = _find(name, path)
            origin = _abspath(found.origin) if found is not None and found.origin else None
            if origin not in _paths:
                return None
            locations = found.submodule_search_locations
            return _spec(name, origin, loader=_loader(name, origin), submodule_search_locations=locations)

        def invalidate_caches(self):
            return None

    def names_of(path, *, _sources=sources, _abspath=abspath, _names=names):
        # (True, the names a served module's code binds, see _bound_names) once it is loaded; (False, None) else.
        path = _abspath(path) if isinstance(path, str) else None
        return (True, _names[path]) if path in _names else (False, None)

    if not sources:
        return (lambda: None), (lambda pm, items=None: None), names_of
    finder = Finder()
    meta_path.insert(0, finder)

    def front():
        if finder in meta_path:
            meta_path.remove(finder)
        meta_path.insert(0, finder)

    def note(key, entry):
        if entry not in record[key]:
            record[key].append(entry)

    def check(pm, items=None):
        if not meta_path or meta_path[0] is not finder:
            note("patched", "sys.meta_path[0] (gradeflow's finder of the handed test modules)")
        if items is None:
            return
        modules = [getattr(item, "module", None) for item in items]
        modules += [plugin for plugin in pm.get_plugins() if type(plugin) is type(sys)]
        for module in {identity(m): m for m in modules if m is not None}.values():
            file = getattr(module, "__file__", None)
            file = abspath(file) if isinstance(file, str) else ""
            if file in sources and served.get(file) is not module:
                note("conftests", f"{file} (not served)")
            elif file.startswith(prefix) and os.path.basename(file) == "conftest.py" and file not in sources:
                note("conftests", file)

    record["conftests"] = []
    return front, check, names_of
