"""The harness plugin's files for one run: a small loader module, the plugin's code compiled once per grader
process, and its source.

The plugin is one module for the run, assembled from the parts in :mod:`gradeflow.integrity.pytest_harness`
(``.py`` modules that ruff and mypy read, which nothing imports: each is read here as text). Each part's
docstring and its relative imports (how the parts name each other for the linters) are dropped, the rest kept
verbatim, the parts concatenated in a fixed order (``PARTS``), and a last line deletes every global they bind
but ``pytest`` and the hooks pytest looks up: the run sees one module, as it always did, holding no function
the code under test could swap or read.

Compiling the plugin (then 2,500 lines) cost each test run about 20 ms of CPU (a tenth of the harness's whole
cost at 1,000 tests). So the grader compiles the template once, with its run's config left out, and writes
the code object (``marshal``, after this interpreter's magic number) beside a loader under the run's module
name. In the sandbox the loader takes that code when its own interpreter's magic number is the same (its
file names set to the loader's path, so the plugin's frames are told as its own); otherwise (another Python,
a docker image's) it compiles the source written beside it. Either way the config is the loader's own
literal, handed to the plugin as ``_gradeflow_config``, which the plugin deletes with the rest of its
module globals. The files sit in the sandbox's harness folder, which the test user cannot write (isolated,
docker), and the loader runs before any code of the repository is imported.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import marshal
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources

__all__ = ["PARTS", "assembled", "plugin_files", "plugin_template"]

PARTS = (
    "audit",
    "channel",
    "standard_library",
    "versions",
    "sources",
    "compared",
    "claimed",
    "internals",
    "call_writes",
    "machinery",
    "function_layers",
    "module_names",
    "varied",
    "reach",
    "session",
    "hooks",
)
"""The harness's parts (modules of ``gradeflow.integrity.pytest_harness``) in the order they are assembled: the
module-level code that builds the harness and defines pytest's hooks (``hooks``) last."""

_HEADER = '''"""This run's pytest plugin. PYTEST_DONT_REWRITE: pytest marks a ``-p`` plugin for assertion rewriting;
this one has no assert to explain, and rewriting it cost about as much again as compiling it."""
# Loaded by path (``-p``) from outside the repository for one run; assembled from the parts in pytest_harness/.
'''

_LOADER = '''"""gradeflow's pytest harness (loader). PYTEST_DONT_REWRITE: see gradeflow.integrity.plugin_files."""


def _gradeflow_code():
    import sys

    base = __file__[: -len(".py")]
    magic = getattr(sys.modules.get("_frozen_importlib_external"), "MAGIC_NUMBER", None)
    try:
        with open(base + ".code", "rb") as handle:
            data = handle.read()
    except OSError:
        data = b""
    if magic and data[: len(magic)] == magic:
        import marshal

        def placed(code):
            consts = tuple(placed(c) if type(c) is type(code) else c for c in code.co_consts)
            return code.replace(co_filename=__file__, co_consts=consts)

        return placed(marshal.loads(data[len(magic) :]))
    with open(base + ".source", encoding="utf-8") as handle:
        return compile(handle.read(), __file__, "exec", dont_inherit=True)


_gradeflow_config = __CONFIG__
exec(_gradeflow_code(), globals())
'''
# The names the loader binds before the harness runs in its module, deleted by the harness with its own.
_LOADER_NAMES = ("_gradeflow_config", "_gradeflow_code")


@cache
def plugin_template() -> str:
    """The plugin's source: the parts of ``gradeflow/integrity/pytest_harness/`` (read as text, never imported)
    assembled into one module."""
    folder = resources.files("gradeflow.integrity").joinpath("pytest_harness")
    return assembled((name, folder.joinpath(f"{name}.py").read_text(encoding="utf-8")) for name in PARTS)


def assembled(parts: Iterable[tuple[str, str]]) -> str:
    """One module's source from ``(name, source)`` parts, in their order: each part without its docstring and its
    relative imports (located with :mod:`ast`, their lines removed, every other line kept as it is), then a
    ``del`` of every global the parts and the loader bind but ``pytest`` and ``pytest_*`` hooks."""
    pieces, bound = [_HEADER], dict.fromkeys(_LOADER_NAMES)
    for name, text in parts:
        tree = ast.parse(text)
        dropped: set[int] = set()
        for index, node in enumerate(tree.body):
            docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            if docstring or (isinstance(node, ast.ImportFrom) and node.level):
                dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
        lines = [line for number, line in enumerate(text.splitlines(keepends=True)) if number not in dropped]
        pieces.append(f"# pytest_harness/{name}.py\n" + "".join(lines).strip("\n") + "\n")
        bound.update(dict.fromkeys(_module_globals(tree.body)))
    kept = [name for name in bound if name != "pytest" and not name.startswith("pytest_")]
    pieces.append(f"del {', '.join(kept)}\n")
    return "\n\n".join(pieces)


def _module_globals(body: list[ast.stmt]) -> Iterable[str]:
    # The names module-level code binds (through ``if`` and ``try`` too): definitions, assignments, absolute imports.
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield from (n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
            yield from (alias.asname or alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            handlers = [h.body for h in node.handlers] if isinstance(node, ast.Try) else []
            finals = node.finalbody if isinstance(node, ast.Try) else []
            for block in (node.body, node.orelse, finals, *handlers):
                yield from _module_globals(block)


@cache
def _compiled(template: str) -> bytes:
    code = compile(template, "<gradeflow harness>", "exec", dont_inherit=True)
    return importlib.util.MAGIC_NUMBER + marshal.dumps(code)


def plugin_files(module: str, config: Mapping[str, object], template: str | None = None) -> dict[str, bytes]:
    """File name → bytes for a harness folder: ``module``'s loader (``<module>.py``) with ``config`` as its
    literal, the compiled plugin (``<module>.code``) and its source (``<module>.source``); ``template`` replaces
    the shipped plugin (benchmarks of an older one)."""
    source = plugin_template() if template is None else template
    loader = _LOADER.replace("__CONFIG__", repr(json.dumps(dict(config))))
    return {
        f"{module}.py": loader.encode(),
        f"{module}.code": _compiled(source),
        f"{module}.source": source.encode(),
    }
