"""The harness joins pytest whatever the task's command does to its environment, on a src-layout repository.

Commands that set their own ``PYTHONPATH`` or ``PYTEST_ADDOPTS`` inline, unset them with ``env -u`` or
``env -i``, change folder first, or start pytest from a script or a ``make`` target: graded end to end
with real pytest in the isolated (default) and the local sandbox, the reference passes, the miss fails on
its test, nothing is inconclusive and the canaries are checked; so do a script that deletes the harness's
variables from ``os.environ`` before ``pytest.main`` and one that hands ``pytest.main`` arguments and plugins
of its own. The docker sandbox is checked on the shapes that empty, replace or bypass the variables (its image
joins through a site file of its own), and there a virtual environment made in the run with the image's site
packages (what tox's ``sitepackages`` and nox's ``--system-site-packages`` make) joins too. A pytest started
from an interpreter outside the sandbox's environment (``python -S``, or such a virtual environment over the
grader's own Python in the isolated and local sandboxes), with the variables removed, runs without the
harness: the grade says so. Real tox and nox (the test extras) join in the isolated and local sandboxes the
way a sandbox without network lets them run: tox with ``skip_install`` running the environment's ``pytest``
(``allowlist_externals``), given ``-i`` (off a terminal tox closes its commands' standard input, the grader's
channel: without it the grade says so), and nox with ``venv_backend="none"``. A virtual environment of their
own could not get pytest without network, nor through ``sitepackages`` (the site packages of the Python
under the sandbox's environment, which has no pytest).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import diff
from gradeflow import grade
from gradeflow.models import GradeResult, TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

BUG = "def divide(a, b):\n    return a / b if b else None\n\n\ndef add(a, b):\n    return a + b\n"
FIX = BUG.replace("return a / b if b else None", "if b == 0:\n        raise ZeroDivisionError('no')\n    return a / b")
TESTS = (
    "import pytest\n\nfrom calc import add, divide\n\n\n"
    "def test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n"
)
OPTIONS = "-q -p no:cacheprovider"
SCRIPT = f'export PYTHONPATH=src\nunset PYTEST_ADDOPTS\nexec python -m pytest {OPTIONS} --junitxml="$1"\n'
RUNNER = (
    "import sys\n\nimport pytest\n\n"
    "sys.path.insert(0, 'src')\n"
    f"sys.exit(pytest.main([*{OPTIONS.split()!r}, '--junitxml', sys.argv[1]]))\n"
)
# A script that takes the harness's variables out of its own environment after importing pytest, then calls it.
DELETER = (
    "import os\nimport sys\n\nimport pytest\n\n"
    "for name in ('PYTEST_ADDOPTS', 'PYTHONPATH', 'PYTEST_DISABLE_PLUGIN_AUTOLOAD'):\n    os.environ.pop(name, None)\n"
    "sys.path.insert(0, 'src')\n"
    f"sys.exit(pytest.main([*{OPTIONS.split()!r}, '--junitxml', sys.argv[1]]))\n"
)
# A script that sets PYTEST_ADDOPTS of its own and hands pytest.main its own arguments and plugins.
OWN_ARGS = (
    "import os\nimport sys\n\nos.environ['PYTEST_ADDOPTS'] = '-q'\nimport pytest\n\n\n"
    "class Timer:\n    def pytest_sessionfinish(self, session):\n        pass\n\n\n"
    "sys.path.insert(0, 'src')\n"
    "sys.exit(pytest.main(['-p', 'no:cacheprovider', '--junitxml', sys.argv[1], 'tests'], plugins=[Timer()]))\n"
)
FILES = {
    "src/calc.py": BUG,
    "tests/test_calc.py": TESTS,
    "pytest.ini": "[pytest]\n",
    "scripts/test.sh": SCRIPT,
    "run_tests.py": RUNNER,
    "delete_addopts.py": DELETER,
    "own_args.py": OWN_ARGS,
    "Makefile": f"test:\n\tenv -u PYTEST_ADDOPTS PYTHONPATH=src python -m pytest {OPTIONS} --junitxml=$(JUNIT)\n",
    "tox.ini": (
        "[tox]\nenv_list = py\n\n[testenv]\nskip_install = true\nallowlist_externals = pytest\n"
        f"set_env = PYTHONPATH = src\ncommands = pytest {OPTIONS} {{posargs}}\n"
    ),
    "noxfile.py": (
        "import nox\n\n\n@nox.session(venv_backend='none')\ndef tests(session):\n"
        f"    session.run('python', '-m', 'pytest', *{OPTIONS.split()!r}, *session.posargs,\n"
        "                env={'PYTHONPATH': 'src'})\n"
    ),
}

COMMANDS = {
    "inline-pythonpath": f"PYTHONPATH=src python -m pytest {OPTIONS} --junitxml={{junit}}",
    "inline-addopts": f"PYTEST_ADDOPTS='{OPTIONS}' PYTHONPATH=src python -m pytest --junitxml={{junit}}",
    "env-unset": f"env -u PYTEST_ADDOPTS -u PYTHONPATH PYTHONPATH=src python -m pytest {OPTIONS} --junitxml={{junit}}",
    "env-clear": f'env -i PATH="$PATH" PYTHONPATH=src python -m pytest {OPTIONS} --junitxml={{junit}}',
    "cd-first": f"cd tests && PYTHONPATH=../src python -m pytest {OPTIONS} --junitxml={{junit}}",
    "pytest": f"PYTHONPATH=src pytest {OPTIONS} --junitxml={{junit}}",
    "py.test": f"PYTHONPATH=src py.test {OPTIONS} --junitxml={{junit}}",
    "shell-script": "sh scripts/test.sh {junit}",
    "python-script": "PYTHONPATH= python run_tests.py {junit}",
    "make-target": "make -s test JUNIT={junit}",
    "script-deletes-addopts": "python delete_addopts.py {junit}",
    "main-own-args": "env -u PYTHONPATH python own_args.py {junit}",
    "tox": "tox -e py -i -- --junitxml={junit}",
    "nox": "nox -s tests -- --junitxml={junit}",
}
# What tox (sitepackages = true) and nox (--system-site-packages) do: a virtual environment made in the run.
VENV = (
    'python -m venv --without-pip --system-site-packages "$TMPDIR/v" && '
    f'env -u PYTEST_ADDOPTS PYTHONPATH=src "$TMPDIR/v/bin/python" -m pytest {OPTIONS} --junitxml={{junit}}'
)
DOCKER_COMMANDS = ["env-clear", "inline-addopts", "python-script", "script-deletes-addopts", "main-own-args", "venv"]
"""The image joins through its own site file: the shapes that empty or replace the variables, or bypass them."""
SANDBOXES = ["isolated", "local"]
F2P = "tests/test_calc.py::test_divide_by_zero"
P2P = "tests/test_calc.py::test_add"


@pytest.fixture
def grade_with(tmp_path: Path, sandbox: str) -> Callable[..., GradeResult]:
    """``run(command, source, hidden=False)``: the grade of ``source``; ``hidden``: the tests are hidden tests."""

    def run(command: str, source: str, hidden: bool = False) -> GradeResult:
        repo, tests = tmp_path / "repo", {}
        for name, text in FILES.items():
            folder = tmp_path / "hidden" if hidden and name.startswith("tests/") else repo
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        if hidden:
            tests["hidden"] = str(tmp_path / "hidden")
        task = TaskSpec.model_validate(
            {
                "task_id": "harness-join",
                "type": "bugfix",
                "repo": str(repo),
                "tests": {"command": command, "fail_to_pass": [F2P], "pass_to_pass": [P2P], "timeout": 120, **tests},
                "grading": {"weights": {"tests": 1.0}},
            }
        )
        return grade(task, patch=diff(BUG, source) if source != BUG else "", sandbox=sandbox)

    return run


@pytest.mark.parametrize(
    ("sandbox", "name"),
    [
        *((sandbox, name) for sandbox in SANDBOXES for name in sorted(COMMANDS)),
        *(pytest.param("docker", name, marks=pytest.mark.docker) for name in DOCKER_COMMANDS),
    ],
)
def test_the_harness_joins_whatever_the_command_does_to_its_environment(
    name: str, grade_with: Callable[..., GradeResult]
) -> None:
    command = VENV if name == "venv" else COMMANDS[name]
    fixed = grade_with(command, FIX)
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.messages
    assert fixed.component("tests").details["canaries"] == "checked"
    assert not any("could not join" in m for m in fixed.messages)
    missed = grade_with(command, BUG)
    assert (missed.status, missed.passed) == ("graded", False), missed.messages
    assert "fail-to-pass-failing" in missed.reason_codes and "junit-tampered" not in missed.reason_codes
    assert missed.component("tests").details["canaries"] == "checked"


OUTSIDE = {
    # The grader's own interpreter, from outside the sandbox's environment, with the harness's variables gone.
    "isolated": f"env -u PYTEST_ADDOPTS PYTHONPATH=src {sys.executable} -m pytest {OPTIONS} --junitxml={{junit}}",
    "local": f"env -u PYTEST_ADDOPTS PYTHONPATH=src {sys.executable} -m pytest {OPTIONS} --junitxml={{junit}}",
    # The image's interpreter without its site folders (-S), pytest found through PYTHONPATH.
    "docker": "env -u PYTEST_ADDOPTS PYTHONPATH=src:/usr/lib/python3/dist-packages "
    f"python -S -m pytest {OPTIONS} --junitxml={{junit}}",
}


@pytest.mark.parametrize(
    ("sandbox", "command"),
    [
        *((sandbox, OUTSIDE[sandbox]) for sandbox in SANDBOXES),
        pytest.param("docker", OUTSIDE["docker"], marks=pytest.mark.docker),
        # A virtual environment made in the run over the grader's Python, not the sandbox's environment.
        *((sandbox, VENV) for sandbox in SANDBOXES),
    ],
)
def test_a_pytest_the_harness_cannot_join_is_named_in_the_grade(
    command: str, grade_with: Callable[..., GradeResult]
) -> None:
    fixed = grade_with(command, FIX)
    assert (fixed.status, fixed.passed) == ("graded", True), fixed.messages
    tests = fixed.component("tests")
    assert tests.details["canaries"] == "unsupported"
    joined = [m for m in tests.messages if "pytest ran but gradeflow's harness could not join it" in m]
    assert len(joined) == 1, tests.messages


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("hidden", [False, True], ids=["repository-tests", "hidden-tests"])
def test_tox_without_standard_input_is_named_in_the_grade(hidden: bool, grade_with: Callable[..., GradeResult]) -> None:
    """The channel never reaches pytest: the grade says so, and hidden tests (which only the channel would have
    served) go back on the disk, so the reference still passes and the miss still fails on its test."""
    command = "tox -e py -- --junitxml={junit}"
    fixed = grade_with(command, FIX, hidden)
    assert (fixed.status, fixed.passed, fixed.reason_codes) == ("graded", True, []), fixed.messages
    tests = fixed.component("tests")
    assert tests.details["canaries"] == "unsupported"
    said = [m for m in tests.messages if "without the grader's channel" in m and "tox -e py -i" in m]
    assert len(said) == 1, tests.messages
    missed = grade_with(command, BUG, hidden)
    assert (missed.status, missed.passed) == ("graded", False), missed.messages
    assert "fail-to-pass-failing" in missed.reason_codes
