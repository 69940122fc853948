"""Expected outcomes that cannot be borrowed: an xfail or a skip counts only where the base had it.

Under ``tests.xfail: pass`` an xfailed test counts as passed, and under ``tests.skipped_pass_to_pass:
kept`` a skipped pass_to_pass test counts as kept. Code under test could raise pytest's ``XFailed`` or
``Skipped`` itself to earn either. So, from the harness's records of the base and the candidate run:

| the candidate's xfailed or skipped test                                      | counts as   |
|------------------------------------------------------------------------------|-------------|
| its xfail or skip was raised from a repository file other than the test's    | ``failed``  |
| own or a conftest, one the base's run of that test did not raise it from     |             |
| it carries no such marker on the base and had another outcome there          | ``failed``  |
| otherwise                                                                    | as reported |

Without both records (a runner other than pytest) the outcomes stand as reported. Markers and raisers are
keyed by pytest node id, so the rule applies to test ids written as node ids.
"""

from __future__ import annotations

from gradeflow.models.evidence import HarnessSummary, Outcome, TestRunEvidence
from gradeflow.models.testids import file_of_test_id

__all__ = ["unborrowed_outcomes"]

_MARKER: dict[str, str] = {"xfailed": "xfail", "skipped": "skip"}


def unborrowed_outcomes(run: TestRunEvidence, base: TestRunEvidence | None) -> dict[str, Outcome]:
    """``run``'s outcomes with every borrowed xfail or skip made ``failed`` (``base`` is the pristine base's run)."""
    if base is None or run.harness is None or base.harness is None:
        return dict(run.outcomes)
    outcomes = dict(run.outcomes)
    for test_id, outcome in run.outcomes.items():
        if outcome in _MARKER and _borrowed(test_id, outcome, run.harness, base.harness, base.outcomes.get(test_id)):
            outcomes[test_id] = "failed"
    return outcomes


def _borrowed(test_id: str, outcome: str, mine: HarnessSummary, theirs: HarnessSummary, on_base: str | None) -> bool:
    raiser = mine.raisers.get(test_id)
    if raiser is not None and raiser != theirs.raisers.get(test_id) and not _test_side(raiser, test_id):
        return True
    return _MARKER[outcome] not in theirs.marked.get(test_id, []) and on_base != outcome


def _test_side(raiser: str, test_id: str) -> bool:
    """Whether ``raiser`` is the test's own file, a conftest, or outside the workspace (pytest, a plugin)."""
    own = file_of_test_id(test_id)
    return not raiser.startswith("./") or raiser == f"./{own}" or raiser.endswith("/conftest.py")
