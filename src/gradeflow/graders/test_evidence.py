"""TestEvidenceGrader: did the patch bring its own regression test, and does that test prove anything?

The patch's own tests (the ``tests.test_files`` it adds or changes, down to the touched test functions)
run twice: on the pristine base with only those test files added, where a regression test should
fail, and on the candidate, where it should pass. A test *proves* the change when it passes on the
candidate and does not pass on the base.

| situation                                                   | score                          |
|-------------------------------------------------------------|--------------------------------|
| no test in the patch, bugfix or feature task                | 0, ``missing-regression-test`` |
| no test in the patch, refactor or perf task                 | unscored (not expected)        |
| its tests are all skipped on the candidate                  | as if there were none          |
| no usable report (timeout, setup failure, nothing collected)| unscored, ``test-evidence-unavailable`` |
| its report or record shows tampering, on either side        | 0, ``junit-tampered``          |
| k of n tests pass on the candidate, at least one proves     | k / n                          |
| k of n pass, none fails on the base                         | k / n × 0.25, ``test-does-not-fail-on-base`` |
| a test passes on a value equal by the repository's own rule | not proving, ``equality-from-repository``    |
| (``__eq__``) where its base run compared no such value      |                                              |
| a test runs none of the lines the patch changed outside its | not proving, ``test-does-not-reach-change``  |
| tests (inside functions), from its setup to its teardown    |                                              |

"Runs a changed line" is recorded by the harness on the candidate run (see :mod:`gradeflow.tasks._reach`):
lines at module or class level run at import and count for no test, so a test of a constant the patch adds
proves nothing; a patch that changes no line inside a function brings no proving test. Not measured (every
test may prove) when the task's runs have no harness.

A run whose harness says its report cannot be trusted (the code under test did what the base's run never
did, a rewritten report) is the candidate's doing on either side: the base side runs the patch's own test
files. So it is ``junit-tampered`` (a hard gate in every shipped profile), never an unavailable run that a
profile would skip.

A test failing on the candidate adds ``regression-test-fails``. Skipped tests are left out of n. An
expected failure (``xfailed``) counts as failing whatever ``tests.xfail`` says: a test the patch marks as
still failing proves no fix. The component passes when every test passes on the candidate and at least
one proves the change.
"""

from __future__ import annotations

from gradeflow.graders.base import Grader, GradingContext
from gradeflow.graders.compared_values import REASON as EQUALITY_REASON
from gradeflow.graders.compared_values import redefined_equality
from gradeflow.models import GradeComponent
from gradeflow.models.evidence import Outcome, PatchTestsEvidence, TestCaseResult, TestRunEvidence
from gradeflow.models.testids import split_test_id

__all__ = ["UNPROVEN_CREDIT", "UNREACHED_REASON", "PatchTestsEvidence", "TestEvidenceGrader"]

UNPROVEN_CREDIT = 0.25
"""Share of credit for tests that pass on the base too: they pin behavior but prove nothing about the fix."""

UNREACHED_REASON = "test-does-not-reach-change"
"""A test fails on the base and passes on the candidate without running any line the patch changed (outside its
tests, inside a function): it tests something else, a name the patch adds (``AttributeError`` on the base)."""


def _key(case: TestCaseResult) -> str:
    return f"{case.classname}::{case.name}"


def _outcomes(run: TestRunEvidence | None) -> dict[str, Outcome]:
    return {_key(c): c.outcome for c in run.cases} if run else {}


def _unusable(run: TestRunEvidence | None, side: str) -> str | None:
    """Why ``run`` says nothing about the tests; a base run that timed out still says they fail there."""
    if run is None:
        return f"the patch's tests were not run on the {side}"
    if side == "base" and run.timed_out:
        return None
    if run.timed_out or run.oom_killed:
        return f"the patch's tests were killed on the {side} (timeout or memory)"
    if not run.junit_found or run.junit_error:
        return f"the patch's tests gave no usable report on the {side}: {run.junit_error or 'no JUnit report'}"
    return None


def _tampered(evidence: PatchTestsEvidence) -> list[str]:
    """Why the patch's tests' runs cannot be trusted, one line per side whose harness said so."""
    sides = (("candidate", evidence.candidate), ("base", evidence.base))
    return [
        f"the patch's tests' report on the {side} cannot be trusted: {run.junit_error or 'tampered'}"
        for side, run in sides
        if run is not None and run.junit_tampered
    ]


