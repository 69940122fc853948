"""The harness's change-reach tracer, in a real pytest run: which of the lines a patch changed each test ran,
from its setup to its teardown, in a function's code (see ``gradeflow.tasks._reach``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from integrity.plugin_run import install_plugin, read_record

LIB = """POLICY = "raise"


def divide(a, b):
    if b == 0:
        raise ZeroDivisionError("b is 0")
    return a / b
"""

LATE = """import lib

LATE = lib.divide(4, 2)
"""

TESTS = """import pytest

import lib


@pytest.fixture
def half():
    return lib.divide(1, 2)


def test_policy():
    assert lib.POLICY == "raise"


def test_raises():
    with pytest.raises(ZeroDivisionError):
        lib.divide(1, 0)


def test_fixture(half):
    assert half


def test_import_in_the_call():
    import late

    assert late.LATE == 2
"""


def _run(tmp_path: Path, reach: dict[str, list[int]]) -> dict[str, object]:
    workspace, folder = tmp_path / "ws", tmp_path / "plugin"
    (workspace / "src").mkdir(parents=True)
    (workspace / "tests").mkdir()
    folder.mkdir()
    (workspace / "src" / "lib.py").write_text(LIB)
    (workspace / "src" / "late.py").write_text(LATE)
    (workspace / "tests" / "test_lib.py").write_text(TESTS)
    options = install_plugin(folder, workspace, reach=reach)
    env = {**os.environ, "PYTHONPATH": f"{folder}:{workspace / 'src'}", "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "tests"]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return read_record(folder)


def test_each_test_gets_the_changed_lines_it_ran_in_a_function(tmp_path: Path) -> None:
    record = _run(tmp_path, {"src/lib.py": [1, 5, 6, 7], "src/late.py": [3]})
    reached = {nodeid.rsplit("::", 1)[1]: found for nodeid, found in record["reached"].items()}  # type: ignore[union-attr]
    assert reached == {
        "test_policy": [],  # a module-level constant ran at import, before the test: no test's
        "test_raises": ["src/lib.py:5", "src/lib.py:6"],
        "test_fixture": ["src/lib.py:5", "src/lib.py:7"],  # in its fixture's setup
        # late's module body ran in the call (not counted); lib.divide, which it called, is a function
        "test_import_in_the_call": ["src/lib.py:5", "src/lib.py:7"],
    }
    assert record["reach_unmeasured"] == []
    assert record["audit"] == []  # the harness's own tracer is not the repository's


def test_without_reach_nothing_is_traced(tmp_path: Path) -> None:
    record = _run(tmp_path, {})
    assert "reached" not in record
