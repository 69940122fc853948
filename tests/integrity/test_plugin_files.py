"""The harness plugin's files: the loader runs the code the grader compiled when its interpreter's magic number
matches, else the source beside it; either way with the run's config and the loader's own file name. And, in a
harnessed run, what the audit hook's quick exits leave out and what they still see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradeflow.integrity.plugin_files import plugin_files
from integrity.test_runtime_reach import WORKSPACE_TESTS, harnessed_run

TEMPLATE = "FROM = 'compiled'\nCONFIG = _gradeflow_config\n\n\ndef where():\n    return where.__code__.co_filename\n"
PROBE = "import json, sys; import _gf_probe as m; print(json.dumps([m.FROM, m.CONFIG, m.where(), m.__file__]))"


def _load(folder: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("magic", ["same", "other"])
def test_the_loader_runs_the_compiled_code_only_for_its_own_interpreter(tmp_path: Path, magic: str) -> None:
    files = plugin_files("_gf_probe", {"nonce": "abc"}, TEMPLATE)
    assert sorted(files) == ["_gf_probe.code", "_gf_probe.py", "_gf_probe.source"]
    # The source beside it says otherwise, so the run tells which of the two was used.
    files["_gf_probe.source"] = files["_gf_probe.source"].replace(b"'compiled'", b"'source'")
    if magic == "other":
        files["_gf_probe.code"] = b"\x00\x00\r\n" + files["_gf_probe.code"][4:]
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    origin, config, where, file = _load(tmp_path)
    assert origin == ("compiled" if magic == "same" else "source")
    assert json.loads(config) == {"nonce": "abc"}
    assert where == file == str(tmp_path / "_gf_probe.py")  # the plugin's frames are told as the loader's file


def test_the_loader_without_compiled_code_compiles_the_source(tmp_path: Path) -> None:
    for name, data in plugin_files("_gf_probe", {"nonce": "x"}, TEMPLATE).items():
        if not name.endswith(".code"):
            (tmp_path / name).write_bytes(data)
    assert _load(tmp_path)[0] == "compiled"  # the template's own text: no compiled code to take


READS = """
import {how}


def run():
    import sys

    module = sys.modules["test_lib"]
    {read}
    return 1
"""


@pytest.mark.parametrize(
    ("how", "read", "noted"),
    [
        ("inspect", "inspect.iscoroutinefunction(module.test_library)", False),
        ("inspect", "inspect.signature(module.test_library)", False),
        ("inspect", "inspect.getsourcelines(module.test_library)", True),
        ("dis", "dis.get_instructions(module.test_library)", True),
        ("inspect", "module.test_library.__code__.co_consts", True),
        # read for the repository by a worker thread whose stack holds no repository frame
        (
            "concurrent.futures",
            "concurrent.futures.ThreadPoolExecutor().submit(getattr, module.test_library, '__code__').result()",
            True,
        ),
    ],
)
def test_a_test_functions_code_read_through_the_library_is_noted_unless_only_a_flag_or_names_come_back(
    tmp_path: Path, how: str, read: str, noted: bool
) -> None:
    record, output = harnessed_run(tmp_path, READS.format(how=how, read=read))
    assert "1 passed" in output, output
    reads = [entry for entry in record["audit"] if entry[0] == "object.__getattr__:__code__(of-a-test-function)"]
    assert bool(reads) == noted, record["audit"]


WRITES_CODE = """
def run():
    import sys

    module = sys.modules["test_lib"]
    {write}
    return 1
"""

LATER_TEST = """

def test_later(expected=1):
    assert expected
"""


@pytest.mark.parametrize(
    ("write", "noted"),
    [
        ("module.test_later.__defaults__ = (2,)", "object.__setattr__:__defaults__(of-a-test-function)"),
        (
            "module.test_later.__code__ = (lambda expected=1: None).__code__",
            "object.__setattr__:__code__(of-a-test-function)",
        ),
        ("module.test_later.__kwdefaults__ = {'more': 2}", "object.__setattr__:__kwdefaults__(of-a-test-function)"),
        ("(lambda: None).__defaults__ = ()", None),  # a function of the repository's own
        # another file's code given to a library's function, a library module's class, a library class's bases
        (
            "import textwrap; textwrap.dedent.__code__ = (lambda text: text).__code__",
            "object.__setattr__:__code__(of-a-library-function)",
        ),
        (
            "import textwrap, types; textwrap.__class__ = type('M', (types.ModuleType,), {})",
            "object.__setattr__:__class__(of-a-module)",
        ),
        (
            "import argparse as a; a.RawTextHelpFormatter.__bases__ = (type('B', (a.HelpFormatter,), {}),)",
            "object.__setattr__:__bases__(of-a-class)",
        ),
        # the repository's own class, and a library's function given code of its own file (types.coroutine's way)
        ("P = type('P', (), {}); A = type('A', (P,), {}); A.__bases__ = (type('B', (P,), {}),)", None),
        (
            "import textwrap; textwrap.indent.__code__ = textwrap.indent.__code__.replace(co_name='x')",
            "code.__new__",
        ),
    ],
)
def test_a_test_functions_code_or_defaults_assigned_by_the_repository_are_noted(
    tmp_path: Path, write: str, noted: str | None
) -> None:
    # test_later passes with whatever it is handed: only the note tells.
    record, output = harnessed_run(tmp_path, WRITES_CODE.format(write=write), WORKSPACE_TESTS + LATER_TEST)
    assert "2 passed" in output, output
    writes = [entry[0] for entry in record["audit"] if entry[0].startswith(("object.__setattr__", "code.__new__"))]
    assert writes == ([noted] if noted else []), record["audit"]


WRITES = """
import os


def run():
    for name in ("notes.txt", "module.py"):
        with open(os.path.join(os.path.dirname(__file__), name), "w") as handle:
            handle.write("x = 1\\n")
    return 1
"""


def test_an_ordinary_file_written_is_left_alone_and_a_source_file_is_noted(tmp_path: Path) -> None:
    record, output = harnessed_run(tmp_path, WRITES)
    assert "1 passed" in output, output
    written = [entry[2] for entry in record["audit"] if entry[0] == "open"]
    assert written == [str(tmp_path / "repo" / "src" / "module.py")], record["audit"]
