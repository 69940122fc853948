"""Real task environments under the isolated default: an outside venv, another Python, setup's network, and
an environment built once and mounted read-only into every run."""

from __future__ import annotations

import collections
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import THROUGH_A_LINK, through_a_link_seen
from gradeflow import grade
from gradeflow.sandbox._bwrap import bwrap_problem
from gradeflow.spec import load_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"isolated sandbox unavailable: {bwrap_problem()}"),
]

FILES = {
    "src/calc.py": "def divide(a, b):\n    if b == 0:\n        return None\n    return a / b\n\n\ndef add(a, b):\n"
    "    return a + b\n",
    "tests/test_calc.py": "import collections\n\nimport pytest\n\nfrom calc import add, divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\ndef test_divide():\n    assert divide(6, 3) == 2\n",
}
FIX = (
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,6 +1,6 @@\n def divide(a, b):\n     if b == 0:\n"
    '-        return None\n+        raise ZeroDivisionError("no")\n     return a / b\n \n \n'
)


def _task(tmp_path: Path, command: str, **spec: Any) -> Path:
    repo = tmp_path / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    data = {
        "task_id": f"env-{tmp_path.name[-20:].strip('_') or 'x'}",
        "type": "bugfix",
        "repo": "./repo",
        "tests": {
            "command": command,
            "fail_to_pass": ["tests/test_calc.py::test_divide_by_zero"],
            "pass_to_pass": ["tests/test_calc.py::test_add", "tests/test_calc.py::test_divide"],
        },
        **spec,
    }
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(data))
    return tmp_path / "task.yaml"


