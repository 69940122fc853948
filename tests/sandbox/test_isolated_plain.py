"""What the code under test sees of its run names no gradeflow (the isolated default, a real grade).

Its variables (names and values), working folder, command line, interpreter and path, host name, account, the
modules loaded, pytest's plugins and the import hooks, the names in pytest's assertion rewriter and the files in every
folder of the path: none says "gradeflow", in the main run and in the varied
run, so a patch that looks for the word cannot tell a graded run from a developer's. The grader's own
installation (its interpreter and packages, lent read-only to a task with no root of its own) is shown at its
host path, which may name gradeflow: that is left out (see docs/concepts/residual-risks.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gradeflow import grade
from gradeflow.models import TaskSpec
from gradeflow.sandbox._bwrap import bwrap_path, bwrap_problem, interpreter_folders

pytestmark = pytest.mark.slow

PLAIN = """import os, pwd, socket, sys

import _pytest.assertion.rewrite as rewrite


def test_nothing_names_the_grader(request):
    shared = [folder for folder in os.environ["GRADER_FOLDERS"].split(":") if folder]

    def names_it(text):
        for folder in shared:
            text = text.replace(folder, "")
        return "gradeflow" in text.lower()

    seen = {f"variable {name}": f"{name}={value}" for name, value in os.environ.items() if name != "GRADER_FOLDERS"}
    seen.update(
        cwd=os.getcwd(),
        argv=" ".join(sys.argv),
        interpreter=f"{sys.executable} {sys.prefix}",
        path=" ".join(sys.path),
        host=socket.gethostname(),
        account=str(pwd.getpwuid(os.getuid())),
        modules=" ".join(sys.modules),
        plugins=" ".join(str(name) for name, _ in request.config.pluginmanager.list_name_plugin()),
        hooks=" ".join(repr(hook) for hook in sys.meta_path),
        rewriter=" ".join(vars(rewrite)),
        site_files=" ".join(
            name
            for folder in sys.path
            if os.path.isdir(folder) and not any(folder.startswith(s) for s in shared)
            for name in os.listdir(folder)
        ),
    )
    assert not sorted(what for what, text in seen.items() if names_it(text))
"""


def assert_plain_run(
    tmp_path: Path, sandbox: str, shared: list[str], environment: dict[str, Any] | None = None
) -> None:
    """Grade ``PLAIN`` as the pass_to_pass test of a task run in ``sandbox`` (``shared``: the grader's folders the
    test leaves out) and assert it passed: nothing it looked at named gradeflow."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_plain.py").write_text(PLAIN)
    spec: dict[str, Any] = {
        "task_id": "plain",
        "type": "bugfix",
        "repo": str(repo),
        "env": {"GRADER_FOLDERS": ":".join(shared)},
        "tests": {
            "command": "PYTHONPATH=. python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "pass_to_pass": ["tests/test_plain.py::test_nothing_names_the_grader"],
        },
    }
    if environment is not None:
        spec["environment"] = environment
    result = grade(TaskSpec.model_validate(spec), patch="", sandbox=sandbox)
    tests = result.component("tests")
    assert result.status == "graded" and tests.passed, (result.reason_codes, tests.details, tests.messages)
    assert tests.details["pass_to_pass"] == {"tests/test_plain.py::test_nothing_names_the_grader": "passed"}


@pytest.mark.skipif(bwrap_problem() is not None, reason="bwrap cannot run here")
def test_a_graded_run_names_no_gradeflow(tmp_path: Path, prefect: None) -> None:
    del prefect
    assert_plain_run(tmp_path, "isolated", [*interpreter_folders(), str(Path(bwrap_path() or "bwrap").parent)])
