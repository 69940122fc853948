"""The tamper scan of one Python source: names, attribute chains and literals, read from the AST.

The walk is iterative, so a deeply nested expression cannot crash it. Import aliases are resolved
(``from os import _exit as bye; bye(0)`` is ``os._exit``); nothing else is: a value passed through a
variable, ``getattr`` with a computed name and the like are not followed. Docstrings and other bare
string statements are skipped. A source that does not parse gives ``None``: that is not a finding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

from gradeflow.evidence import TamperFinding, TamperKind
from gradeflow.tasks._tamper_rules import (
    BUILTINS_ROOTS,
    CHAINS,
    DYNAMIC_EXEC,
    DYNAMIC_IMPORT,
    identifier_rule,
    literal_rules,
    module_rule,
    names_pytest_module,
)

__all__ = ["scan_python"]

_MAX_LITERAL_DEPTH = 3
"""How deep literal sources passed to ``exec`` / ``eval`` / ``compile`` are themselves scanned."""
_MODULES_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__", "__setitem__"})
_PATCHERS = frozenset({"patch", "object", "setattr", "delattr", "setitem"})
_DICT_WRITES = frozenset({"update", "setdefault", "__setitem__", "pop", "__delitem__"})
_OPENERS = frozenset({"open", "io.open", "builtins.open", "codecs.open"})


def scan_python(path: str, source: bytes, depth: int = 0) -> list[TamperFinding] | None:
    """Findings in ``source`` (file ``path``), ordered by line; ``None`` when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _Scanner(path, _aliases(tree), depth).run(tree)


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it was imported as (``t`` -> ``time``, ``bye`` -> ``os._exit``)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname: a.name for a in node.names if a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return aliases


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


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """The assigned (or deleted) expressions of a statement, tuples unpacked."""
    if isinstance(node, ast.Assign | ast.Delete):
        pending = list(node.targets)
    elif isinstance(node, ast.AugAssign) or (isinstance(node, ast.AnnAssign) and node.value is not None):
        pending = [node.target]
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


