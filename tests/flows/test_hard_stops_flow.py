"""The hard-stop detectors in a real grade of the calc example: on in rubric, off in default."""

from __future__ import annotations

import pytest

from builders import EXAMPLES
from gradeflow import grade, load_task

pytestmark = pytest.mark.usefixtures("prefect")

CALC = EXAMPLES / "calc"
SHELL = (
    "diff --git a/src/runner.py b/src/runner.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/runner.py\n"
    "@@ -0,0 +1,5 @@\n+import subprocess\n+\n+\n+def run(cmd):\n+    return subprocess.call(cmd, shell=True)\n"
)


def test_reference_passes_every_detector_under_rubric() -> None:
    result = grade(load_task(CALC / "task.yaml"), patch=CALC / "reference_with_test.diff", profile="rubric")
    detectors = [result.component(n) for n in ("security", "compatibility", "data-loss")]
    assert [(c.passed, c.scored, c.role) for c in detectors] == [(True, True, "gate")] * 3
    assert not {"security-violation", "compatibility-break", "data-loss", "detector-unavailable"} & set(
        result.reason_codes
    )


def test_the_same_fix_with_a_shell_call_is_a_security_violation() -> None:
    patch = (CALC / "reference_with_test.diff").read_text() + SHELL
    result = grade(load_task(CALC / "task.yaml"), patch=patch, profile="rubric")
    security = result.component("security")
    assert security.reason_codes == ["security-violation"]
    assert [(f["path"], f["line"], f["test_id"]) for f in security.details["findings"]] == [
        ("src/runner.py", 5, "B602")
    ]
    assert result.decision == "rejected"


def test_default_profile_runs_no_detector() -> None:
    result = grade(load_task(CALC / "task.yaml"), patch=CALC / "reference_with_test.diff", profile="default")
    assert not {"security", "compatibility", "data-loss"} & {c.name for c in result.components}
