"""A real fix that breaks an existing test is never a merge candidate (graded end to end, default profile).

Ten pass_to_pass tests, one broken: the score is 0.9 (``score × (1 − broken/total)``), inside the default
profile's merge band, and the grade did not pass; the decision goes to a person with the reason code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import diff
from gradeflow import grade
from gradeflow.models import TaskSpec

pytestmark = [pytest.mark.usefixtures("prefect"), pytest.mark.slow]

BUG = "def divide(a, b):\n    return a / b if b else None\n\n\ndef add(a, b):\n    return a + b\n"
FIX_BREAKING_ADD = (
    "def divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError('no')\n    return a / b\n\n\n"
    "def add(a, b):\n    return a + b + (a == 1)\n"
)
TESTS = "import pytest\n\nfrom calc import add, divide\n\n\ndef test_divide_by_zero():\n" + (
    "    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n\n\n"
    + "".join(f"def test_add_{n}():\n    assert add({n}, 2) == {n + 2}\n\n\n" for n in range(10))
)


def test_a_fix_that_breaks_an_existing_test_goes_to_review(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name, text in {"src/calc.py": BUG, "tests/test_calc.py": TESTS, "pytest.ini": "[pytest]\n"}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    task = TaskSpec.model_validate(
        {
            "task_id": "breaks-one",
            "type": "bugfix",
            "repo": str(repo),
            "tests": {
                "command": "PYTHONPATH=src python -m pytest -q -p no:cacheprovider --junitxml={junit}",
                "fail_to_pass": ["tests/test_calc.py::test_divide_by_zero"],
                "pass_to_pass": [f"tests/test_calc.py::test_add_{n}" for n in range(10)],
                "timeout": 120,
            },
        }
    )
    result = grade(task, patch=diff(BUG, FIX_BREAKING_ADD), sandbox="local")
    assert (result.status, result.passed, result.score) == ("graded", False, pytest.approx(0.9)), result.messages
    assert result.decision == "human-review"
    assert "pass-to-pass-broken" in result.reason_codes
    assert any(m.startswith("not passed (pass-to-pass-broken") for m in result.messages), result.messages