class _Scanner:
    def __init__(self, path: str, aliases: dict[str, str], depth: int) -> None:
        self.path, self.aliases, self.depth = path, aliases, depth
        self.found: dict[tuple[int, str, str], TamperFinding] = {}
        self.consumed: set[int] = set()
        """Literals a context rule already reported (``sys.modules['pytest']``)."""
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
            ast.Constant: self._constant,
        }

    def run(self, tree: ast.AST) -> list[TamperFinding]:
        stack: list[tuple[ast.AST, bool]] = [(tree, False)]
        while stack:
            node, self.in_main = stack.pop()
            if isinstance(node, ast.Expr) and _text(node.value) is not None:
                continue
            self._rebinds(node)
            handler = self.handlers.get(type(node))
            if handler is not None:
                handler(node)
            if isinstance(node, ast.If) and _is_main_guard(node.test):
                stack += [(c, True) for c in node.body] + [(c, self.in_main) for c in node.orelse]
            else:
                stack += [(c, self.in_main) for c in ast.iter_child_nodes(node)]
        return sorted(self.found.values(), key=lambda f: (f.line, f.kind, f.detail))

    def _hit(self, node: ast.AST, kind: TamperKind, detail: str, message: str) -> None:
        line = getattr(node, "lineno", 0)
        finding = TamperFinding(path=self.path, line=line, kind=kind, detail=detail, message=message)
        self.found.setdefault((line, kind, detail), finding)

    def _chain(self, node: ast.AST) -> str | None:
        """The dotted name of a ``Name`` / ``Attribute`` chain, its root resolved through the imports."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def _root(self, node: ast.AST) -> str | None:
        """The module a target hangs off: ``time`` for ``time.time`` and ``vars(time)['x']``."""
        while isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        if isinstance(node, ast.Call) and self._chain(node.func) == "vars" and node.args:
            node = node.args[0]
        chain = self._chain(node) if isinstance(node, ast.Name) else None
        return chain.split(".", 1)[0] if chain else None

    def _describe(self, node: ast.AST) -> str:
        suffix = ""
        while isinstance(node, ast.Subscript):
            key = _text(node.slice)
            suffix = f"[{key!r}]{suffix}" if key is not None else f"[]{suffix}"
            node = node.value
        if isinstance(node, ast.Call) and self._chain(node.func) == "vars" and node.args:
            return f"vars({self._chain(node.args[0]) or '<expression>'}){suffix}"
        return (self._chain(node) or "<expression>") + suffix

    def _rebind_hit(self, node: ast.AST, root: str | None, detail: str) -> None:
        if root == "time":
            self._hit(node, "time-rebind", detail, f"rebinds the clock ({detail}), which the test runner reads")
        elif root in BUILTINS_ROOTS:
            self._hit(node, "builtins-rebind", detail, f"rebinds a builtin ({detail}) for every module of the run")

    def _rebinds(self, node: ast.AST) -> None:
        for target in _targets(node):
            if isinstance(target, ast.Attribute | ast.Subscript):
                self._rebind_hit(target, self._root(target), f"{self._describe(target)} =")

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name, "")

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._module(node, node.module, "")

    def _module(self, node: ast.AST, module: str, via: str) -> None:
        rule = module_rule(module)
        if rule is not None:
            self._hit(node, rule[0], f"import {module}", rule[1] + via)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        rule = identifier_rule(node.name)
        if rule is not None:
            hook = node.name.startswith("pytest_")
            self._hit(node, rule[0], node.name, f"defines the pytest hook {node.name}" if hook else rule[1])

    def _name(self, node: ast.Name) -> None:
        rule = identifier_rule(node.id)
        if rule is not None:
            self._hit(node, rule[0], node.id, rule[1])
        self._chain_rule(node, self.aliases.get(node.id))

    def _attribute(self, node: ast.Attribute) -> None:
        rule = identifier_rule(node.attr, attribute=True)
        if rule is not None:
            self._hit(node, rule[0], node.attr, rule[1])
        self._chain_rule(node, self._chain(node))

    def _chain_rule(self, node: ast.AST, chain: str | None) -> None:
        rule = CHAINS.get(chain or "")
        if chain and rule is not None and not (rule[0] == "argv-read" and self.in_main):
            self._hit(node, rule[0], chain, f"{chain}: {rule[1]}")

    def _call(self, node: ast.Call) -> None:
        name = self._chain(node.func) or ""
        short = name.removeprefix("builtins.")
        if short in DYNAMIC_EXEC:
            self._dynamic(node, short)
        if name in DYNAMIC_IMPORT or short == "__import__":
            self._dynamic_import(node, name)
        if name.startswith("sys.modules.") and name.rsplit(".", 1)[1] in _MODULES_METHODS and node.args:
            self._modules_key(node.args[0], store=name.endswith(("setdefault", "__setitem__")))
        self._patcher(node, name)
        self._xml_write(node, name)

    def _dynamic(self, node: ast.Call, name: str) -> None:
        source = _arg(node, 0, "source")
        literal = _text(source)
        if source is not None and literal is None:
            message = f"{name}() of a computed value, which the scan cannot see into"
            self._hit(node, "dynamic-exec", f"{name}(non-literal)", message)
        elif literal is not None and name != "__import__" and self.depth < _MAX_LITERAL_DEPTH:
            for inner in scan_python(self.path, literal.encode(), self.depth + 1) or []:
                self._hit(node, inner.kind, inner.detail, f"{inner.message} (in code passed to {name}())")

    def _dynamic_import(self, node: ast.Call, name: str) -> None:
        module = _text(node.args[0]) if node.args else None
        if module is not None:
            self.consumed.add(id(node.args[0]))
            self._module(node, module, f" (through {name})")

    def _modules_key(self, key_node: ast.AST, store: bool) -> None:
        key = _text(key_node)
        if key is None:
            return
        self.consumed.add(id(key_node))
        if names_pytest_module(key):
            self._hit(key_node, "pytest-internals", f"sys.modules[{key!r}]", f"looks up pytest's module {key!r}")
        elif store:
            self._rebind_hit(key_node, key.split(".", 1)[0], f"sys.modules[{key!r}] =")

    def _subscript(self, node: ast.Subscript) -> None:
        if self._chain(node.value) == "sys.modules":
            self._modules_key(node.slice, store=isinstance(node.ctx, ast.Store | ast.Del))

    def _compare(self, node: ast.Compare) -> None:
        if isinstance(node.ops[0], ast.In | ast.NotIn) and self._chain(node.comparators[0]) == "sys.modules":
            self._modules_key(node.left, store=False)

    def _patcher(self, node: ast.Call, name: str) -> None:
        """``setattr(time, 'time', f)``, ``mock.patch('time.time')``, ``monkeypatch.setattr(builtins, ...)``."""
        last = name.rsplit(".", 1)[-1] if name else getattr(node.func, "attr", "")
        if last in _PATCHERS and node.args:
            target = _text(node.args[0])
            root = target.split(".", 1)[0] if target is not None else self._root(node.args[0])
            attr = _text(node.args[1]) if len(node.args) > 1 else None
            self._rebind_hit(node, root, f"{last}({target or root}{'.' + attr if attr else ''})")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _DICT_WRITES:
            self._rebind_hit(node, self._root(node.func.value), f"{self._describe(node.func.value)}.{node.func.attr}()")

    def _xml_write(self, node: ast.Call, name: str) -> None:
        """A literal ``.xml`` path opened for writing (``open('r.xml', 'w')``, ``Path('r.xml').write_text``)."""
        if name in _OPENERS:
            target, mode = _text(_arg(node, 0, "file")), _text(_arg(node, 1, "mode")) or ""
            writes = any(c in mode for c in "wax+")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in {"write_text", "write_bytes"}:
            inner = node.func.value
            target, writes = (_text(_arg(inner, 0, "")) if isinstance(inner, ast.Call) else None), True
        else:
            return
        if writes and target is not None and target.lower().endswith(".xml"):
            message = f"writes the XML file {target!r}, as a test report would be written"
            self._hit(node, "report-path", f"writes {target!r}", message)

    def _constant(self, node: ast.Constant) -> None:
        text = _text(node)
        if text is None or id(node) in self.consumed:
            return
        for kind, detail, message in literal_rules(text):
            self._hit(node, kind, detail, f"a literal {message}")
