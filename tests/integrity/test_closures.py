"""What the code under test can reach of the harness without an audited read: closures.

A function's ``__defaults__``, ``__kwdefaults__`` and ``__code__`` are audited reads the plugin refuses for its
own functions; ``__closure__`` and ``cell_contents`` are not audited at all. So no plugin function reachable
from outside (the finder first in ``sys.meta_path``, the loaders of the modules it serves, the functions set
on pytest's rewrite module) may hold the harness's state in a closure: here a test of the repository walks
every closure it can reach from those places, in a real harnessed run with a hidden test handed over (and in a
varied run, where the walk runs in the child forked for the call).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity.harness import Varied
from gradeflow.models import TaskSpec
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import inject_hidden

SECRET = "hidden-expected-4242"
# Passing, and collected after the walk: a failing test's report (pytest's, with its source) holds its text.
HIDDEN = f"def test_hidden():\n    assert {SECRET!r}.endswith(str(4242))\n"

WALK = r"""
import functools
import re
import sys
import types

import _pytest.assertion.rewrite as rewrite

SECRET = "hidden-expected-" + "4242"  # never whole in this file: only the hidden test holds it
PLACE = re.compile(r"test_walk\.py:\d+:\d+:__")  # a compared-values key (``keys``, ``record["compared"]``)
LEAVES = (str, bytes, int, float, bool, type(None), types.ModuleType)


def _walk(roots):
    found, seen, functions = [], set(), 0
    stack = [(value, label) for label, value in roots]
    while stack and len(seen) < 400_000:
        value, label = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        if kind is str:
            if SECRET in value:
                found.append(f"the hidden test's text at {label}")
            elif PLACE.search(value):
                found.append(f"the harness's compared-values keys at {label}")
            continue
        if isinstance(value, LEAVES):
            continue
        children = []
        if kind is types.FunctionType:
            functions += 1
            module = str(value.__module__)  # the plugin's (its boot module's closures hold no secret: see boot.py)
            if module.startswith("_plugin_") and not module.endswith("_boot") and value.__closure__ is not None:
                found.append(f"a closure of the plugin's at {label} ({value.__qualname__})")
            children += [(c.cell_contents, f"{label}.<cell>") for c in value.__closure__ or () if _full(c)]
            wrapped = value.__dict__.get("__wrapped__")
            if wrapped is not None:
                children.append((wrapped, f"{label}.__wrapped__"))
        elif kind is types.MethodType:
            children += [(value.__func__, f"{label}.__func__"), (value.__self__, f"{label}.__self__")]
        elif kind is functools.partial:
            children += [(value.func, f"{label}.func"), (value.args, f"{label}.args"), (value.keywords, f"{label}.kw")]
        elif kind is dict or isinstance(value, (dict, types.MappingProxyType)):
            if "nonce" in value and "calls" in value:
                found.append(f"the harness's record at {label}")
            children += [(v, f"{label}[{k!r}]") for k, v in list(value.items())]
            children += [(k, f"{label} key") for k in list(value) if type(k) is str]
        elif isinstance(value, (list, tuple, set, frozenset)):
            children += [(v, f"{label}[]") for v in list(value)]
        elif isinstance(value, type):
            children += [(v, f"{label}.{k}") for k, v in list(vars(value).items())]
        else:
            children.append((kind, f"type({label})"))
            space = getattr(value, "__dict__", None)
            if type(space) is dict:
                children += [(v, f"{label}.{k}") for k, v in list(space.items())]
            for klass in kind.__mro__:
                for slot in vars(klass).get("__slots__", ()):
                    if isinstance(slot, str) and hasattr(value, slot):
                        children.append((getattr(value, slot), f"{label}.{slot}"))
        stack += children
    return found, functions


def _full(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def test_walk(pytestconfig):
    assert type(sys.meta_path[0]).__name__ == "Finder"  # the harness's, first; this assert is probed
    roots = [("sys.meta_path", list(sys.meta_path)), ("sys.path_hooks", list(sys.path_hooks))]
    for name, module in list(sys.modules.items()):
        if name.startswith(("_pytest", "pytest", "pluggy", "_plugin_", "importlib")):
            roots.append((name, dict(vars(module))))
        roots += [(f"{name}.__spec__", getattr(module, "__spec__", None)),
                  (f"{name}.__loader__", getattr(module, "__loader__", None))]
    for plugin in pytestconfig.pluginmanager.get_plugins():
        if not isinstance(plugin, types.ModuleType):
            roots.append((f"plugin {type(plugin).__name__}", plugin))
    found, functions = _walk(roots)
    assert rewrite._call_compared.__name__ == "probe" and functions > 100
    assert found[:8] == []
"""


@pytest.mark.parametrize("varied", [False, True], ids=["run", "varied-run"])
def test_no_harness_state_is_reachable_through_a_closure(tmp_path: Path, varied: bool) -> None:
    # In a varied run each test's ``item.runtest`` (reached through the session) is the harness's too: it leads to
    # the run's signing function and the call's nonce, so it holds them in keyword-only defaults, not a closure.
    tree = tmp_path / "repo"
    (tree / "tests").mkdir(parents=True)
    (tree / "src").mkdir()
    (tree / "tests" / "test_walk.py").write_text(WALK)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_x_hidden.py").write_text(HIDDEN)
    tests = {
        "command": "PYTHONDONTWRITEBYTECODE= python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        "fail_to_pass": ["tests/test_walk.py::test_walk"],
        "pass_to_pass": [],
        "hidden": str(hidden),
    }
    task = TaskSpec.model_validate(make_task(env={"PYTHONPATH": "src"}, tests=tests))
    handed = inject_hidden(task, tree, tmp_path / "backup")
    drawn = Varied.drawn() if varied else None
    harness = start_harness(task, tree, None, None, hidden=handed, varied=drawn)
    assert harness is not None
    with LocalSandboxFactory().open(tree) as sandbox:
        evidence = run_test_command(task, sandbox, harness=harness, base=None)
    assert evidence.harness is not None, evidence.output_tail
    outcomes = {case.name: case.outcome for case in evidence.cases}
    assert outcomes["test_hidden"] == "passed"  # served from memory, and run
    assert outcomes["test_walk"] == "passed", evidence.output_tail