@pytest.fixture
def project_venv(tmp_path: Path) -> Path:
    """A venv outside gradeflow's view holding the project's test dependencies (here: gradeflow's pytest)."""
    folder = tmp_path / "venvs" / "proj"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    site = next(folder.glob("lib/python3*/site-packages"))
    host = subprocess.run(
        [sys.executable, "-c", "import pytest, os; print(os.path.dirname(os.path.dirname(pytest.__file__)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (site / "deps.pth").write_text(host + "\n")
    return folder


@pytest.mark.parametrize("pythonpath", ["PYTHONPATH=src ", ""])
def test_a_task_running_an_outside_venv_grades_right_with_the_harness_joined(
    tmp_path: Path, project_venv: Path, pythonpath: str, prefect: None
) -> None:
    ini = "" if pythonpath else "[pytest]\npythonpath = src\n"
    (tmp_path / "repo").mkdir()
    if ini:
        (tmp_path / "repo" / "pytest.ini").write_text(ini)
    command = f"{pythonpath}{project_venv}/bin/python -m pytest -q -p no:cacheprovider --junitxml={{junit}}"
    task = load_task(_task(tmp_path, command))
    fixed = grade(task, patch=FIX)
    assert fixed.status == "graded" and fixed.passed, fixed.summary
    tests = next(c for c in fixed.components if c.name == "tests")
    assert tests.details.get("harness") != "not-joined"
    empty = grade(task, patch="")
    assert empty.status == "graded" and not empty.passed


def test_a_task_naming_a_program_the_sandbox_cannot_see_fails_at_load_with_exit_2(tmp_path: Path) -> None:
    task = _task(tmp_path, "/opt/nowhere/venv/bin/python -m pytest --junitxml={junit}")
    done = subprocess.run(
        [sys.executable, "-m", "gradeflow.cli", "grade", str(task), "--patch", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/opt/nowhere/venv/bin/python" in lines[0] and "does not exist" in lines[0]


def test_a_bullseye_root_runs_python_3_9_in_the_isolated_sandbox_without_docker(tmp_path: Path) -> None:
    from gradeflow.models import EnvironmentSpec
    from gradeflow.sandbox.isolated import IsolatedSandboxFactory

    factory = IsolatedSandboxFactory(EnvironmentSpec(root="debian:bullseye", packages=["python3-pytest"]))
    assert factory.describe().python_version == "3.9"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_old.py").write_text(
        "import collections\n\n\ndef test_mapping_alias():\n    assert issubclass(dict, collections.Mapping)\n"
    )
    with factory.open(tmp_path) as sandbox:
        done = sandbox.run("python -m pytest -q -p no:cacheprovider tests", env={}, timeout=300)
        seen = sandbox.run(
            "python -c 'import sys; print(sys.version_info[:2])'; ls /root /var/cache", env={}, timeout=60
        )
    assert done.exit_code == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    # On gradeflow's own interpreter the same test fails: collections.Mapping went in 3.10.
    assert sys.version_info >= (3, 10) and "(3, 9)" in seen.stdout
    assert "No such file" in seen.stderr  # the host's folders are not there: only the root's system


def test_an_interpreter_started_through_a_link_to_the_environments_runs_as_it(tmp_path: Path) -> None:
    # tox-current-env links .tox/<name>/bin/python to sys.executable and runs the tests through that link; Python
    # looks for pyvenv.cfg beside the link only, so without the root's hook the tests ran without the environment.
    from gradeflow.models import EnvironmentSpec
    from gradeflow.sandbox.isolated import IsolatedSandboxFactory

    factory = IsolatedSandboxFactory(EnvironmentSpec(root="debian:bullseye", packages=["python3-pytest"]))
    with factory.open(tmp_path) as sandbox:
        done = sandbox.run(THROUGH_A_LINK, env={}, timeout=120)
    assert done.exit_code == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines == through_a_link_seen(lines[0]) and lines[0] != "/usr"  # the root's own stays its own


def test_setup_gets_the_network_the_tests_do_not_and_setup_runs_once(tmp_path: Path, prefect: None) -> None:
    probe = "import socket; socket.create_connection(('pypi.org', 443), timeout=10).close()"
    (tmp_path / "repo" / "tests").mkdir(parents=True)
    (tmp_path / "repo" / "tests" / "test_net.py").write_text(
        "import socket\n\nimport pytest\n\n\ndef test_offline():\n    with pytest.raises(OSError):\n"
        "        socket.create_connection(('pypi.org', 443), timeout=5).close()\n"
    )
    path = _task(
        tmp_path,
        "PYTHONPATH=src python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        setup=f'python -c "{probe}" && echo built >> "$HOME/builds" && pip install -q --no-deps six',
        environment={"setup_network": True},
    )
    spec = yaml.safe_load(path.read_text())
    spec["tests"]["pass_to_pass"].append("tests/test_net.py::test_offline")
    path.write_text(yaml.safe_dump(spec))
    task = load_task(path)
    first = grade(task, patch=FIX)
    assert first.status == "graded" and first.passed, first.summary
    second = grade(task, patch=FIX)
    assert second.status == "graded" and second.passed, second.summary
    from gradeflow.config import cache_dir

    builds = list(cache_dir().glob(f"baselines/{task.task_id}-*/environment/layers/home/builds"))
    assert len(builds) == 1 and builds[0].read_text() == "built\n"  # one build, shared by both grades


def test_a_failed_setup_says_why_and_is_not_run_again(tmp_path: Path, prefect: None) -> None:
    path = _task(
        tmp_path,
        "PYTHONPATH=src python -m pytest -q --junitxml={junit}",
        setup='echo "ERROR: No matching distribution found for nothere==9" >&2; exit 1',
    )
    task = load_task(path)
    first = grade(task, patch=FIX)
    assert first.status == "inconclusive" and "setup-failed" in first.reason_codes
    assert "No matching distribution found for nothere==9" in first.model_dump_json()
    second = grade(task, patch=FIX)
    assert second.status == "inconclusive" and "not retried" in second.model_dump_json()


def test_a_task_on_a_bullseye_root_grades_right_through_the_varied_run(tmp_path: Path) -> None:
    # Python 3.9 and pytest 6 from Debian: the harness, its canaries and the varied run (forked calls with
    # Python's own hooks back, threading's taken from _thread before 3.10) all run there.
    command = "PYTHONPATH=src python -m pytest -q -p no:cacheprovider --junitxml={junit}"
    environment = {"root": "debian:bullseye", "packages": ["python3-pytest"]}
    path = _task(tmp_path, command, environment=environment)
    # A test of what Python 3.10 removed: it passes on the root's 3.9, and could not on gradeflow's interpreter.
    with (tmp_path / "repo" / "tests" / "test_calc.py").open("a") as tests:
        tests.write("\n\ndef test_mapping_alias():\n    assert issubclass(dict, collections.Mapping)\n")
    spec = yaml.safe_load(path.read_text())
    spec["tests"]["pass_to_pass"].append("tests/test_calc.py::test_mapping_alias")
    path.write_text(yaml.safe_dump(spec))
    assert sys.version_info >= (3, 10) and not hasattr(collections, "Mapping")
    task = load_task(path)
    fixed = grade(task, patch=FIX)
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.summary()
    assert fixed.environment is not None and fixed.environment.python_version == "3.9"
    varied = fixed.component("tests").details["varied_run"]
    assert varied["outcomes"] == {"tests/test_calc.py::test_divide_by_zero": "passed"}
    assert not grade(task, patch="").passed


def test_a_built_environment_edited_between_grades_is_found_and_rebuilt(tmp_path: Path, prefect: None) -> None:
    path = _task(
        tmp_path,
        "PYTHONPATH=src python -m pytest -q -p no:cacheprovider --junitxml={junit}",
        setup='echo built >> "$HOME/builds"',
    )
    task = load_task(path)
    first = grade(task, patch=FIX)
    assert first.passed and first.environment is not None and first.environment.rebuilt == []
    from gradeflow.config import cache_dir

    [builds] = cache_dir().glob(f"baselines/{task.task_id}-*/environment/layers/home/builds")
    builds.write_text("edited by hand\n")  # what every run mounts read-only, changed outside gradeflow
    second = grade(task, patch=FIX)
    assert second.passed and second.environment is not None and second.environment.rebuilt == ["environment"]
    [rebuilt] = cache_dir().glob(f"baselines/{task.task_id}-*/environment/layers/home/builds")
    assert rebuilt.read_text() == "built\n"  # setup ran again, on the pristine base, into a new environment
    third = grade(task, patch=FIX)
    assert third.environment is not None and third.environment.rebuilt == []
