"""Profiles end to end: test evidence and reviewability on the real calc example, flaky tests, profile choice."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from builders import EXAMPLES
from fakes import BUG, FIX, diff
from gradeflow import grade, load_task
from gradeflow.cli import main
from gradeflow.config import cache_dir
from gradeflow.errors import SpecError
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox import FakeSandboxFactory

pytestmark = pytest.mark.usefixtures("prefect")

CALC = EXAMPLES / "calc"
FLAKY = EXAMPLES / "flaky"


def _calc(patch: str, profile: str = "rubric") -> GradeResult:
    return grade(load_task(CALC / "task.yaml"), patch=CALC / patch, profile=profile)


def test_a_regression_test_raises_test_evidence_on_the_calc_example() -> None:
    without, with_test, weak = (_calc(p) for p in ("reference.diff", "reference_with_test.diff", "weak_test.diff"))
    scores = [r.dimensions["test_evidence"] for r in (without, with_test, weak)]
    assert scores == [0.0, 1.0, 0.25] and scores[1] > scores[0]
    assert without.component("test_evidence").reason_codes == ["missing-regression-test"]
    assert weak.component("test_evidence").reason_codes == ["test-does-not-fail-on-base"]
    assert (without.score, without.decision) == (0.7, "human-review")
    assert (with_test.score, with_test.decision, with_test.passed) == (1.0, "merge-candidate", True)
    assert with_test.component("test_evidence").details["tests"] == {
        "tests.test_divide_by_zero_regression::test_divide_by_zero_raises_instead_of_returning_none": {
            "base": "failed",
            "candidate": "passed",
        }
    }
    # The new test file broke no constraint (allow_new_tests) and stayed out of the acceptance run.
    assert with_test.component("constraints").passed
    assert "reset to the base before the run: tests/test_divide_by_zero_regression.py" in (
        with_test.component("tests").messages
    )
    assert [r.dimensions["reviewability"] for r in (without, with_test, weak)] == [1.0, 1.0, 1.0]


def test_only_the_touched_test_of_a_changed_test_file_runs() -> None:
    patch = (CALC / "reference.diff").read_text() + (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n"
        "@@ -22,6 +22,11 @@ def test_divide_by_zero():\n"
        "         divide(1, 0)\n \n \n+def test_divide_by_zero_message():\n"
        "+    with pytest.raises(ZeroDivisionError, match='undefined'):\n+        divide(2, 0)\n+\n+\n"
        " class TestMultiply(unittest.TestCase):\n     def test_multiply(self):\n"
        "         self.assertEqual(multiply(3, 4), 12)\n"
    )
    result = grade(load_task(CALC / "task.yaml"), patch=patch, profile="rubric")
    evidence = result.component("test_evidence")
    assert evidence.details["selected"] == ["tests/test_calc.py::test_divide_by_zero_message"]
    assert (evidence.score, list(evidence.details["tests"])) == (1.0, ["tests.test_calc::test_divide_by_zero_message"])
    assert result.decision == "rejected"  # editing the acceptance test file is still tampering


def test_the_default_profile_gathers_no_extra_evidence() -> None:
    result = _calc("reference_with_test.diff", profile="default")
    assert [c.name for c in result.components] == ["constraints", "test_infrastructure", "tamper", "tests", "quality"]
    assert (result.passed, result.dimensions, result.profile) == (True, {"behavior": 1.0}, "default")
    assert "reviewability" not in result.timings and "test_evidence" not in result.timings


def test_grade_json_carries_profile_and_dimensions(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["grade", str(CALC / "task.yaml"), "--patch", str(CALC / "bad.diff"), "--profile", "rubric", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and payload["profile"] == "rubric"
    assert payload["dimensions"] == {"behavior": 0.0, "test_evidence": 0.0, "reviewability": 1.0}
    assert payload["decision"] == "rejected"  # a failed gate: the test file was edited, ZeroDivisionError missing
    evidence = next(c for c in payload["components"] if c["name"] == "test_evidence")
    assert evidence["reason_codes"] == ["missing-regression-test"]  # the test it touched is skipped


def test_profiles_command_lists_dimensions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    rows = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    assert rows["rubric"][2] == "behavior 0.50, test_evidence 0.30, reviewability 0.20"
    assert {"default", "rubric", "strict"} <= set(rows)


def _flaky_task(tmp_path: Path, quarantine: bool, luck: str | None = None) -> Path:
    shutil.copytree(FLAKY, tmp_path / "flaky", dirs_exist_ok=True)
    task = tmp_path / "flaky" / "task.yaml"
    spec = yaml.safe_load(task.read_text())
    spec["task_id"] = f"dice-{'q' if quarantine else 'nq'}-{luck or 'random'}"
    if not quarantine:
        spec["tests"]["pass_to_pass"] += spec["tests"].pop("quarantine")
    if luck is not None:
        spec["env"] = {"DICE_LUCK": luck}
    task.write_text(yaml.safe_dump(spec))
    return task


def test_validate_repeat_catches_the_flaky_test_and_accepts_it_quarantined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = str(FLAKY / "reference.diff")
    assert main(["validate", str(FLAKY / "task.yaml"), "--reference", reference, "--repeat", "10", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {(f["test"], f["side"], f["quarantined"]) for f in report["flaky"]} == {
        ("tests.test_dice::test_lucky_roll", "base", True),
        ("tests.test_dice::test_lucky_roll", "reference", True),
    }
    assert all(sum(f["counts"].values()) == 10 for f in report["flaky"])
    unquarantined = _flaky_task(tmp_path, quarantine=False)
    assert main(["validate", str(unquarantined), "--reference", reference, "--repeat", "10"]) == 1
    out = capsys.readouterr().out
    assert "tests.test_dice::test_lucky_roll is flaky on the base" in out
    assert "add it to tests.quarantine" in out


def test_a_quarantined_test_no_longer_moves_the_grade(tmp_path: Path) -> None:
    def graded(quarantine: bool, luck: str) -> GradeResult:
        folder = tmp_path / f"{quarantine}-{luck}"
        return grade(load_task(_flaky_task(folder, quarantine, luck)), patch=FLAKY / "reference.diff")

    lucky, unlucky = graded(True, "1.0"), graded(True, "0.0")
    assert (lucky.score, lucky.passed) == (unlucky.score, unlucky.passed) == (1.0, True)
    quarantined = {"tests/test_dice.py::test_lucky_roll"}
    assert lucky.component("tests").details["quarantined"] == dict.fromkeys(quarantined, "passed")
    assert unlucky.component("tests").details["quarantined"] == dict.fromkeys(quarantined, "failed")
    assert (graded(False, "1.0").score, graded(False, "0.0").score) == (1.0, 0.0)  # unquarantined, it decides


def test_a_required_dimension_without_evidence_is_inconclusive(
    repo_task: Callable[..., Path], fake: FakeSandboxFactory
) -> None:
    regression_only = {"command": "pytest --junitxml={junit}", "pass_to_pass": ["tests/test_calc.py::test_add"]}
    path = repo_task(task_id="gates-only", tests=regression_only)
    with pytest.raises(SpecError, match=r"tests\.fail_to_pass: no test to fix"):  # never a silent 0 (issue 23)
        load_task(path)
    task: TaskSpec = load_task(path, scored=False)
    rubric = grade(task, patch=diff(BUG, FIX), sandbox=fake, profile="rubric")
    assert (rubric.status, rubric.reason_codes, rubric.score) == ("inconclusive", ["dimension-missing"], None)
    assert rubric.dimensions["behavior"] is None and rubric.exit_code == 3


def test_a_command_naming_test_paths_does_not_lend_the_tasks_tests_to_the_patch(tmp_path: Path) -> None:
    # With `pytest tests/`, the evidence run used to collect the task's own fail_to_pass tests too, and
    # they made a "regression test" that passes on the base look like proof (test evidence 1.0).
    spec = yaml.safe_load((CALC / "task.yaml").read_text())
    spec["tests"]["command"] += " tests"
    spec["repo"], spec["tests"]["hidden"] = str(CALC / "repo"), str(CALC / "hidden_tests")
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump(spec))
    weak = grade(load_task(task), patch=CALC / "weak_test.diff", profile="rubric")
    evidence = weak.component("test_evidence")
    assert evidence.reason_codes == ["test-does-not-fail-on-base"]
    assert list(evidence.details["tests"]) == [
        "tests.test_divide_by_zero_regression::test_divide_still_works_for_nonzero_divisors"
    ]
    assert weak.dimensions["test_evidence"] == 0.25


def test_a_cached_baseline_whose_folder_is_gone_is_rebuilt_for_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _calc("reference.diff")  # caches the baseline, its folder under this GRADEFLOW_HOME
    shutil.rmtree(cache_dir() / "baselines")
    # Prefect's cache still serves that baseline to a process whose GRADEFLOW_HOME is elsewhere.
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "other-home"))
    again = _calc("reference_with_test.diff")
    assert again.status == "graded" and again.component("test_evidence").score == 1.0, again.reason_codes
    assert "candidate-broke-sandbox" not in again.reason_codes
