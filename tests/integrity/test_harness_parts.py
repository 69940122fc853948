"""The pytest harness's parts (``gradeflow/integrity/pytest_harness/``): assembled into the one module a run loads,
which a task's own Python 3.9 compiles, and which leaves the run's module holding nothing but pytest's hooks; read
by gradeflow as text, never imported."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from gradeflow.integrity.plugin_files import PARTS, assembled, plugin_template
from integrity.plugin_run import NAME
from integrity.test_runtime_reach import harnessed_run

FOLDER = Path(__file__).resolve().parents[2] / "src" / "gradeflow" / "integrity" / "pytest_harness"


def _top_level_definitions(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_module_of_the_folder_is_a_part_but_the_package_and_the_loaders_stand_in() -> None:
    modules = {path.stem for path in FOLDER.glob("*.py")}
    assert modules == {*PARTS, "__init__", "_loaded"}
    assert PARTS[-1] == "hooks"  # the module-level code that builds the harness runs after every definition


def test_the_parts_assemble_into_one_module_a_python_3_9_parses() -> None:
    source = plugin_template()
    tree = ast.parse(source, feature_version=(3, 9))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    # every function each part defines is in the one module, once
    defined = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    for name in PARTS:
        part = _top_level_definitions(ast.parse((FOLDER / f"{name}.py").read_text(encoding="utf-8")))
        assert part <= set(defined), name
    assert len(defined) == len(set(defined))
    assert ast.get_docstring(tree) is not None and "PYTEST_DONT_REWRITE" in ast.get_docstring(tree)
    compile(source, "<harness>", "exec", dont_inherit=True)


FIRST = '''"""Part one."""

import pytest

from .two import helper


def _make():  # kept as written
    return 1
'''

SECOND = '''"""Part two."""

from .one import (
    _make,
)

_made = _make()


def pytest_configure(config):
    pass
'''


def test_the_assembler_keeps_each_line_but_docstrings_and_relative_imports() -> None:
    source = assembled([("one", FIRST), ("two", SECOND)])
    assert "Part one" not in source and "Part two" not in source and "from ." not in source
    assert "def _make():  # kept as written\n    return 1\n" in source
    assert "import pytest\n" in source and "_made = _make()\n" in source
    deleted = ast.parse(source).body[-1]
    assert isinstance(deleted, ast.Delete)
    assert sorted(target.id for target in deleted.targets if isinstance(target, ast.Name)) == [
        "_gradeflow_code",
        "_gradeflow_config",
        "_made",
        "_make",
    ]


def test_gradeflow_reads_the_parts_as_text_and_never_imports_them() -> None:
    probe = (
        "import json, sys\n"
        "import gradeflow.integrity\n"
        "from gradeflow.integrity.harness import Harness\n"
        "from gradeflow.integrity.plugin_files import plugin_files\n"
        "plugin_files('_gradeflow_probe', {'nonce': 'x'})\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'pytest_harness' in m)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(done.stdout) == []


NAMESPACE = f"""
import sys


def test_the_harness_module_holds_only_pytest_and_its_hooks():
    names = sorted(name for name in vars(sys.modules["{NAME}"]) if not name.startswith("__"))
    assert names == [
        "pytest",
        "pytest_collection_finish",
        "pytest_collection_modifyitems",
        "pytest_configure",
        "pytest_load_initial_conftests",
        "pytest_runtest_call",
        "pytest_sessionfinish",
        "pytest_unconfigure",
    ], names
"""


def test_the_run_sees_one_module_that_deleted_every_global_of_its_parts(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, "def run():\n    return 1\n", NAMESPACE)
    assert "1 passed" in output, output
    assert record["finished"] is True
