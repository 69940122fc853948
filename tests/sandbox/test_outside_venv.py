"""The isolated sandbox (the default) and the local one join the harness to a task's own virtual environment (a
venv of this host outside gradeflow's, made by ``python -m venv``), whether its command sets ``PYTHONPATH`` or not:
the reference passes, a half fix scores 1/2. Where the local sandbox cannot (no namespace to lay the harness's site
file in), the base run's failure says why and what to do, on one line."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradeflow import grade
from gradeflow.models import TaskSpec
from gradeflow.sandbox._bwrap import bwrap_problem
from gradeflow.sandbox._local_procs import pid_namespace_available
from gradeflow.sandbox.local import LocalSandboxFactory

pytestmark = pytest.mark.slow

FILES = {
    "src/calc.py": "def divide(a, b):\n    if b == 0:\n        return None\n    return a / b\n\n\n"
    "def mod(a, b):\n    if b == 0:\n        return None\n    return a % b\n\n\ndef add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "import pytest\n\nfrom calc import add, divide, mod\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    "def test_mod_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        mod(1, 0)\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n",
}
CALC = FILES["src/calc.py"]
RAISE = 'raise ZeroDivisionError("no")'


def _diff(after: str) -> str:
    lines = difflib.unified_diff(CALC.splitlines(True), after.splitlines(True), "a/src/calc.py", "b/src/calc.py")
    return "".join(lines)


HALF = _diff(CALC.replace("return None", RAISE, 1))
FIX = _diff(CALC.replace("return None", RAISE))
F2P = ["tests/test_calc.py::test_divide_by_zero", "tests/test_calc.py::test_mod_by_zero"]
OPTIONS = "-q -p no:cacheprovider --junitxml={junit}"


@pytest.fixture(scope="module")
def project_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv made by ``python -m venv`` outside gradeflow's view, holding the project's test dependencies (here
    gradeflow's pytest, by a path file: no network)."""
    folder = tmp_path_factory.mktemp("venvs") / "proj"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "deps.pth").write_text(os.path.dirname(os.path.dirname(pytest.__file__)) + "\n")
    return folder


def _task(tmp_path: Path, command: str) -> TaskSpec:
    repo = tmp_path / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    if "PYTHONPATH" not in command:
        (repo / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    return TaskSpec.model_validate(
        {
            "task_id": f"local-venv-{tmp_path.name[-24:]}",
            "type": "bugfix",
            "repo": str(repo),
            "tests": {"command": command, "fail_to_pass": F2P, "pass_to_pass": ["tests/test_calc.py::test_add"]},
        }
    )


SANDBOXES = [
    pytest.param(
        "isolated", marks=pytest.mark.skipif(bwrap_problem() is not None, reason=f"isolated: {bwrap_problem()}")
    ),
    pytest.param(
        "local", marks=pytest.mark.skipif(not pid_namespace_available(), reason="local joins an outside venv as root")
    ),
]


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("pythonpath", ["PYTHONPATH=src ", ""], ids=["command-sets-pythonpath", "pytest-ini"])
def test_a_task_running_its_own_venv_grades_right_with_the_harness_joined(
    tmp_path: Path, project_venv: Path, pythonpath: str, sandbox: str, prefect: None
) -> None:
    task = _task(tmp_path, f"{pythonpath}{project_venv}/bin/python -m pytest {OPTIONS}")
    fixed = grade(task, patch=FIX, sandbox=sandbox)
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.summary()
    tests = fixed.component("tests")
    assert tests.details["canaries"] == "checked"  # the harness ran inside the venv's interpreter
    assert not any("could not join" in m for m in fixed.messages)
    half = grade(task, patch=HALF, sandbox=sandbox)
    assert (half.status, half.passed) == ("graded", False)
    assert "fail-to-pass-failing" in half.reason_codes and "junit-tampered" not in half.reason_codes
    assert half.component("tests").score == pytest.approx(0.5)  # one of the two fail-to-pass tests
    assert half.component("tests").details["canaries"] == "checked"
    # The venv's site folder is laid over inside each command's own namespace only: nothing is left on the host.
    site = next(project_venv.glob("lib/python3*/site-packages"))
    assert sorted(p.name for p in site.iterdir()) == ["deps.pth"]
    assert str(site) not in Path("/proc/self/mountinfo").read_text()


def test_where_the_local_sandbox_cannot_join_the_base_run_says_why(
    tmp_path: Path, project_venv: Path, prefect: None
) -> None:
    task = _task(tmp_path, f"PYTHONPATH=src {project_venv}/bin/python -m pytest {OPTIONS}")
    without_namespace = LocalSandboxFactory(pid_namespace=False).show(task)
    result = grade(task, patch=FIX, sandbox=without_namespace)
    assert (result.status, result.reason_codes) == ("inconclusive", ["baseline-broken"])
    [said] = [m for m in result.messages if "could not import gradeflow's harness" in m]
    assert "set PYTHONPATH in the task's env" in said and len(said.splitlines()) == 1
