"""The pristine base's test run: every attempt starts from the base as it is, not from what an earlier one left."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import make_task
from gradeflow.errors import InfraError
from gradeflow.models import TaskSpec
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.tasks._git import init_snapshot_repo
from gradeflow.tasks.baseline import base_test_run

# Runs pytest only where an earlier run of the command left its mark: as tox-current-env's dangling links in
# .tox/ made sphinx's tests run on the base's second attempt while no candidate's run (a fresh copy) could.
LEAVES_A_MARK = (
    "if [ -f left-by-an-earlier-run ]; then python -m pytest -q -p no:cacheprovider --junitxml={junit} tests; "
    "else touch left-by-an-earlier-run; exit 1; fi"
)


def _base(tmp_path: Path) -> Path:
    pristine = tmp_path / "baseline" / "repo"
    pristine.mkdir(parents=True)
    (pristine / "calc.py").write_text("X = 1\n")
    init_snapshot_repo(pristine)
    return pristine


def test_the_base_run_again_without_the_harness_starts_from_a_fresh_copy(tmp_path: Path) -> None:
    # The first run has the harness and no pytest joins it (nothing runs pytest), so the base runs again with the
    # hidden tests on disk: on a copy of the base, where no mark of the first run is, so the base gives no report.
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_calc.py").write_text("def test_x():\n    assert True\n")
    tests = {"command": LEAVES_A_MARK, "hidden": str(hidden), "pass_to_pass": ["tests/test_calc.py::test_x"]}
    task = TaskSpec.model_validate(make_task(tests=tests))
    with pytest.raises(InfraError, match="no usable report") as raised:
        base_test_run(task, _base(tmp_path), LocalSandboxFactory(), None)
    assert raised.value.reason_code == "baseline-broken"
