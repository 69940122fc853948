"""TestGrader: the acceptance tests' verdict, from the parsed JUnit report.

| situation                                              | score                       |
|--------------------------------------------------------|-----------------------------|
| k of n fail_to_pass pass, partial credit on            | k / n                       |
| partial credit off, any fail_to_pass failing           | 0                           |
| a pass_to_pass broken, require_all_pass_to_pass on     | 0                           |
| a pass_to_pass failing (or missing) on the pristine    | not scored, listed in       |
| base, ``pass_to_pass_failing_on_base: set-aside``      | ``failing_on_base``         |
| a pass_to_pass broken, off                             | score × (1 − broken/total)  |
| no fail_to_pass declared                               | 1 when no pass_to_pass broke|
| no JUnit report, timeout, memory kill, no test ran     | 0 with a message            |
| disk limit filled, report over the size/testcase cap   | 0 with a message            |
| a fixed fail_to_pass or kept pass_to_pass compared a   | kept, not passed (review):  |
| value equal by the repository's own rule where the     | ``equality-from-repository``|
| base's was not                                         |                             |
| any test compared a value equal to anything where the  | kept, not passed:           |
| base's same comparison did not                         | ``equal-to-anything``       |
| a test it passed did not when run again with pytest's  | kept, not passed (review):  |
| marks off the process (the varied run)                 | ``outcome-varies-with-env…``|
| the varied run's record or report shows tampering      | 0: ``junit-tampered``       |

A skipped fail_to_pass test counts as failed. A skipped pass_to_pass test is kept only when it is
skipped on the pristine base too (``tests.skipped_pass_to_pass: broken``, the default), or always
(``kept``, SWE-bench's rule). An expected failure (``xfailed``) is no pass (``tests.xfail: fail``, the
default): a fail_to_pass test xfailed is not fixed, a pass_to_pass test xfailed is kept only when it
is xfailed on the base too; with ``tests.xfail: pass`` (SWE-bench's rule) it counts as passed in both
lists. An xfail or a skip counts only where the base had it (:mod:`gradeflow.graders.expected_outcomes`):
one raised from library code, or on a test that carries no such marker on the base and had another
outcome there, is a failure. Quarantined test ids are reported, never scored. The role is objective
when fail_to_pass is declared, gate otherwise (regression-only).

| outcome on the candidate | fail_to_pass | pass_to_pass                                         |
|--------------------------|--------------|------------------------------------------------------|
| passed                   | fixed        | kept                                                 |
| xfailed                  | not fixed    | kept if xfailed on the base                          |
| xfailed, ``xfail: pass`` | fixed        | kept                                                 |
| skipped                  | not fixed    | kept if skipped on the base, always when ``kept``    |
| failed, error, missing   | not fixed    | broken                                               |
"""

from __future__ import annotations

from collections import Counter

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.graders.compared_values import ANYTHING_REASON, equal_to_anything, redefined_equality
from gradeflow.graders.compared_values import REASON as EQUALITY_REASON
from gradeflow.graders.expected_outcomes import unborrowed_outcomes
from gradeflow.models import GradeComponent, Role, TestsSpec
from gradeflow.models.evidence import Outcome, TestRunEvidence

__all__ = ["TestGrader", "counts_as_passed", "set_aside_messages"]


