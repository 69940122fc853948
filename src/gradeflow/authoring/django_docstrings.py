"""SWE-bench's names of Django tests with a docstring, mapped to the tests' ids by reading the test modules.

unittest's verbose runner (Django's ``tests/runtests.py --verbosity 2``) prints a test whose method has a
docstring as ``test_x (module.Class)``, then the docstring's first line as ``shortDescription()`` gives it,
then `` ... ok``. SWE-bench's log parser keeps that line as the test's name, so its FAIL_TO_PASS and
PASS_TO_PASS lists hold docstring lines. :func:`read_docstring_tests` reads, statically with :mod:`ast`,
the test modules an instance's Django labels name, in the repository at the base with the test patch
applied, and indexes their test methods by that first line: a name that is the first line of exactly one
test maps to its id, ``module.Class::test_x`` as the django-log parser reads it; a name several tests print
stands for all of them (:meth:`DocstringTests.tests_of`), and the importer lets the one that runs last decide
(``tests.last_run_of``), as SWE-bench's log parser keeps the status printed last.

What counts as a test, as unittest's loader finds it: a method named ``test*`` of a class defined at the top
of a label's module, with a class named ``*TestCase`` among its ancestors (``SimpleTestCase``,
``unittest.TestCase``...). Bases are followed where Python would find them: the module's own classes, and
names imported from other modules under ``tests/`` (``from .test_base import MigrationTestBase``), read as
needed; a base from anywhere else is known by its name only. Methods come in method resolution order, so an
override without a docstring hides its base's. Not seen: tests a label's module only imports from another
module, and methods a class gets other than by a ``def`` in a class body.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from gradeflow.authoring.patches import FileDiff, run_git
from gradeflow.text import parse_python

__all__ = ["DocstringTests", "docstring_tests", "label_modules", "read_docstring_tests"]

TESTS_ROOT = "tests"
"""The folder Django's labels and test modules are relative to (``runtests.py`` puts it on ``sys.path``)."""
MAX_MODULES = 256
"""Modules read at most for one instance (its labels' and those their bases come from)."""
_SHOWN = 3


@dataclass(frozen=True)
class DocstringTests:
    """The test methods of some modules, by their docstring's first line."""

    modules: tuple[str, ...]
    """The labels' modules read, in label order."""
    by_line: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A docstring's first line to the ids of the tests it describes, in the modules' order."""

    def tests_of(self, name: str) -> tuple[str, ...]:
        """The ids of every test whose docstring's first line is ``name``, in the modules' order."""
        return self.by_line.get(name, ())

    def why_unknown(self) -> str:
        """Why a name is no test's docstring line: the modules that were read, named."""
        modules = ", ".join(self.modules[:_SHOWN]) + (" ..." if len(self.modules) > _SHOWN else "")
        read = f"the test labels' modules ({modules})" if self.modules else "no module (no label names a file)"
        return f"not the docstring line of any test in {read}"


def label_modules(labels: Iterable[str], files: Iterable[str]) -> dict[str, str]:
    """The test modules Django's ``labels`` name among the repository's ``files``: path to module name.

    A label names a module (``admin_views.tests`` is ``tests/admin_views/tests.py``) or a package, whose
    ``test*.py`` files at any depth Django discovers (``forms_tests.widget_tests``)."""
    listed = set(files)
    found: dict[str, str] = {}
    for label in labels:
        stem = f"{TESTS_ROOT}/{label.replace('.', '/')}"
        if f"{stem}.py" in listed:
            found[f"{stem}.py"] = label
            continue
        for path in sorted(p for p in listed if p.startswith(stem + "/")):
            pure = PurePosixPath(path)
            if pure.name.startswith("test") and pure.suffix == ".py":
                found[path] = _module_of(path)
    return found


def read_docstring_tests(tree: Path, labels: list[str], patch: list[FileDiff]) -> DocstringTests:
    """The tests of the modules ``labels`` name in ``tree``: a checkout of the base with ``patch`` applied
    where only the files the patch touches are written (``applied_tree(..., only_patched=True)``); the
    others are written here as they are needed."""
    at_base = run_git(tree, "ls-files", "-z", "--", f":(literal){TESTS_ROOT}/").stdout.split("\0")
    touched = {path for block in patch for path in (block.old, block.new) if path}
    files = (set(filter(None, at_base)) - touched) | {block.new for block in patch if block.new}
    by_module = {_module_of(path): path for path in sorted(files) if path.endswith(".py")}

    def read(module: str) -> str | None:
        path = by_module.get(module) or by_module.get(f"{module}.__init__")
        if path is None:
            return None
        if path not in touched:
            run_git(tree, "checkout-index", "-f", "--", path)
        try:
            return (tree / path).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return None

    return docstring_tests(list(label_modules(labels, files).values()), read)


def docstring_tests(modules: list[str], read: Callable[[str], str | None]) -> DocstringTests:
    """The test methods of ``modules`` by docstring first line; ``read`` gives a module's source under
    ``tests/`` by its dotted name (``None`` where there is none), for the modules and their bases' modules."""
    scope = _Scope(read)
    by_line: dict[str, tuple[str, ...]] = {}
    for module in modules:
        found = scope.module(module)
        for cls in found.classes.values() if found is not None else ():
            order = scope.mro(cls)
            if any(name.endswith("TestCase") for each in order for name in each.base_names):
                for method, line in _methods(order).items():
                    if line is not None:
                        by_line[line] = (*by_line.get(line, ()), f"{cls.module}.{cls.name}::{method}")
    return DocstringTests(modules=tuple(modules), by_line=by_line)


