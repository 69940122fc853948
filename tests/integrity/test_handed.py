"""Test sources handed to the harness: the hidden tests leave the run's disk, the plugin serves every handed
module from memory, and test code the run did not start with is named.

The grader's side is tested on plain folders; the plugin's with real pytest in the local sandbox, through
the same calls a grade makes (``start_harness``, ``run_test_command``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.integrity.handed import PLACEHOLDER, prior_state, suite_sources, withdraw
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import base_test_run, inject_hidden

CALC = "def divide(a, b):\n    return None if b == 0 else a / b\n"
FIRST = "import calc\n\n\ndef test_first():\n    assert calc.divide(4, 2) == 2\n"
LATER = "import calc\n\n\ndef test_later():\n    assert calc.divide(1, 0) == 'never'\n"
HIDDEN = "import calc\n\n\ndef test_hidden():\n    assert calc.divide(9, 0) == 'hidden'\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _task(tmp_path: Path, hidden: dict[str, str] | None = None, command: str = "") -> TaskSpec:
    folder = tmp_path / "hidden"
    _write(folder, hidden or {})
    tests = {
        "command": command or "PYTHONDONTWRITEBYTECODE= python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        "fail_to_pass": ["tests/test_a_first.py::test_first"],
        "pass_to_pass": [],
        "hidden": str(folder) if hidden else None,
    }
    return TaskSpec.model_validate(make_task(env={"PYTHONPATH": "src"}, tests=tests))


def _repo(tmp_path: Path, calc: str = CALC) -> Path:
    tree = tmp_path / "repo"
    files = {"src/calc.py": calc, "tests/test_a_first.py": FIRST, "tests/test_b_later.py": LATER}
    _write(tree, {**files, "tests/unit/helper.py": "X = 1\n", "tests/conftest.py": "import pytest\n"})
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    return tree


def test_withdraw_leaves_no_hidden_python_file_on_disk(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    _write(tree, {"tests/test_x.py": "base\n", "tests/data.json": "{}"})
    prior = prior_state(tree, ["tests/test_x.py", "tests/test_new.py", "tests/data.json", "tests/gone.py"])
    _write(tree, {"tests/test_x.py": "hidden change\n", "tests/test_new.py": "hidden\n", "tests/data.json": "[1]"})
    texts = withdraw(tree, prior)
    assert texts == {"tests/test_x.py": "hidden change\n", "tests/test_new.py": "hidden\n"}
    assert (tree / "tests/test_x.py").read_text() == "base\n"
    assert (tree / "tests/test_new.py").read_text() == PLACEHOLDER == ""
    assert (tree / "tests/data.json").read_text() == "[1]"  # data stays on disk
    assert not (tree / "tests/gone.py").exists()


def test_the_handed_sources_are_the_test_modules_conftests_and_sealed_folders(tmp_path: Path) -> None:
    tree = _repo(tmp_path)
    _write(tree, {"src/pkg/check_test.py": "", "src/pkg/conftest.py": "", "docs/conf.py": ""})
    found = suite_sources(_task(tmp_path), tree)
    assert sorted(found) == [
        "src/pkg/check_test.py",
        "src/pkg/conftest.py",
        "tests/conftest.py",
        "tests/test_a_first.py",
        "tests/test_b_later.py",
        "tests/unit/helper.py",
    ]
    assert found["tests/test_b_later.py"] == LATER


def _run(tmp_path: Path, tree: Path, task: TaskSpec, base: TestRunEvidence | None = None) -> TestRunEvidence:
    hidden = inject_hidden(task, tree, tmp_path / "backup")
    harness = start_harness(task, tree, None, base, hidden=hidden)
    assert harness is not None
    on_disk = [p.read_text() for p in tree.rglob("*.py")]
    assert not any("'hidden'" in text for text in on_disk), "a hidden test is on the run's disk"
    with LocalSandboxFactory().open(tree) as sandbox:
        return run_test_command(task, sandbox, harness=harness, base=base)


def _outcomes(evidence: TestRunEvidence) -> dict[str, str]:
    return {case.name: case.outcome for case in evidence.cases}


def test_hidden_tests_run_from_memory_in_both_import_modes(tmp_path: Path) -> None:
    for mode in ("prepend", "importlib"):
        command = f"python -m pytest -q -p no:cacheprovider --import-mode={mode} --junitxml={{junit}}"
        task = _task(tmp_path / mode, {"tests/unit/test_hidden.py": HIDDEN}, command)
        evidence = _run(tmp_path / mode, _repo(tmp_path / mode), task)
        assert evidence.harness is not None and evidence.harness.canaries, evidence.output_tail
        assert _outcomes(evidence) == {"test_first": "passed", "test_later": "failed", "test_hidden": "failed"}
        assert "assert None == 'hidden'" in evidence.output_tail  # pytest's assertion rewriting applied
        assert not evidence.harness.conftests and not evidence.harness.patched
        assert not list((tmp_path / mode).rglob("*.pyc"))


def test_a_base_run_the_harness_cannot_join_gets_its_hidden_tests_on_disk(tmp_path: Path) -> None:
    # The grader's own interpreter, from outside the sandbox's environment: nothing would serve them.
    command = (
        f"env -u PYTEST_ADDOPTS PYTHONPATH=src {sys.executable} -m pytest -q -p no:cacheprovider --junitxml={{junit}}"
    )
    task = _task(tmp_path, {"tests/unit/test_hidden.py": HIDDEN}, command)
    evidence = base_test_run(task, _repo(tmp_path), LocalSandboxFactory(), None)
    assert evidence.harness is None and evidence.harness_not_joined
    assert _outcomes(evidence) == {"test_first": "passed", "test_later": "failed", "test_hidden": "failed"}


FORGE = """
import importlib.metadata, importlib.util, marshal, os, struct, sys