class TestGrader(Grader):
    """Runs nothing: scores the test evidence the tests step gathered."""

    __test__ = False
    name = "tests"

    def grade(self, context: GradingContext) -> GradeComponent:
        spec = context.task.tests
        quarantine = set(spec.quarantine)
        f2p = [t for t in spec.fail_to_pass if t not in quarantine]
        role: Role = "objective" if spec.fail_to_pass else "gate"
        run = context.tests
        if run is None:
            raise ValueError("the tests step gathered no evidence")
        unusable = _unusable(run)
        if unusable:
            code, message = unusable
            return self._component(context, role, 0.0, False, run, messages=[message], reason_codes=[code])
        p2p = [t for t in spec.pass_to_pass if t not in quarantine]
        failing_on_base = _failing_on_base(context, p2p)
        component = self._score(context, run, f2p, [t for t in p2p if t not in failing_on_base], role)
        if failing_on_base:
            component.details["failing_on_base"] = failing_on_base
            component.messages += set_aside_messages(failing_on_base)
        return component

    def _score(
        self, context: GradingContext, run: TestRunEvidence, f2p: list[str], p2p: list[str], role: Role
    ) -> GradeComponent:
        spec = context.task.tests
        base = context.baseline_tests.outcomes if context.baseline_tests else {}
        # An xfail or a skip the base did not have, or raised from library code, is a failure.
        run = run.model_copy(update={"outcomes": unborrowed_outcomes(run, context.baseline_tests)})
        failing = [t for t in f2p if not counts_as_passed(run.outcomes.get(t, "missing"), spec)]
        broken = [t for t in p2p if not _kept(run.outcomes.get(t, "missing"), base.get(t), spec)]
        if f2p:
            solved = len(f2p) - len(failing)
            score = solved / len(f2p) if spec.partial_credit else float(not failing)
        else:
            score = 1.0
        if broken:
            score = 0.0 if spec.require_all_pass_to_pass else score * (1 - len(broken) / len(p2p))
        messages = [f"fail_to_pass {t} is {run.outcomes.get(t, 'missing')}" for t in failing]
        messages += [f"pass_to_pass {t} broke: {run.outcomes.get(t, 'missing')}" for t in broken]
        codes = (["fail-to-pass-failing"] if failing else []) + (["pass-to-pass-broken"] if broken else [])
        # A fixed or kept test whose comparison the repository's own equality decided, where the base's did not:
        # for review. A value equal to anything where the base's was not, in any test: no honest value is.
        witness = context.baseline_tests.harness if context.baseline_tests else None
        kept = [t for t in p2p if t not in broken]
        suspect = redefined_equality(run.harness, witness, [t for t in f2p if t not in failing] + kept)
        messages += [f"{_role(t, f2p)} {t}: {line}" for t, lines in suspect.items() for line in lines]
        codes += [EQUALITY_REASON] if suspect else []
        anything = equal_to_anything(run.harness, witness)
        messages += [f"{t}: {line}" for t, lines in anything.items() for line in lines]
        codes += [ANYTHING_REASON] if anything else []
        # A test that passed, then did not when run again with pytest's marks off the process: for review.
        varies = _varied(run)
        messages += [f"{_role(t, f2p)} {t}: {line}" for t, line in varies.items()]
        codes += [VARIED_REASON] if varies else []
        component = self._component(
            context,
            role,
            score,
            not failing and not broken and not suspect and not anything and not varies,
            run,
            messages=messages,
            reason_codes=codes,
            broken=broken,
        )
        component.details["compared_values"] = suspect
        component.details["equal_to_anything"] = anything
        if run.varied is not None:
            component.details["varied_run"] = {"outcomes": run.varied.outcomes, "problem": run.varied.problem}
            component.details["outcome_varies"] = sorted(varies)
        return component

    def _component(
        self,
        context: GradingContext,
        role: Role,
        score: float,
        passed: bool,
        run: TestRunEvidence,
        *,
        messages: list[str],
        reason_codes: list[str],
        broken: list[str] | None = None,
    ) -> GradeComponent:
        spec = context.task.tests
        details = {
            "fail_to_pass": {t: run.outcomes.get(t, "missing") for t in spec.fail_to_pass if t not in spec.quarantine},
            "pass_to_pass": {t: run.outcomes.get(t, "missing") for t in spec.pass_to_pass if t not in spec.quarantine},
            "quarantined": {t: run.outcomes.get(t, "missing") for t in spec.quarantine},
            "broken": broken or [],
            "counts": dict(Counter(c.outcome for c in run.cases)),
            "exit_code": run.exit_code,
            "duration": round(run.duration, 3),
        }
        return GradeComponent(
            name=self.name,
            role=role,
            score=score,
            passed=passed,
            messages=messages,
            reason_codes=reason_codes,
            details=details,
        )