@dataclass(frozen=True)
class _Class:
    module: str
    name: str
    bases: tuple[tuple[str, ...], ...]
    """Each base as the dotted name it is written with (``("unittest", "TestCase")``); ``()`` for a call."""
    methods: dict[str, str | None]
    """The ``test*`` methods defined in the class body, each with its docstring's first line or ``None``."""

    @property
    def base_names(self) -> tuple[str, ...]:
        """Each base's last name (``TestCase`` of ``unittest.TestCase``)."""
        return tuple(base[-1] for base in self.bases if base)


@dataclass(frozen=True)
class _Module:
    name: str
    classes: dict[str, _Class]
    """The classes defined at the top of the module, by name (a later definition replaces an earlier one)."""
    imports: dict[str, tuple[str, str]]
    """A name ``from X import`` binds: the module ``X`` and the name it has there (a class or a module)."""


class _Scope:
    """Modules read as needed (at most :data:`MAX_MODULES`) and the classes their names bind."""

    def __init__(self, read: Callable[[str], str | None]) -> None:
        self.read = read
        self.modules: dict[str, _Module | None] = {}

    def module(self, name: str) -> _Module | None:
        if name not in self.modules:
            source = self.read(name) if len(self.modules) < MAX_MODULES else None
            self.modules[name] = _parse_module(name, source) if source is not None else None
        return self.modules[name]

    def mro(self, cls: _Class) -> list[_Class]:
        """``cls`` and the classes it inherits from that could be read, in (near enough) Python's method
        resolution order: depth first, left to right, each class kept at its last place."""
        order: list[_Class] = []

        def visit(each: _Class, path: tuple[_Class, ...]) -> None:
            order.append(each)
            for base in each.bases:
                found = self.resolve(each.module, base)
                if found is not None and all(found is not seen for seen in path):
                    visit(found, (*path, found))

        visit(cls, (cls,))
        last = {id(each): at for at, each in enumerate(order)}
        return [each for at, each in enumerate(order) if last[id(each)] == at]

    def resolve(self, module: str, dotted: tuple[str, ...], depth: int = 0) -> _Class | None:
        """The class ``dotted`` names in ``module``, following ``from`` imports (and re-exports) to modules
        that can be read; ``None`` when it is not one of those."""
        found = self.module(module)
        if found is None or not dotted or depth > 8:
            return None
        head, rest = dotted[0], dotted[1:]
        if head in found.classes and not rest:
            return found.classes[head]
        if head not in found.imports:
            return None
        source, name = found.imports[head]
        target = self.module(source)
        if target is not None and (name in target.classes or name in target.imports):
            return self.resolve(source, (name, *rest), depth + 1)
        return self.resolve(f"{source}.{name}", rest, depth + 1)  # from package import module


def _module_of(path: str) -> str:
    """``tests/a/b.py`` is module ``a.b``; a package's ``__init__.py`` keeps ``__init__`` (``a.__init__``)."""
    return ".".join(PurePosixPath(path).relative_to(TESTS_ROOT).with_suffix("").parts)


def _parse_module(name: str, source: str) -> _Module:
    try:
        tree = parse_python(source, f"{name}.py")
    except (SyntaxError, ValueError):
        return _Module(name, {}, {})
    package = name.removesuffix(".__init__") if name.endswith(".__init__") else name.rpartition(".")[0]
    classes: dict[str, _Class] = {}
    imports: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = tuple(_dotted(base) for base in node.bases)
            classes[node.name] = _Class(name.removesuffix(".__init__"), node.name, bases, _test_methods(node))
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(package, node.module, node.level)
            for alias in node.names:
                if origin is not None and alias.name != "*":
                    imports[alias.asname or alias.name] = (origin, alias.name)
    return _Module(name, classes, imports)


def _absolute(package: str, module: str | None, level: int) -> str | None:
    """The module a ``from`` import names, from the importing module's ``package``; ``None`` above the root."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *(module.split(".") if module else [])]) or None


def _dotted(base: ast.expr) -> tuple[str, ...]:
    if isinstance(base, ast.Name):
        return (base.id,)
    if isinstance(base, ast.Attribute):
        head = _dotted(base.value)
        return (*head, base.attr) if head else ()
    return ()  # a call or a subscript: nothing to follow


def _test_methods(node: ast.ClassDef) -> dict[str, str | None]:
    methods: dict[str, str | None] = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test"):
            doc = ast.get_docstring(item, clean=False)
            # unittest's shortDescription(); a blank docstring prints no line
            methods[item.name] = doc.strip().split("\n")[0].strip() if doc and doc.strip() else None
    return methods


def _methods(order: list[_Class]) -> dict[str, str | None]:
    """Each test method's docstring line as the class sees it: the first definition along ``order``."""
    methods: dict[str, str | None] = {}
    for each in order:
        for name, line in each.methods.items():
            methods.setdefault(name, line)
    return methods
