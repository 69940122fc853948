"""What the code under test reaches in the test process, in a real harnessed pytest run: standard modules it
rebinds (loaded before the harness or after it), the process memory through ``ctypes``, and whether it can
tell that it runs under a test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from integrity.plugin_run import install_plugin, read_record

WORKSPACE_TESTS = """
import lib


def test_library():
    assert lib.run() is not None
"""


def harnessed_run(
    tmp_path: Path, library: str, tests: str = WORKSPACE_TESTS, installed: str = ""
) -> tuple[dict[str, Any], str]:
    """The harness's record and pytest's output for a run of ``tests`` against ``src/lib.py``; ``installed`` is
    the module ``helper``, outside the workspace as an installed package is."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lib.py").write_text(library)
    (root / "tests" / "test_lib.py").write_text(tests)
    (tmp_path / "helper.py").write_text(installed)
    plugin = install_plugin(tmp_path, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPATH"] = f"{tmp_path}:src"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "tests"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    record = read_record(tmp_path)
    return record, done.stdout + done.stderr


def standard_rebound(record: dict[str, Any]) -> list[str]:
    return sorted(label for label in record["patched"] if label.startswith("standard library "))


# fractions and statistics are first imported here, after the harness started: no snapshot holds them.
LATE_FUNCTION = """
import fractions


def _exact(numerator, denominator=1):
    return numerator if denominator else float("inf")


fractions.Fraction = _exact


def run():
    return 1
"""

LATE_CLASS = """
import statistics


class _Lenient(ValueError):
    def __init__(self, *args):
        super().__init__(*args)


statistics.StatisticsError = _Lenient


def run():
    return 1
"""

# A module the snapshot holds, deleted and imported again: a new namespace, rebound.
REIMPORTED = """
import sys

del sys.modules["fnmatch"]
import fnmatch

fnmatch.fnmatchcase = lambda name, pattern: True


def run():
    return 1
"""

HONEST_LATE_IMPORTS = """
import asyncio
import colorsys
import fractions
import secrets
import statistics
import zoneinfo
from json import tool


def run():
    return (asyncio, colorsys, fractions, secrets, statistics, zoneinfo, tool, fractions.Fraction(1, 3))
"""


def test_a_standard_module_first_imported_late_and_rebound_to_repository_code_is_named(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, LATE_FUNCTION)
    assert standard_rebound(record) == ["standard library fractions.Fraction"], output


def test_a_repository_class_put_in_a_late_standard_module_is_named(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, LATE_CLASS)
    assert standard_rebound(record) == ["standard library statistics.StatisticsError"], output


def test_a_standard_module_imported_again_and_rebound_is_named(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, REIMPORTED)
    assert standard_rebound(record) == ["standard library fnmatch.fnmatchcase"], output


def test_standard_modules_imported_late_by_honest_code_are_not_named(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, HONEST_LATE_IMPORTS)
    assert "1 passed" in output, output
    assert standard_rebound(record) == []


def refused(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(event, what) of every refusal the audit hook noted, the what cut to its first word."""
    return sorted((event, detail.split(" ")[0]) for event, _where, detail in record["audit"] if "refused" in event)


# Each way to the process's memory, tried by the repository's code: each must be refused (a PermissionError).
MEMORY_READS = """
import concurrent.futures
import os
import sys

SECRET = b"a secret of the process"


def attempts(ctypes):
    address = id(SECRET)
    yield "string_at", lambda: ctypes.string_at(address, 40)
    yield "from_address", lambda: (ctypes.c_char * 40).from_address(address).raw
    yield "from_buffer", lambda: ctypes.POINTER(ctypes.c_char).from_buffer(bytearray(address.to_bytes(8, "little")))
    yield "pythonapi", lambda: ctypes.pythonapi.PyObject_Repr
    yield "libc", lambda: ctypes.CDLL(None).process_vm_readv
    yield "executor", lambda: concurrent.futures.ThreadPoolExecutor(1).submit(ctypes.string_at, address, 40).result()
    yield "proc-mem-link", lambda: os.symlink("/proc/self/mem", os.path.join(os.environ["SCRATCH"], "m"))
    folder = os.open("/proc/self", os.O_RDONLY)
    yield "proc-mem-dir-fd", lambda: os.open("mem", os.O_RDONLY, dir_fd=folder)


def run():
    outcomes = {}
    try:
        import ctypes
    except PermissionError:
        outcomes["import"] = "refused"
    import helper  # an installed package that loads ctypes for itself, and may use it

    outcomes["helper"] = helper.peek(SECRET)
    ctypes = sys.modules["ctypes"]
    for name, attempt in attempts(ctypes):
        try:
            attempt()
            outcomes[name] = "done"
        except PermissionError:
            outcomes[name] = "refused"
    return outcomes
"""

HELPER = """
import ctypes


def peek(value):
    return ctypes.string_at(id(value), 8) is not None and "read"
"""

MEMORY_TESTS = """
import lib


def test_library():
    assert lib.run() == {
        "import": "refused", "helper": "read", "string_at": "refused", "from_address": "refused",
        "from_buffer": "refused", "pythonapi": "refused", "libc": "refused", "executor": "refused",
        "proc-mem-link": "refused", "proc-mem-dir-fd": "refused",
    }
"""


def test_the_repositorys_ways_to_the_process_memory_are_refused_and_an_installed_packages_ctypes_works(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SCRATCH", str(tmp_path))
    record, output = harnessed_run(tmp_path, MEMORY_READS, MEMORY_TESTS, installed=HELPER)
    assert "1 passed" in output, output
    assert {event for event, _what in refused(record)} >= {
        "refused:import",
        "refused:ctypes.string_at",
        "refused:ctypes.cdata",
        "refused:ctypes.dlsym",
        "refused:ctypes.dlopen",
        "refused:open",
        "refused:os.symlink",
    }


NO_CTYPES = """
import sys


def run():
    return "ctypes" not in sys.modules or None
"""


def test_the_harness_leaves_no_ctypes_module_loaded(tmp_path: Path) -> None:
    _record, output = harnessed_run(tmp_path, NO_CTYPES)
    assert "1 passed" in output, output


# The repository's code looks for pytest's marks in the environment, built from harmless pieces.
ENVIRONMENT_MARKS = """
import os


def run():
    names = os.environ.copy()
    return sorted(name for name in names if name.endswith(("_CURRENT_TEST", "_VERSION")) and name[:2] == "PY")
"""

ENVIRONMENT_TESTS = """
import lib


def test_library():
    assert lib.run() == []
"""


def test_pytests_marks_of_a_running_test_are_not_in_the_environment(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, ENVIRONMENT_MARKS, ENVIRONMENT_TESTS)
    assert "1 passed" in output, output
    assert record["patched"] == []


INSIDE_THE_HOOK = """
import sys

seen = []


def _record():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "hook":
            seen.append(frame.f_code.co_filename)
        frame = frame.f_back


class Name(str):
    # A str whose methods run whatever the caller asks: handed to an audited call, any method the audit hook
    # calls on it runs the repository's code inside the hook, where the hook audits nothing of its own thread.
    def __hash__(self):
        _record()
        return str.__hash__(self)

    def __eq__(self, other):
        _record()
        return str.__eq__(self, other)

    def startswith(self, *args):
        _record()
        return str.startswith(self, *args)

    def endswith(self, *args):
        _record()
        return str.endswith(self, *args)

    def decode(self, *args):
        _record()
        return self


def run():
    refused = []
    for name, attempt in (
        ("open", lambda: open(Name("conftest.py"), "w").close()),
        ("import", lambda: __import__(Name("ctypes"))),
        ("compile", lambda: compile("1", Name("made.py"), "eval")),
    ):
        try:
            attempt()
        except PermissionError:
            refused.append(name)
        except Exception:
            pass
    return seen, refused
"""

HOOK_TESTS = """
import lib


def test_library():
    assert lib.run() == ([], ["import"])
"""


def test_the_audit_hook_calls_no_method_of_an_object_the_repository_handed_over(tmp_path: Path) -> None:
    """A str subclass handed to open, import and compile runs none of its methods inside the hook (where the
    hook audits nothing of its own thread), and importing ctypes by such a name is still refused."""
    _record, output = harnessed_run(tmp_path, INSIDE_THE_HOOK, tests=HOOK_TESTS)
    assert "1 passed" in output, output
