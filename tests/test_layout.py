"""The floor plan: packages in layers, imports only point down or sideways, no circles, few flat modules.

Layers, top down: the faces (``cli``, ``api``), ``service`` and ``authoring``, ``flows``, ``tasks``, then ``graders`` /
``sandbox`` / ``evaluation``, then ``models`` / ``profiles`` / ``spec``, then the plumbing every layer
may use (``errors``, ``config``, ``logs``). Every import counts, those inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gradeflow

PACKAGE = Path(gradeflow.__file__).resolve().parent
LAYERS = {
    "__init__": 0,
    "__main__": 0,
    "cli": 0,
    "api": 0,
    "service": 1,
    "authoring": 1,
    "agents": 1,
    "flows": 2,
    "engine": 2,
    "tasks": 3,
    "integrity": 4,
    "graders": 4,
    "sandbox": 4,
    "environments": 4,
    "evaluation": 4,
    "models": 5,
    "profiles": 5,
    "spec": 5,
    "errors": 6,
    "config": 6,
    "logs": 6,
    "bulk": 6,
    "text": 6,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The gradeflow modules ``path`` imports (``from gradeflow.x import y`` counts y when it is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gradeflow")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gradeflow"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES}
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: {m for m in _imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} <= set(LAYERS), "a new top-level part needs a place in LAYERS"


def test_agent_runs_stand_on_the_engine_never_on_the_service() -> None:
    # The service deploys agent trials (service imports agents); what both need is in engine/, below both.
    across = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if (_part(module), _part(target)) == ("agents", "service")
    )
    assert not across, "\n".join(across)


def test_imports_never_point_up() -> None:
    upward = sorted(
        f"{module} ({_part(module)}) imports {target} ({_part(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if LAYERS[_part(target)] < LAYERS[_part(module)]
    )
    assert not upward, "\n".join(upward)


def test_no_import_circle_between_modules() -> None:
    # A package's __init__ re-exporting its own modules is not a circle worth breaking.
    edges = {
        m: {t for t in ts if not (m.startswith(t + ".") and MODULES[t].name == "__init__.py")}
        for m, ts in GRAPH.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_no_private_module_is_imported_from_another_part() -> None:
    crossing = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if target.split(".")[-1].startswith("_") and not target.endswith("__init__") and _part(target) != _part(module)
    )
    assert not crossing, "\n".join(crossing)


def test_at_most_eight_modules_sit_flat_at_the_top() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 8, flat
