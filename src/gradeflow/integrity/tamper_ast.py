"""The tamper scan of one Python source: names, attribute chains and literals, read from the AST.

The walk is iterative, so a deeply nested expression cannot crash it. Names resolve through the module's
imports (``from os import _exit as bye; bye(0)`` is ``os._exit``) and through one assignment of a module
(``t = __import__('time'); t.time = f``); ``getattr(X, 'name')``, ``X.__dict__['name']``,
``vars(X)['name']``, ``sys.modules['name']`` and ``globals()['name']`` resolve too. A name that no import
binds and that is no builtin is a local variable, so ``def f(time): time.x = 1`` is not the clock. A string
folded from literals (``'py' + 'test'``, f-strings of literals, ``''.join([...])``, ``[::-1]``,
``chr(112)``, ``bytes([112, ...]).decode()``, ``''.join(map(chr, [...]))``, ``bytes.fromhex``, ``base64``
and ``rot13`` decoding of a literal) counts as a literal. Nothing else is followed: no data flow through
variables, calls or other modules. Docstrings and other bare string statements are skipped. A source that
does not parse gives ``None``: that is not a finding (Python cannot import it either). One the parser
cannot hold (nesting deep enough for ``RecursionError``, a tree too big for memory) is a finding: the scan
did not read it. A walk checks its :class:`~gradeflow.integrity.bounded.Deadline` as it goes.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gradeflow.integrity.bounded import Deadline
from gradeflow.integrity.tamper_rules import (
    BUILTIN_NAMES,
    CHAINS,
    CLASS_SPOOF,
    CODE_RUNNERS,
    DYNAMIC_EXEC,
    IMPORTERS,
    MAIN_ONLY,
    MODULE_LOOKUPS,
    identifier_rule,
    literal_rules,
    may_name_suspect_module,
    module_rule,
    names_pytest_module,
    rebind_rule,
    runner_rule,
)
from gradeflow.models.evidence import TamperFinding, TamperKind
from gradeflow.text import parse_python

__all__ = ["scan_python", "unscannable"]

_MAX_LITERAL_DEPTH = 3
"""How deep literal sources passed to ``exec`` / ``eval`` / ``compile`` are themselves scanned."""
_FOLD_BUDGET = 64
"""Nodes folded into one string at most: a longer expression counts as computed."""
_WALK_BUDGET = 200
"""Steps taken down one attribute chain or one target at most."""
_MODULES_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__", "__setitem__"})
_PATCHERS = frozenset({"patch", "object", "setattr", "delattr", "setitem", "__setattr__", "__delattr__"})
_DICT_WRITES = frozenset({"update", "setdefault", "__setitem__", "pop", "__delitem__"})
_MOCK_PATCH = frozenset({"unittest.mock.patch", "mock.patch"})
"""Patchers whose first argument is a dotted target they import: a computed one is a finding."""
_OPENERS = frozenset({"open", "io.open", "codecs.open", "os.open"})
_MOVERS = frozenset({"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.replace", "os.rename"})
_PATH_WRITES = frozenset({"write_text", "write_bytes", "open", "touch"})
_ARGV_PARSERS = frozenset({"parse_known_args", "parse_known_intermixed_args"})
_STRING_METHODS = frozenset({"join", "decode", "lower", "format"})
_OWN_PROCESS = frozenset({"os.getpid", "os.getppid", "os.getpgrp", "os.getpgid"})
_DECODERS = {
    **{name: getattr(base64, name) for name in ("b64decode", "urlsafe_b64decode", "b32decode", "b16decode")},
    **{name: getattr(base64, name) for name in ("b85decode", "a85decode")},
}
_ITERATING = frozenset({"list", "tuple", "sorted", "set", "frozenset", "dict", "iter", "next", "reversed", "enumerate"})
_ITERATING |= frozenset({"any", "all", "filter", "map", "zip", "max", "min", "sum"})
_VIEWS = frozenset({"keys", "items", "values", "copy"})
_RUNNER_WORDS = ("test", "current", "runner")
"""Words of a literal that, beside a walk through the environment, say what is looked for."""
_INTROSPECTED = frozenset({"sys", "inspect", "traceback"})
"""Modules whose attributes looked up by a computed name are a finding (``getattr(sys, name)``)."""


_CHECK_EVERY = 4096
"""Nodes walked between two looks at the deadline."""


def scan_python(
    path: str, source: bytes, depth: int = 0, deadline: Deadline | None = None
) -> list[TamperFinding] | None:
    """Findings in ``source`` (file ``path``), ordered by line; ``None`` when it does not parse.

    Raises :class:`~gradeflow.integrity.bounded.BudgetExceeded` when ``deadline`` passes during the walk.
    """
    try:
        tree = parse_python(source)
        return _Scanner(path, _bindings(tree), depth, deadline).run(tree)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError) as exc:
        return [unscannable(path, f"the parser could not hold it ({type(exc).__name__})")]


def unscannable(path: str, why: str) -> TamperFinding:
    """The finding for a file the scan could not read whole: code Python may run that nobody looked at."""
    message = f"cannot be scanned: {why}; Python may still run it"
    return TamperFinding(path=path, line=0, kind="unscannable", detail=f"unscannable {path}", message=message)


@dataclass
class _Bindings:
    """What the module's imports bind, read before the walk."""

    aliases: dict[str, str] = field(default_factory=dict)
    """Local name -> what it was imported as (``t`` -> ``time``, ``bye`` -> ``os._exit``)."""
    modules: set[str] = field(default_factory=set)
    star: list[str] = field(default_factory=list)
    """Modules imported with ``*``."""
    assigns: list[ast.Assign] = field(default_factory=list)
    renames_main: bool = False
    """Whether the module assigns ``__name__`` (then no ``__main__`` guard is trusted)."""
    functions: set[str] = field(default_factory=set)
    """Names of the functions the module defines (what it may hand timeit as a callable)."""


