"""TamperGrader: no finding passes; any finding fails the gate with tamper-suspected, file and line in the messages."""

from __future__ import annotations

import pytest

from builders import make_task
from gradeflow.graders import GradingContext, InMemoryWorkspace
from gradeflow.graders.tamper import TamperGrader
from gradeflow.graders.verdict import graded_result
from gradeflow.models import ChangedFile, GradeComponent, TaskSpec
from gradeflow.models.evidence import TamperEvidence, TamperFinding
from gradeflow.profiles import available_profiles, load_profile

TASK = TaskSpec.model_validate(make_task())
EXIT = TamperFinding(path="src/a.py", line=4, kind="os-exit", detail="os._exit", message="exits the process")
HOOK = TamperFinding(path="src/sitecustomize.py", line=0, kind="startup-hook", detail="x", message="runs at start")


def _grade(evidence: TamperEvidence) -> GradeComponent:
    return TamperGrader(evidence).grade(GradingContext(task=TASK, workspace=InMemoryWorkspace()))


@pytest.mark.parametrize(
    ("findings", "score", "codes", "messages"),
    [
        ([], 1.0, [], []),
        ([EXIT], 0.0, ["tamper-suspected"], ["src/a.py:4: os-exit: exits the process"]),
        (
            [EXIT, HOOK],
            0.0,
            ["tamper-suspected"],
            ["src/a.py:4: os-exit: exits the process", "src/sitecustomize.py: startup-hook: runs at start"],
        ),
    ],
    ids=["clean", "one-finding", "a-whole-file-finding-has-no-line"],
)
def test_findings_table(findings: list[TamperFinding], score: float, codes: list[str], messages: list[str]) -> None:
    component = _grade(TamperEvidence(findings=findings, files_scanned=["src/a.py"], files_skipped=["src/b.py"]))
    assert (component.name, component.role) == ("tamper", "gate")
    assert (component.score, component.passed, component.reason_codes, component.messages) == (
        score,
        not findings,
        codes,
        messages,
    )
    assert component.details["files_scanned"] == ["src/a.py"]
    assert component.details["files_skipped"] == ["src/b.py"]
    assert [f["line"] for f in component.details["findings"]] == [f.line for f in findings]


def test_skipped_files_alone_do_not_fail_the_gate() -> None:
    assert _grade(TamperEvidence(files_skipped=["src/broken.py"])).passed


@pytest.mark.parametrize("profile", available_profiles())
def test_every_shipped_profile_rejects_a_finding_whatever_the_score(profile: str) -> None:
    tests = GradeComponent(name="tests", score=1.0, passed=True)
    tamper = _grade(TamperEvidence(findings=[EXIT]))
    changes = [ChangedFile(path="src/a.py", lines_added=2)]
    result = graded_result(TASK, "s", [tests, tamper], load_profile(profile), patch="", changes=changes)
    assert (result.decision, result.passed, result.score) == ("rejected", False, 0.0)
    assert "tamper-suspected" in result.reason_codes
    assert "hard gate: tamper-suspected" in result.messages
    assert result.component("tamper").messages == ["src/a.py:4: os-exit: exits the process"]
