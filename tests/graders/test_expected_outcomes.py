"""Expected outcomes that cannot be borrowed: one row per situation of the module's table."""

from __future__ import annotations

import pytest

from gradeflow.graders.expected_outcomes import unborrowed_outcomes
from gradeflow.models.evidence import HarnessSummary, Outcome, TestRunEvidence

T = "tests/test_x.py::test_y"


def _run(outcome: Outcome, marked: list[str] | None = None, raiser: str | None = None) -> TestRunEvidence:
    summary = HarnessSummary(marked={T: marked} if marked else {}, raisers={T: raiser} if raiser else {})
    return TestRunEvidence(outcomes={T: outcome}, harness=summary)


@pytest.mark.parametrize(
    ("candidate", "base", "expected"),
    [
        (_run("xfailed", raiser="./src/lib.py"), _run("failed"), "failed"),  # raised from library code
        (_run("skipped", raiser="./src/lib.py"), _run("passed"), "failed"),
        (_run("xfailed"), _run("passed"), "failed"),  # no marker on the base, another outcome there
        (_run("skipped"), _run("passed"), "failed"),
        (_run("xfailed"), _run("failed", marked=["xfail"]), "xfailed"),  # the base's marker
        (_run("skipped"), _run("passed", marked=["skip"]), "skipped"),
        (_run("xfailed", raiser=f"./{T.split('::')[0]}"), _run("xfailed", raiser="./tests/test_x.py"), "xfailed"),
        (_run("skipped", raiser="./tests/conftest.py"), _run("skipped"), "skipped"),
        (_run("skipped", raiser="$env/lib/plugin.py"), _run("skipped"), "skipped"),  # outside the workspace
        (_run("skipped", raiser="./tests/helpers.py"), _run("skipped", raiser="./tests/helpers.py"), "skipped"),
        (_run("xfailed", marked=["skip"]), _run("passed", marked=["skip"]), "failed"),  # the other marker
        (_run("passed"), _run("failed"), "passed"),
    ],
)
def test_an_xfail_or_skip_counts_only_where_the_base_had_it(
    candidate: TestRunEvidence, base: TestRunEvidence, expected: Outcome
) -> None:
    assert unborrowed_outcomes(candidate, base)[T] == expected


def test_without_both_records_the_outcomes_stand() -> None:
    run = TestRunEvidence(outcomes={T: "xfailed"})
    assert unborrowed_outcomes(run, _run("passed")) == {T: "xfailed"}
    assert unborrowed_outcomes(_run("xfailed"), None) == {T: "xfailed"}