def _bindings(tree: ast.AST) -> _Bindings:
    found = _Bindings()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                found.aliases[local] = alias.name if alias.asname else local
                found.modules.update((alias.name, local))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    found.star.append(node.module)
                else:
                    found.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.assigns.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.functions.add(node.name)
        if isinstance(node, ast.Name | ast.Subscript) and isinstance(node.ctx, ast.Store):
            name = node.id if isinstance(node, ast.Name) else _text(node.slice)
            found.renames_main |= name == "__name__"
    return found


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _text(node: ast.AST | None) -> str | None:
    """The value of a string (or bytes) literal, else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return node.value if isinstance(node.value, str) else node.value.decode("latin-1")
    return None


def _fold(node: ast.AST | None, budget: list[int] | None = None) -> tuple[str, bool]:
    """The known leading text of a string expression, and whether that text is all of it."""
    budget = budget if budget is not None else [_FOLD_BUDGET]
    budget[0] -= 1
    text = _text(node)
    if text is not None or budget[0] < 0:
        return text or "", text is not None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        left, complete = _fold(node.left, budget)
        if isinstance(node.op, ast.Mod) or not complete:
            return left.split("%", 1)[0] if isinstance(node.op, ast.Mod) else left, False
        right, complete = _fold(node.right, budget)
        return left + right, complete
    if isinstance(node, ast.JoinedStr):
        return _fold_parts(node.values, "", budget)
    if isinstance(node, ast.FormattedValue) and node.conversion == -1 and node.format_spec is None:
        return _fold(node.value, budget)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and _reverses(node.slice):
        text, complete = _fold(node.value, budget)
        return (text[::-1], True) if complete else ("", False)
    decoded = _decoded(node) if isinstance(node, ast.Call) else None
    if decoded is not None:
        return decoded, True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS:
        receiver, complete = _fold(node.func.value, budget)
        if node.func.attr == "format":
            return receiver.split("{", 1)[0], complete and "{" not in receiver
        items = node.args[0] if len(node.args) == 1 else None
        if node.func.attr == "join":
            characters = _characters(items) if complete else None
            if characters is not None:
                return receiver.join(characters), True
            return (
                _fold_parts(items.elts, receiver, budget)
                if complete and isinstance(items, ast.List | ast.Tuple)
                else ("", False)
            )
        literal_args = complete and all(_text(a) is not None for a in node.args)
        return (receiver.lower() if node.func.attr == "lower" else receiver), literal_args
    return "", False


def _ints(node: ast.AST | None) -> list[int] | None:
    """The values of a list or tuple of small integer literals (code points, bytes), else ``None``."""
    if not isinstance(node, ast.List | ast.Tuple) or len(node.elts) > _FOLD_BUDGET:
        return None
    values = [_int(element) for element in node.elts]
    return [v for v in values if v is not None] if all(v is not None and 0 <= v < 0x110000 for v in values) else None


def _characters(items: ast.AST | None) -> list[str] | None:
    """The characters of ``map(chr, [...])`` or ``(chr(c) for c in [...])``: what ``''.join`` would make."""
    mapped = isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and items.func.id == "map"
    if mapped and isinstance(items, ast.Call) and len(items.args) == 2:
        codes = _ints(items.args[1]) if isinstance(items.args[0], ast.Name) and items.args[0].id == "chr" else None
        return [chr(code) for code in codes] if codes is not None else None
    if not (isinstance(items, ast.GeneratorExp | ast.ListComp) and len(items.generators) == 1):
        return None
    loop, element = items.generators[0], items.elt
    target = loop.target.id if isinstance(loop.target, ast.Name) and not loop.ifs else None
    if not (isinstance(element, ast.Call) and isinstance(element.func, ast.Name) and element.func.id == "chr"):
        return None
    argument = element.args[0] if len(element.args) == 1 else None
    codes = _ints(loop.iter) if isinstance(argument, ast.Name) and argument.id == target else None
    return [chr(code) for code in codes] if codes is not None else None


def _decoded(call: ast.Call) -> str | None:
    """A string (bytes as latin-1) spelled by a call on literals: ``chr(112)``, ``bytes([112, 121])``,
    ``bytes.fromhex('7079')``, ``base64.b64decode('cHk=')``, ``codecs.decode('clgrfg', 'rot13')``."""
    func, args = call.func, call.args
    try:
        if isinstance(func, ast.Name) and len(args) == 1:
            if func.id == "chr" and _int(args[0]) is not None:
                return chr(_int(args[0]) or 0)
            codes = _ints(args[0]) if func.id in ("bytes", "bytearray") else None
            return bytes(codes).decode("latin-1") if codes is not None and max(codes, default=0) < 256 else None
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and args):
            return None
        owner, text = func.value.id, _text(args[0])
        if text is None:
            return None
        if owner in ("bytes", "bytearray") and func.attr == "fromhex":
            return bytes.fromhex(text).decode("latin-1")
        if owner == "base64" and func.attr in _DECODERS:
            return _DECODERS[func.attr](text).decode("latin-1")
        if owner == "codecs" and func.attr == "decode" and len(args) == 2 and _text(args[1]) in ("rot13", "rot_13"):
            return codecs.decode(text, "rot13")
    except (ValueError, binascii.Error, OverflowError):
        return None
    return None


def _view(func: ast.Attribute) -> bool:
    """``.keys()``, ``.items()``, ``.values()`` or ``.copy()``: the same names or values, walked the same way."""
    return func.attr in _VIEWS


def _fold_parts(parts: list[ast.expr], separator: str, budget: list[int]) -> tuple[str, bool]:
    """The parts of an f-string, or the items of ``separator.join([...])``, folded and joined."""
    pieces: list[str] = []
    for part in parts:
        piece, complete = _fold(part, budget)
        pieces.append(piece)
        if not complete:
            return separator.join(pieces), False
    return separator.join(pieces), True


def _reverses(part: ast.Slice) -> bool:
    step = part.step
    negative = isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) and _int(step.operand) == 1
    return negative and part.lower is None and part.upper is None


def _own_module_name(node: ast.AST) -> bool:
    """``__name__`` or ``x.__module__``-like: a key naming the caller's own module or an object's."""
    if isinstance(node, ast.Name):
        return node.id in ("__name__", "__package__")
    return isinstance(node, ast.Attribute) and node.attr in ("__module__", "__name__", "__package__")


def _int(node: ast.AST) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it holds, breadth first, at most ``_WALK_BUDGET`` of them."""
    queue = [node]
    for current in queue:
        yield current
        if len(queue) < _WALK_BUDGET:
            queue += list(ast.iter_child_nodes(current))[: _WALK_BUDGET - len(queue)]


