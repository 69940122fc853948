"""What the published result says about hidden tests: pass or fail per declared id, nothing the candidate steers.

With hidden tests, anything the candidate's code controls about their run (exit code, test counts,
durations, messages) would let repeated submissions read the hidden tests out a few bytes at a time.
Unless the task opts in (``tests.publish_hidden_details: true``), the tests component and the result's
timings are published without them. Pure.
"""

from __future__ import annotations

from gradeflow.graders.tests import counts_as_passed, set_aside_messages
from gradeflow.models import GradeComponent, GradeResult, TaskSpec

__all__ = ["withhold_hidden_details", "withhold_hidden_timings", "withholds_hidden_details"]


def withholds_hidden_details(task_spec: TaskSpec) -> bool:
    """Whether the task has hidden tests and does not publish their run's details."""
    return bool(task_spec.tests.hidden) and not task_spec.tests.publish_hidden_details


def withhold_hidden_details(task_spec: TaskSpec, component: GradeComponent) -> GradeComponent:
    """The tests component as published when the task has hidden tests (unless ``tests.publish_hidden_details``).

    It keeps its score, passed flag and reason codes, says ``passed`` or ``failed`` per declared test id
    (and how many of each), and nothing else the candidate's code could steer: no exit code, no counts
    of other test cases, no duration, no message from the run. Otherwise ``component`` is returned as is.
    """
    if not withholds_hidden_details(task_spec):
        return component
    broken = set(component.details.get("broken", []))
    set_aside = dict(component.details.get("failing_on_base", {}))  # the pristine base's outcomes: not steered
    declared = {kind: dict(component.details.get(kind, {})) for kind in ("fail_to_pass", "pass_to_pass", "quarantined")}
    tests = task_spec.tests
    verdicts = {
        "fail_to_pass": {t: _verdict(counts_as_passed(o, tests)) for t, o in declared["fail_to_pass"].items()},
        "pass_to_pass": {
            t: _verdict(t not in broken and (t not in set_aside or counts_as_passed(o, tests)))
            for t, o in declared["pass_to_pass"].items()
        },
        "quarantined": {t: _verdict(counts_as_passed(o, tests)) for t, o in declared["quarantined"].items()},
    }
    scored = [
        *verdicts["fail_to_pass"].values(),
        *(v for t, v in verdicts["pass_to_pass"].items() if t not in set_aside),
    ]
    messages = [
        f"{kind} {test} failed"
        for kind in ("fail_to_pass", "pass_to_pass")
        for test, v in verdicts[kind].items()
        if v == "failed" and test not in set_aside
    ]
    messages += set_aside_messages(set_aside)
    # Which declared tests compared a value equal by the repository's own rule, or equal to anything; not where,
    # nor which type, nor any undeclared (hidden) test's id.
    kinds = {test: kind for kind in ("pass_to_pass", "fail_to_pass") for test in verdicts[kind]}
    suspect = sorted(component.details.get("compared_values", {}))
    messages += [
        f"{kinds.get(test, 'test')} {test} passed on a value equal by a rule of the repository: review"
        for test in suspect
    ]
    anything = sorted(t for t in component.details.get("equal_to_anything", {}) if t in kinds)
    messages += [f"{kinds[test]} {test} compared a value equal to anything" for test in anything]
    if len(anything) < len(component.details.get("equal_to_anything", {})):
        messages.append("a test outside the declared lists compared a value equal to anything")
    varies = [t for t in component.details.get("outcome_varies", []) if t in kinds]
    messages += [f"{kinds[test]} {test} did not pass when run again with pytest's marks off: review" for test in varies]
    details = {
        **verdicts,
        "outcome_varies": varies,
        "compared_values": suspect,
        "equal_to_anything": anything,
        "broken": sorted(broken),
        **({"failing_on_base": set_aside} if set_aside else {}),
        "counts": {"passed": scored.count("passed"), "failed": scored.count("failed")},
        "withheld": "the task has hidden tests: the run's exit code, test cases, duration and output are not published",
    }
    return component.model_copy(update={"details": details, "messages": messages})


def _verdict(passed: bool) -> str:
    return "passed" if passed else "failed"


def withhold_hidden_timings(task_spec: TaskSpec, result: GradeResult) -> GradeResult:
    """``result`` without the tests step's duration when the task withholds its hidden-test details."""
    if not withholds_hidden_details(task_spec) or "tests" not in result.timings:
        return result
    return result.model_copy(update={"timings": {k: v for k, v in result.timings.items() if k != "tests"}})
