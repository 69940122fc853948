"""The checks after every call see a watched name rebound however the write is made, whichever check watches it.

The per-call checks compare a namespace's values only when the namespace was written to since the last check
that found everything in place (its dict's version tag; see ``_held`` in the plugin). These tests make the write
in the ways CPython has, a specialised attribute store warmed up first among them, and in a later call than the
first, so a fast path that missed one would leave the rebinding unnoted. The next test puts the name back, so
only a check made between the two calls sees it (all of them wait on one look at every watched namespace's
tag: a look that missed a namespace would leave its rebinding unnoted).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from integrity.plugin_run import install_plugin, read_record

LIBRARY = """
import sys

import _pytest.python as python
import _pytest.reports as reports
import _pytest.runner as runner

saved = []


def quiet(*args, **kwargs):
    return False


def restore():
    for owner, name, value in saved:
        setattr(owner, name, value)
    return True


def rebind(how):
    original = runner.check_interactive_exception
    saved.append((runner, "check_interactive_exception", original))
    saved.append((python.Function, "setup", python.Function.setup))
    if how == "attribute":
        for _ in range(5000):  # warmed up: the store is specialised by now
            runner.check_interactive_exception = original
        runner.check_interactive_exception = quiet
    elif how == "dict":
        vars(runner)["check_interactive_exception"] = quiet
    elif how == "update":
        vars(runner).update(check_interactive_exception=quiet)
    elif how == "class":
        for _ in range(5000):
            python.Function.setup = python.Function.setup
        python.Function.setup = quiet
    elif how == "internals":  # a binding only the snapshot of pytest's internals holds
        saved.append((reports, "TestReport", reports.TestReport))
        reports.TestReport = type("TestReport", (reports.TestReport,), {})
    elif how == "test-module":  # a name the test module imported
        module = sys.modules["test_lib"]
        saved.append((module, "lib", module.lib))
        module.lib = type(sys)("lib")
    return True
"""

TESTS = """
import lib


def test_first():
    assert True


def test_second():
    assert True


def test_rebinds():
    assert lib.rebind({how!r})


def test_after():
    import lib as real

    assert real.restore()
"""


def run(tmp_path: Path, how: str) -> dict[str, Any]:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(LIBRARY)
    (root / "tests" / "test_lib.py").write_text(TESTS.format(how=how))
    plugin = install_plugin(tmp_path, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = f"{tmp_path}:src"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "tests"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # the tests ran (a failed one is fine)
    return read_record(tmp_path)


@pytest.mark.parametrize(
    ("how", "name"),
    [
        ("attribute", "check_interactive_exception"),
        ("dict", "check_interactive_exception"),
        ("update", "check_interactive_exception"),
        ("class", "Function.setup"),
        ("internals", "_pytest.reports.TestReport"),
        ("test-module", "test_lib.py lib"),
    ],
)
def test_a_name_rebound_in_a_later_call_is_noted(tmp_path: Path, how: str, name: str) -> None:
    record = run(tmp_path, how)
    labels = record["patched"] + record["namespaces"]
    assert any(name in label for label in labels), labels


def test_no_write_no_note(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_plain.py").write_text("def test_one():\n    assert True\n\n\ndef test_two():\n    pass\n")
    plugin = install_plugin(tmp_path, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = str(tmp_path)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "tests"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert read_record(tmp_path)["patched"] == []


SHADOWING_LIBRARY = """
import sys


class Mine(ArithmeticError):
    pass


def share():
    for name, module in list(sys.modules.items()):
        if name.startswith("test_"):
            vars(module).setdefault("ZeroDivisionError", Mine)


if {at_import}:
    share()


def run():
    if not {at_import}:
        share()
    return True
"""

HONEST_TESTS = """
import os.path
import lib
from lib import run as go

counter = 0
for index in range(2):
    pass
with open(os.path.devnull) as sink:
    pass
try:
    import no_such_module
except ImportError as missing:
    pass
if (size := 3) > 2:
    pass
match [1, 2]:
    case [first, *others]:
        pass


def bump():
    global late_name
    late_name = 1


class TestKind:
    def test_method(self):
        assert True


def test_first():
    bump()
    assert go()


def test_second():
    assert True
"""


def plugin_run(tmp_path: Path, library: str, tests: str) -> dict[str, Any]:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(library)
    (root / "tests" / "test_lib.py").write_text(tests)
    plugin = install_plugin(tmp_path, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = f"{tmp_path}:src"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "tests"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return read_record(tmp_path)


@pytest.mark.parametrize("at_import", [True, False], ids=["at-import", "in-a-call"])
def test_a_name_a_test_module_s_code_never_binds_is_noted(tmp_path: Path, at_import: bool) -> None:
    # The word "modules" in its text does not stand for sys.modules: the module is still checked.
    tests = '"""Tests of the lib modules."""\nimport lib\n\n\ndef test_one():\n    assert lib.run()\n\n\n'
    tests += "def test_two():\n    assert True\n"
    record = plugin_run(tmp_path, SHADOWING_LIBRARY.format(at_import=at_import), tests)
    assert [n for n in record["namespaces"] if "ZeroDivisionError (not bound by its code)" in n], record["namespaces"]


def test_names_a_test_module_binds_itself_are_not_noted(tmp_path: Path) -> None:
    record = plugin_run(tmp_path, "def run():\n    return True\n", HONEST_TESTS)
    assert record["namespaces"] == []


def test_a_test_module_that_binds_names_dynamically_is_not_judged_by_its_names(tmp_path: Path) -> None:
    tests = "import lib\n\nglobals()['made'] = 1\n\n\ndef test_one():\n    assert lib.run()\n"
    record = plugin_run(tmp_path, SHADOWING_LIBRARY.format(at_import=False), tests)
    assert not [n for n in record["namespaces"] if "not bound by its code" in n]