def counts_as_passed(outcome: Outcome, spec: TestsSpec) -> bool:
    """Whether a declared test with ``outcome`` passed under the task's rules (``xfailed`` per ``tests.xfail``)."""
    return outcome == "passed" or (outcome == "xfailed" and spec.xfail == "pass")


VARIED_REASON = "outcome-varies-with-environment"


def _varied(run: TestRunEvidence) -> dict[str, str]:
    """Test id → how it ended in the varied run, for each test it repeated that then ended otherwise."""
    varied = run.varied
    if varied is None:
        return {}
    if varied.problem:
        return {t: f"passed, but {varied.problem}" for t in varied.tests}
    found = {}
    for test in varied.tests:
        outcome, before = varied.outcomes.get(test, "missing"), run.outcomes.get(test, "missing")
        if outcome != before:
            found[test] = f"{before} in the run, {outcome} when run again with pytest's marks off the process"
    return found


def _role(test: str, f2p: list[str]) -> str:
    return "fail_to_pass" if test in f2p else "pass_to_pass"


def _kept(outcome: Outcome, on_base: Outcome | None, spec: TestsSpec) -> bool:
    """Whether a pass_to_pass test with ``outcome`` (``on_base`` on the pristine base) still holds."""
    if counts_as_passed(outcome, spec):
        return True
    if outcome == "skipped":
        return spec.skipped_pass_to_pass == "kept" or on_base == "skipped"
    return outcome == "xfailed" and on_base == "xfailed"


def _failing_on_base(context: GradingContext, p2p: list[str]) -> dict[str, Outcome]:
    """Test id → outcome on the pristine base, for each of ``p2p`` set aside because it did not pass there.

    Only under ``tests.pass_to_pass_failing_on_base: set-aside`` and with a base run: such a test (it needs a
    network route, a shared-memory folder, a file this environment lacks) shows nothing the candidate did. A
    skip or an xfail on the base is the test's state there, not a failure (the skip and xfail rules decide).
    """
    base = context.baseline_tests
    if context.task.tests.pass_to_pass_failing_on_base != "set-aside" or base is None:
        return {}
    found = {t: base.outcomes.get(t, "missing") for t in p2p}
    return {t: outcome for t, outcome in found.items() if outcome in ("failed", "error", "missing")}


def set_aside_messages(failing_on_base: dict[str, Outcome]) -> list[str]:
    """One message per pass_to_pass test set aside for failing on the pristine base (test id → its outcome there)."""
    return [
        f"pass_to_pass {t} is {outcome} on the pristine base too: not scored" for t, outcome in failing_on_base.items()
    ]


def _unusable(run: TestRunEvidence) -> tuple[str, str] | None:
    """Why the run cannot be scored at all, as (reason code, message)."""
    if run.disk_full:
        return "disk-limit-exceeded", "the test command filled the sandbox's disk limit"
    if run.oom_killed:
        return "oom-killed", "the test command was killed for using too much memory"
    if run.timed_out:
        return "test-timeout", f"the test command timed out after {run.duration:.0f} s"
    if run.junit_too_large:
        return "junit-too-large", f"the JUnit report is too large to grade: {run.junit_error}"
    if run.junit_tampered:
        return "junit-tampered", f"the JUnit report cannot be trusted: {run.junit_error}"
    if run.varied is not None and run.varied.tampered:
        return "junit-tampered", f"the varied run's report cannot be trusted: {run.varied.tampered}"
    if run.junit_error:
        return "no-junit-output", f"the JUnit report is unusable: {run.junit_error}"
    if not run.junit_found:
        return "no-junit-output", f"the test command wrote no JUnit report (exit code {run.exit_code})"
    if not run.cases:
        return "no-tests-ran", "the JUnit report holds no test case: no test ran"
    return None