def _forge(name):
    path = os.path.join(os.path.dirname(__file__), "..", "tests", name + ".py")
    source = open(path, "rb").read()
    code = compile(source.replace(b"== 'never'", b"is None"), os.path.abspath(path), "exec")
    version = importlib.metadata.version("pytest")
    if int(version.split(".")[0]) >= 9:
        header = importlib.util.MAGIC_NUMBER + b"\\x03\\x00\\x00\\x00" + importlib.util.source_hash(source)[:8]
    else:
        status = os.stat(path)
        header = importlib.util.MAGIC_NUMBER + bytes(4) + struct.pack("<LL", int(status.st_mtime), status.st_size)
    cache = os.path.join(os.path.dirname(path), "__pycache__")
    os.makedirs(cache, exist_ok=True)
    tail = "." + sys.implementation.cache_tag + "-pytest-" + version + ".pyc"
    open(os.path.join(cache, "aside"), "wb").write(header + marshal.dumps(code))  # moved in place: no .pyc opened
    os.replace(os.path.join(cache, "aside"), os.path.join(cache, name + tail))

_forge("test_b_later")
"""

CONFTEST = """
import os

_folder = os.path.join(os.path.dirname(__file__), "..", "tests", "unit")
open(os.path.join(_folder, "rules.txt"), "w").write("import pytest\\n")
os.replace(os.path.join(_folder, "rules.txt"), os.path.join(_folder, "conftest.py"))
"""

UNSEAT = """
import sys

sys.meta_path.append(sys.meta_path.pop(0))
"""

PLANT = """
import sys, types

_fake = types.ModuleType("test_b_later")
_fake.__file__ = __file__.replace("src/calc.py", "tests/test_b_later.py")
_fake.test_later = lambda: None
sys.modules["test_b_later"] = _fake
"""


@pytest.mark.parametrize(
    ("attack", "problem"),
    [
        (FORGE, None),
        (CONFTEST, "test code the run did not start with was loaded: ./tests/unit/conftest.py"),
        (UNSEAT, "pytest internals were replaced during the run: sys.meta_path[0]"),
        (PLANT, "test code the run did not start with was loaded: ./tests/test_b_later.py (not served)"),
    ],
    ids=["forged-pyc", "conftest-at-import", "finder-moved", "module-planted"],
)
def test_code_under_test_cannot_replace_or_add_test_code(tmp_path: Path, attack: str, problem: str | None) -> None:
    task = _task(tmp_path)
    base = _run(tmp_path, _repo(tmp_path), task)
    assert base.harness is not None and not base.harness.conftests and not base.harness.patched
    candidate_root = tmp_path / "candidate"
    candidate = _run(candidate_root, _repo(candidate_root, CALC + attack), task, base)
    if problem is None:  # the forged cache is never read: the test module runs as it was handed over
        assert _outcomes(candidate)["test_later"] == "failed", candidate.output_tail
        assert not candidate.junit_tampered, candidate.junit_error
    else:
        assert candidate.junit_tampered and problem in (candidate.junit_error or ""), candidate.junit_error


def test_the_forged_cache_is_what_plain_pytest_would_load(tmp_path: Path) -> None:
    # The attack is real: without the harness pytest runs the forged module instead of the test file.
    tree = _repo(tmp_path, CALC + FORGE)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_a_first.py",
        "tests/test_b_later.py",
    ]
    run = subprocess.run(command, cwd=tree, env={"PYTHONPATH": "src", "PATH": "/usr/bin:/bin"}, capture_output=True)
    assert b"2 passed" in run.stdout, run.stdout
