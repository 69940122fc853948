"""``--help``, ``--version`` and usage errors answer from the parser alone: no heavy module is imported for them.

The probe runs the ``gradeflow`` executable's entry point (:func:`gradeflow.cli.run`) and, as the process
exits, prints which of the watched modules were imported: the heavy libraries, and the package metadata,
which only ``--version`` reads. A command that runs still imports what it needs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from gradeflow.cli.main import _parser

WATCHED = ("docker", "importlib.metadata", "prefect", "pydantic", "sqlalchemy", "structlog")
PROBE = f"""
import atexit, sys
atexit.register(lambda: print("loaded:", *[name for name in {WATCHED!r} if name in sys.modules]))
sys.argv[0] = "gradeflow"
from gradeflow.cli import run
run()
"""
MISSING = "the following arguments are required"


def _gradeflow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)


def _loaded(done: subprocess.CompletedProcess[str]) -> list[str]:
    last = done.stdout.splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout
    return last.split()[1:]


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--help"], "usage: gradeflow [-h] [--version]"),
        (["grade", "--help"], "usage: gradeflow grade [-h]"),
        (["task", "new", "--help"], "usage: gradeflow task new [-h]"),
        (["env", "prune", "--help"], "usage: gradeflow env prune [-h]"),
    ],
)
def test_help_imports_no_heavy_module(args: list[str], shown: str) -> None:
    done = _gradeflow(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(shown), done.stdout
    assert _loaded(done) == []


def test_version_reads_the_package_metadata_only() -> None:
    done = _gradeflow("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gradeflow "), done.stdout
    assert _loaded(done) == ["importlib.metadata"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], MISSING),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["grade", "task.yaml"], "one of the arguments --workspace --patch is required"),
        (["validate"], MISSING),
        (["validate", "task.yaml", "--sandbox", "vm"], "argument --sandbox: invalid choice: 'vm'"),
        (["validate", "task.yaml", "--repeat", "0"], "expected a whole number of at least 1"),
        (["task", "new", "--repo", "r"], MISSING),
        (["env"], MISSING),
        (["report", "--seed", "x"], "argument --seed: invalid int value"),
    ],
)
def test_a_usage_error_exits_2_without_a_heavy_module(args: list[str], said: str) -> None:
    done = _gradeflow(*args)
    assert done.returncode == 2, done.stderr
    assert "usage: gradeflow" in done.stderr and said in done.stderr, done.stderr
    assert _loaded(done) == []


def test_a_command_that_runs_imports_what_it_needs() -> None:
    """The probe sees imports: ``schema`` prints the task spec's JSON schema, which pydantic builds."""
    done = _gradeflow("schema")
    assert done.returncode == 0, done.stderr
    assert '"title": "TaskSpec"' in done.stdout
    assert "pydantic" in _loaded(done)


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _command_paths(child, (*path, name))
    return found


def test_every_commands_help_imports_no_heavy_module() -> None:
    paths = [list(path) for path in _command_paths(_parser())]
    assert ["env", "prune"] in paths and ["task", "strength"] in paths
    code = f"""
import contextlib, io, sys
from gradeflow.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    for path in {paths!r}:
        try:
            main([*path, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, (path, exc.code)
print("loaded:", *[name for name in {WATCHED!r} if name in sys.modules])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _loaded(done) == []