def _xml_literal(node: ast.AST | None) -> str | None:
    """A string literal ending in ``.xml`` somewhere in the expression (a path built around one counts)."""
    if node is None:
        return None
    return next((t for n in _nodes(node) if (t := _text(n)) is not None and t.lower().endswith(".xml")), None)


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """The assigned, deleted or loop-bound expressions of a node, tuples unpacked."""
    if isinstance(node, ast.Assign | ast.Delete):
        pending = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension | ast.AnnAssign):
        pending = [node.target] if not isinstance(node, ast.AnnAssign) or node.value is not None else []
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        pending = [node.optional_vars]
    else:
        pending = []
    while pending:
        target = pending.pop()
        if isinstance(target, ast.Tuple | ast.List):
            pending += target.elts
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
        else:
            yield target


def _spoof(detail: str) -> tuple[TamperKind, str, str]:
    """A class-spoof finding's kind, detail and message (``CLASS_SPOOF``)."""
    return CLASS_SPOOF[0], detail, CLASS_SPOOF[1]


class _Scanner:
    def __init__(self, path: str, bindings: _Bindings, depth: int, deadline: Deadline | None = None) -> None:
        self.path, self.bound, self.depth, self.deadline = path, bindings, depth, deadline
        self.found: dict[tuple[int, str, str], TamperFinding] = {}
        self.consumed: set[int] = set()
        """Literals a context rule already read (``sys.modules['pytest']``, code passed to ``exec``)."""
        self.in_main = False
        self.handlers: dict[type[ast.AST], Callable[[Any], None]] = {
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.FunctionDef: self._def,
            ast.AsyncFunctionDef: self._def,
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.Subscript: self._subscript,
            ast.Compare: self._compare,
            ast.BinOp: self._folded,
            ast.Constant: self._constant,
            ast.For: self._loop,
            ast.AsyncFor: self._loop,
            ast.ListComp: self._comprehension,
            ast.SetComp: self._comprehension,
            ast.DictComp: self._comprehension,
            ast.GeneratorExp: self._comprehension,
        }
        for assign in bindings.assigns:  # ``t = importlib.import_module('time')`` makes ``t`` the module
            name, value = assign.targets[0], assign.value
            assert isinstance(name, ast.Name)
            chain = self._chain(value)
            module = isinstance(value, ast.Call | ast.Subscript) or chain in bindings.modules
            if chain and module and name.id not in bindings.aliases:
                bindings.aliases[name.id] = chain

    def run(self, tree: ast.AST) -> list[TamperFinding]:
        trusted = not self.bound.renames_main
        stack: list[tuple[ast.AST, bool]] = [(tree, trusted and self.path.rsplit("/", 1)[-1] == "__main__.py")]
        walked = 0
        while stack:
            node, self.in_main = stack.pop()
            walked += 1
            if self.deadline is not None and walked % _CHECK_EVERY == 0:
                self.deadline.check()
            if isinstance(node, ast.Expr) and _text(node.value) is not None:
                continue
            self._rebinds(node)
            handler = self.handlers.get(type(node))
            if handler is not None:
                handler(node)
            if trusted and isinstance(node, ast.If) and _is_main_guard(node.test):
                stack += [(c, True) for c in node.body] + [(c, self.in_main) for c in node.orelse]
            else:
                stack += [(c, self.in_main) for c in ast.iter_child_nodes(node)]
        return sorted(self.found.values(), key=lambda f: (f.line, f.kind, f.detail))

    def _hit(self, node: ast.AST, kind: TamperKind, detail: str, message: str) -> None:
        line = getattr(node, "lineno", 0)
        finding = TamperFinding(path=self.path, line=line, kind=kind, detail=detail, message=message)
        self.found.setdefault((line, kind, detail), finding)

    def _resolve(self, name: str) -> str | None:
        """What a bare name stands for: an import, a builtin, or ``None`` for a local variable."""
        if name in self.bound.aliases:
            return self.bound.aliases[name]
        if name in BUILTIN_NAMES:
            return "builtins" if name in ("__builtins__", "__builtin__") else name
        return next((f"{m}.{name}" for m in self.bound.star if f"{m}.{name}" in CHAINS), None)

    def _simple(self, node: ast.AST | None) -> str | None:
        """The dotted name of a plain ``Name`` / ``Attribute`` chain, its root resolved."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute) and len(parts) < _WALK_BUDGET:
            parts.append(node.attr)
            node = node.value
        root = self._resolve(node.id) if isinstance(node, ast.Name) else None
        return ".".join([root, *reversed(parts)]) if root else None

    def _callee(self, node: ast.AST) -> str | None:
        """A plainly named called function (``builtins.`` dropped); ``None`` for anything else."""
        if not isinstance(node, ast.Call):
            return None
        return (self._simple(node.func) or "").removeprefix("builtins.") or None

    def _chain(self, node: ast.AST | None) -> str | None:
        """The dotted name an expression stands for (``getattr(os, '_exit')`` is ``os._exit``), or ``None``."""
        parts: list[str] = []
        item = False  # whether a key of a plain mapping was taken: only builtins' own mapping resolves
        for _ in range(_WALK_BUDGET):
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                key, node = _fold(node.slice), node.value
                if not key[1]:
                    return None
                parts.append(key[0])
                if isinstance(node, ast.Attribute) and node.attr == "__dict__":
                    node = node.value
                elif self._callee(node) == "vars" and isinstance(node, ast.Call) and len(node.args) == 1:
                    node = node.args[0]
                elif self._callee(node) in ("globals", "locals"):
                    root = self._resolve(parts.pop())
                    return ".".join([root, *reversed(parts)]) if root else None
                elif self._simple(node) == "sys.modules":
                    return ".".join(reversed(parts))
                else:
                    item = True
            elif isinstance(node, ast.Call):
                callee = self._callee(node)
                first, literal = _fold(node.args[-1 if callee == "getattr" else 0]) if node.args else ("", False)
                if callee == "getattr" and len(node.args) == 2 and literal:
                    parts.append(first)
                    node = node.args[0]
                elif callee in IMPORTERS and literal and first:
                    first = first.replace(":", ".")  # pkgutil.resolve_name('os:_exit')
                    top = first.split(".", 1)[0] if callee.endswith("__import__") else first
                    return ".".join([top, *reversed(parts)])
                else:
                    return None
            else:
                root = self._resolve(node.id) if isinstance(node, ast.Name) else None
                return ".".join([root, *reversed(parts)]) if root and (root == "builtins" or not item) else None
        return None

    def _root(self, node: ast.AST) -> str | None:
        """The first part of the nearest resolvable expression under a target (``vars(time)[k]`` -> ``time``)."""
        for _ in range(_WALK_BUDGET):
            chain = self._chain(node)
            if chain is not None:
                return chain.split(".", 1)[0]
            if isinstance(node, ast.Attribute | ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and self._callee(node) == "vars" and node.args:
                node = node.args[0]
            else:
                return None
        return None

    def _describe(self, node: ast.AST) -> str:
        suffix = ""
        while isinstance(node, ast.Subscript | ast.Attribute):
            suffix = f".{node.attr}{suffix}" if isinstance(node, ast.Attribute) else f"[]{suffix}"
            node = node.value
        if isinstance(node, ast.Call) and self._callee(node) == "vars" and node.args:
            return f"vars({self._chain(node.args[0]) or '<expression>'}){suffix}"
        return (self._chain(node) or "<expression>") + suffix

    def _consume(self, node: ast.AST) -> None:
        self.consumed.update(id(n) for n in _nodes(node))

    def _rebind_hit(self, node: ast.AST, chain: str | None, detail: str) -> None:
        rule = rebind_rule(chain) if chain else None
        if rule is not None:
            self._hit(node, rule[0], detail, rule[1])

    def _rebinds(self, node: ast.AST) -> None:
        for target in _targets(node):
            if isinstance(target, ast.Name) and target.id == "__class__":
                self._hit(target, *_spoof("__class__ ="))
            if isinstance(target, ast.Attribute | ast.Subscript):
                chain = self._chain(target)
                if chain is not None:
                    self._rebind_hit(target, chain, f"{chain} =")
                else:
                    self._rebind_hit(target, self._root(target), f"{self._describe(target)} =")

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name, "")
            if alias.name.endswith(".__main__"):
                self._main_import(node, alias.name)

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._module(node, node.module, "")
            for chain in (f"{node.module}.{a.name}" for a in node.names):
                self._chain_rule(node, None if chain in MAIN_ONLY else chain)
        module = "." * node.level + (node.module or "")
        if module.endswith(".__main__") or (module and any(a.name == "__main__" for a in node.names)):
            self._main_import(node, module)

    def _main_import(self, node: ast.AST, module: str) -> None:
        message = f"imports {module}'s __main__ module, whose code may read the command line"
        self._hit(node, "argv-read", f"import {module}", message)

    def _module(self, node: ast.AST, module: str, via: str) -> None:
        rule = module_rule(module)
        if rule is not None:
            self._hit(node, rule[0], f"import {module}", rule[1] + via)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name == "__class__":
            self._hit(node, *_spoof("def __class__"))
        rule = identifier_rule(node.name)
        if rule is not None:
            hook = node.name.startswith("pytest_")
            self._hit(node, rule[0], node.name, f"defines the pytest hook {node.name}" if hook else rule[1])

    def _name(self, node: ast.Name) -> None:
        rule = identifier_rule(node.id)
        if rule is not None:
            self._hit(node, rule[0], node.id, rule[1])
        if node.id == "__path__":
            self._package_path(node)
        self._chain_rule(node, self._resolve(node.id))

    def _attribute(self, node: ast.Attribute) -> None:
        rule = identifier_rule(node.attr, attribute=True)
        if rule is not None:
            self._hit(node, rule[0], node.attr, rule[1])
        if node.attr == "__path__":
            self._package_path(node)
        if node.attr == "__code__" and isinstance(node.ctx, ast.Store):
            self._hit(node, "function-internals", "__code__", "replaces a function's code in place")
        if node.attr == "replace" and isinstance(node.value, ast.Attribute) and node.value.attr == "__code__":
            self._hit(node, "function-internals", "__code__.replace", "rebuilds a function's code object")
        self._chain_rule(node, self._chain(node))

    def _package_path(self, node: ast.AST) -> None:
        # A package's __path__ decides where its submodules come from: a folder or an archive (a zip of any name
        # on it is imported by zipimport) whose code the scan never reads.
        message = "uses a package's __path__, which decides where its submodules are imported from (an archive too)"
        self._hit(node, "import-hook", "__path__", message)

    def _chain_rule(self, node: ast.AST, chain: str | None) -> None:
        chain = chain.removeprefix("builtins.") if chain else None
        rule = CHAINS.get(chain or "")
        if chain and rule is not None and not (chain in MAIN_ONLY and self.in_main):
            self._hit(node, rule[0], chain, f"{chain}: {rule[1]}")

    def _call(self, node: ast.Call) -> None:
        name = (self._chain(node.func) or "").removeprefix("builtins.")
        self._chain_rule(node, self._chain(node))
        if name in DYNAMIC_EXEC:
            self._dynamic(node, name, _arg(node, 0, "source"))
        for index, keyword in CODE_RUNNERS.get(name, ()):
            code = _arg(node, index, keyword)
            if not (isinstance(code, ast.Lambda) or (isinstance(code, ast.Name) and code.id in self.bound.functions)):
                self._dynamic(node, name, code)
        if name in IMPORTERS or name in MODULE_LOOKUPS:
            self._dynamic_import(node, name, computed=name in IMPORTERS)
        if name.startswith("sys.modules.") and name.rsplit(".", 1)[1] in _MODULES_METHODS and node.args:
            self._modules_key(node.args[0], store=name.endswith(("setdefault", "__setitem__")))
        if isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS:
            self._folded(node)
        if name in ("getattr", "setattr", "hasattr") and len(node.args) >= 2:
            attribute, literal = _fold(node.args[1])
            rule = identifier_rule(attribute, attribute=True) if literal else None
            if rule is not None:
                self._hit(node, rule[0], attribute, rule[1])
            owner = self._simple(node.args[0])
            if not literal and owner in _INTROSPECTED:
                kind, message = runner_rule(f"looks up {owner}.<name computed at run time>")
                self._hit(node, kind, f"getattr({owner}, non-literal)", message)
        if (isinstance(node.func, ast.Name) and node.func.id in ("chr", "bytes", "bytearray")) or _decoded(node):
            self._folded(node)
        if name in _ITERATING:
            for argument in node.args:
                self._walked(node, argument)
        if name == "warnings.catch_warnings" and any(
            k.arg == "record" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords
        ):
            kind, message = runner_rule("records warnings, each with the file that called (a test's)")
            self._hit(node, kind, "warnings.catch_warnings(record=True)", message)
        self._patcher(node, name)
        self._xml_write(node, name)
        self._argv_parser(node)
        if name in ("os.kill", "os.killpg") and node.args:
            self._self_kill(node, name, node.args[0])

    def _dynamic(self, node: ast.Call, name: str, source: ast.expr | None) -> None:
        literal, complete = _fold(source) if source is not None else ("", False)
        if source is not None and (not complete or self.depth >= _MAX_LITERAL_DEPTH):
            message = f"{name}() of a computed value (or of literal code nested too deep): the scan cannot see into it"
            self._hit(node, "dynamic-exec", f"{name}(non-literal)", message)
        elif source is not None:
            self._consume(source)
            for inner in scan_python(self.path, literal.encode(), self.depth + 1, self.deadline) or []:
                self._hit(node, inner.kind, inner.detail, f"{inner.message} (in code passed to {name}())")

    def _dynamic_import(self, node: ast.Call, name: str, computed: bool) -> None:
        target, level = _arg(node, 0, "name"), _arg(node, 4, "level")
        if target is None or (level is not None and (_int(level) or 0) > 0):
            return
        module, complete = _fold(target)
        if complete:
            self._consume(target)
            if not module.startswith("."):
                self._module(node, module.replace(":", "."), f" (through {name})")
        elif computed and may_name_suspect_module(module):
            message = f"{name}() of a computed module name, which the scan cannot check"
            self._hit(node, "dynamic-exec", f"{name}(non-literal)", message)

    def _modules_key(self, key_node: ast.AST, store: bool, access: bool = True) -> None:
        key, complete = _fold(key_node)
        if not complete:
            if access and not _own_module_name(key_node) and may_name_suspect_module(key):
                # As with import_module: a module reached by a computed name (pytest's, spelled in pieces).
                message = "looks up a module in sys.modules by a name computed at run time, which the scan cannot check"
                self._hit(key_node, "dynamic-exec", "sys.modules[non-literal]", message)
            return
        self._consume(key_node)
        for kind, detail, message in literal_rules(key):
            if kind == "runner-detection":
                self._hit(key_node, kind, detail, f"a literal {message}")
        if key == "__main__":
            kind, message = runner_rule("reads the main module (the test runner's, under test)")
            self._hit(key_node, kind, "sys.modules['__main__']", message)
        elif names_pytest_module(key):
            self._hit(key_node, "pytest-internals", f"sys.modules[{key!r}]", f"looks up pytest's module {key!r}")
        elif store:
            self._rebind_hit(key_node, key, f"sys.modules[{key!r}] =")

    def _subscript(self, node: ast.Subscript) -> None:
        self._chain_rule(node, self._chain(node))
        if self._simple(node.value) == "sys.modules":
            self._modules_key(node.slice, store=isinstance(node.ctx, ast.Store | ast.Del))
        if isinstance(node.slice, ast.Slice):
            self._folded(node)

    def _compare(self, node: ast.Compare) -> None:
        if isinstance(node.ops[0], ast.In | ast.NotIn) and self._simple(node.comparators[0]) == "sys.modules":
            self._modules_key(node.left, store=False, access=False)  # a membership test reaches no module

    def _loop(self, node: ast.For | ast.AsyncFor) -> None:
        self._walked(node, node.iter)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        for loop in node.generators:
            self._walked(node, loop.iter)

    def _walked(self, context: ast.AST, iterated: ast.AST) -> None:
        """``iterated`` walked through in ``context`` (a loop, a comprehension, ``any(...)``): every module's name
        (``sys.modules``), or the environment's variables beside a literal that says what is looked for."""
        for _ in range(8):  # sys.modules.items(), list(os.environ), sorted(sys.modules.keys()) ...
            if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute) and _view(iterated.func):
                iterated = iterated.func.value
            elif isinstance(iterated, ast.Call) and self._callee(iterated) in _ITERATING and iterated.args:
                iterated = iterated.args[0]
            else:
                break
        chain = self._chain(iterated)
        if chain == "sys.modules":
            kind, message = runner_rule("walks through every loaded module's name")
            self._hit(iterated, kind, "iterates sys.modules", message)
        elif chain == "os.environ" and self._says_runner(context):
            kind, message = runner_rule("walks through the environment's variables for a test's")
            self._hit(iterated, kind, "iterates os.environ", message)

    def _says_runner(self, context: ast.AST) -> bool:
        for node in _nodes(context):
            text, complete = _fold(node) if isinstance(node, ast.Constant | ast.BinOp | ast.Call) else ("", False)
            if complete and any(word in text.lower() for word in _RUNNER_WORDS):
                return True
        return False

    def _patcher(self, node: ast.Call, name: str) -> None:
        """``setattr(time, 'time', f)``, ``mock.patch('time.time')``, ``time.__dict__.update(...)`` and the like."""
        func, args = node.func, list(node.args)
        last = func.attr if isinstance(func, ast.Attribute) else name.rsplit(".", 1)[-1]
        if last in ("__setattr__", "__delattr__") and isinstance(func, ast.Attribute):
            if self._chain(func.value) not in ("object", "type"):
                args = [func.value, *args]  # ``time.__setattr__('time', f)``: the receiver is the target
        elif isinstance(func, ast.Attribute) and last in _DICT_WRITES:
            self._rebind_hit(node, self._root(func.value), f"{self._describe(func.value)}.{last}()")
            return
        if last not in _PATCHERS or not args:
            return
        target = _text(args[0])
        if target is None and name in _MOCK_PATCH:
            message = f"{name}() of a target computed at run time, which the scan cannot check"
            self._hit(node, "dynamic-exec", f"{name}(non-literal)", message)
            return
        if target is None:
            base = self._chain(args[0]) or self._root(args[0])
            attr = _text(args[1]) if len(args) > 1 else None
            target = f"{base}.{attr}" if base and attr else base
        self._rebind_hit(node, target, f"{last}({target})")

    def _xml_write(self, node: ast.Call, name: str) -> None:
        """A path built around an ``.xml`` literal, opened for writing, written, copied or moved onto."""
        func = node.func
        if name in _OPENERS:
            target, mode = _arg(node, 0, "file"), _text(_arg(node, 1, "mode"))
            writes = name == "os.open" or any(c in (mode or "") for c in "wax+")
        elif name in _MOVERS:
            target, writes = _arg(node, 1, "dst"), True
        elif isinstance(func, ast.Attribute) and func.attr in _PATH_WRITES:
            target, mode = func.value, _text(_arg(node, 0, "mode")) if func.attr == "open" else "w"
            writes = any(c in (mode or "") for c in "wax+")
        else:
            return
        xml = _xml_literal(target) if writes else None
        if xml is not None:
            message = f"writes the XML file {xml!r}, as a test report would be written"
            self._hit(node, "report-path", f"writes {xml!r}", message)

    def _self_kill(self, node: ast.Call, name: str, pid: ast.expr) -> None:
        if self._callee(pid) in _OWN_PROCESS or _int(pid) == 0:
            message = f"{name}() of its own process or group, skipping the test runner's own reporting"
            self._hit(node, "os-exit", f"{name}(own process)", message)

    def _argv_parser(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _ARGV_PARSERS) or self.in_main:
            return
        if not node.args and not any(k.arg == "args" for k in node.keywords):
            message = "parses the command line (where the report path is) outside a __main__ block"
            self._hit(node, "argv-read", f"{func.attr}()", message)

    def _folded(self, node: ast.expr) -> None:
        """A string built from literals only (``'_py' + 'test'``): its literals are read as one."""
        if id(node) in self.consumed or (isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Add)):
            return
        text, complete = _fold(node)
        if complete:
            self._consume(node)
            for kind, detail, message in literal_rules(text):
                self._hit(node, kind, detail, f"a literal {message}")

    def _constant(self, node: ast.Constant) -> None:
        text = _text(node)
        if text is None or id(node) in self.consumed:
            return
        for kind, detail, message in literal_rules(text):
            self._hit(node, kind, detail, f"a literal {message}")