class TestEvidenceGrader(Grader):
    """Objective in the ``test_evidence`` dimension; runs nothing, scores the evidence gathered."""

    __test__ = False
    name = "test_evidence"
    dimension = "test_evidence"

    def grade(self, context: GradingContext) -> GradeComponent:
        evidence = context.patch_tests
        if evidence is None:
            raise ValueError("the test-evidence step gathered no evidence")
        if not evidence.selected:
            return self._no_tests(context, evidence)
        tampered = _tampered(evidence)
        if tampered:
            return self.component(
                0.0,
                False,
                details={"files": evidence.files, "selected": evidence.selected},
                messages=tampered,
                reason_codes=["junit-tampered"],
            )
        why = _unusable(evidence.candidate, "candidate") or _unusable(evidence.base, "base")
        if why:
            return self.unscored(why, "test-evidence-unavailable", files=evidence.files, selected=evidence.selected)
        candidate = _outcomes(evidence.candidate)
        if candidate and all(o == "skipped" for o in candidate.values()):
            return self._no_tests(context, evidence, " (its tests are all skipped)")
        return self._score(evidence)

    def _no_tests(self, context: GradingContext, evidence: PatchTestsEvidence, where: str = "") -> GradeComponent:
        kind = context.task.type
        if evidence.files and not where:
            where = f" (it changes {', '.join(evidence.files)} but no test in them)"
        if kind in ("bugfix", "feature"):
            return self.component(
                0.0,
                False,
                details={"files": evidence.files, "selected": evidence.selected},
                messages=[f"the patch brings no regression test{where}; a {kind} task expects one"],
                reason_codes=["missing-regression-test"],
            )
        return self.unscored(
            f"the patch brings no test{where}; none is expected on a {kind} task",
            files=evidence.files,
            selected=evidence.selected,
        )

    def _score(self, evidence: PatchTestsEvidence) -> GradeComponent:
        candidate, base = _outcomes(evidence.candidate), _outcomes(evidence.base)
        ran = {k: o for k, o in candidate.items() if o != "skipped"}
        if not ran:
            return self.unscored(
                "none of the patch's tests was collected on the candidate",
                "test-evidence-unavailable",
                files=evidence.files,
                selected=evidence.selected,
            )
        passing = [k for k, o in ran.items() if o == "passed"]
        failing = [k for k in ran if k not in passing]
        suspect = _equal_by_own_rule(evidence)  # a test that passes on a value equal to anything proves nothing
        differing = [k for k in passing if base.get(k, "missing") != "passed" and k not in suspect]
        unreached = _unreached(evidence, differing)  # a test that runs none of the change proves nothing about it
        proving = [k for k in differing if k not in unreached]
        score = len(passing) / len(ran) * (1.0 if proving else UNPROVEN_CREDIT)
        messages = [f"{k} {ran[k]} on the candidate" for k in failing]
        messages += [f"{k}: {line}" for k, lines in suspect.items() for line in lines]
        messages += [f"{k} fails on the base and passes after the patch, but {unreached[k]}" for k in unreached]
        if proving:
            messages.append(f"{len(proving)} of {len(ran)} of the patch's tests fail on the base and pass after it")
        elif not suspect and not unreached:
            messages.append("none of the patch's tests fails on the base: they do not show the change matters")
        codes = (["regression-test-fails"] if failing else []) + ([EQUALITY_REASON] if suspect else [])
        codes += [] if proving or not unreached else [UNREACHED_REASON]
        codes += [] if proving or suspect or unreached else ["test-does-not-fail-on-base"]
        details = {
            "files": evidence.files,
            "selected": evidence.selected,
            "proving": proving,
            "tests": {k: {"base": base.get(k, "missing"), "candidate": o} for k, o in candidate.items()},
        }
        details["compared_values"] = suspect
        details["reach"] = {"changed": evidence.reach, "ran": _ran(evidence), "unreached": sorted(unreached)}
        return self.component(
            round(score, 6), not failing and bool(proving), details=details, messages=messages, reason_codes=codes
        )


def _unreached(evidence: PatchTestsEvidence, keys: list[str]) -> dict[str, str]:
    """Test key → why it does not exercise the change, for those of ``keys`` whose candidate run ran none of the
    lines the patch changed outside its tests (:attr:`~PatchTestsEvidence.reach`); nothing when not measured
    (no harness for the task) or for a test the harness could not trace (another trace function was set)."""
    if evidence.reach is None:
        return {}
    if not evidence.reach:
        why = "the patch changes no line inside a function outside its tests, so no test can be shown to run it"
        return dict.fromkeys(keys, why)
    harness = evidence.candidate.harness if evidence.candidate else None
    reached = {_junit_key(n): found for n, found in harness.reached.items()} if harness else {}
    unmeasured = {_junit_key(n) for n in harness.reach_unmeasured} if harness else set()
    why = "it runs none of the lines the patch changed outside its tests"
    return {k: why for k in keys if not reached.get(k) and k not in unmeasured}


def _ran(evidence: PatchTestsEvidence) -> dict[str, list[str] | None]:
    """Test key → the changed lines its candidate run ran (``None``: could not be traced), for a reviewer."""
    harness = evidence.candidate.harness if evidence.candidate and evidence.reach is not None else None
    if harness is None:
        return {}
    ran: dict[str, list[str] | None] = {_junit_key(n): found for n, found in harness.reached.items()}
    return ran | {_junit_key(n): None for n in harness.reach_unmeasured}


def _equal_by_own_rule(evidence: PatchTestsEvidence) -> dict[str, list[str]]:
    """Test key → the suspect comparisons of a patch's test (:mod:`gradeflow.graders.compared_values`); the
    same tests' run on the pristine base, whose code the candidate never touched, is the witness."""
    candidate = evidence.candidate.harness if evidence.candidate else None
    witness = evidence.base.harness if evidence.base else None
    found = redefined_equality(candidate, witness, candidate.compared if candidate else ())
    return {_junit_key(nodeid): lines for nodeid, lines in found.items()}


def _junit_key(nodeid: str) -> str:
    """A node id as :func:`_key` names its testcase (``tests.test_x.Case::test_y``)."""
    path, *parts = split_test_id(nodeid)
    module = path[:-3] if path.endswith(".py") else path
    return f"{'.'.join([module.replace('/', '.'), *parts[:-1]])}::{parts[-1]}"
