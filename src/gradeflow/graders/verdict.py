"""The verdict: graded, refused and inconclusive :class:`GradeResult` values, the decision and hard gates. Pure.

Every rule that moves a verdict after the components are scored lives here or in
:mod:`gradeflow.graders.composite` (the arithmetic): ``empty-patch``, hard gates overriding ``passed``,
the bands between decisions, and a failed gate deciding a grade a later step could not finish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradeflow.config import gradeflow_version
from gradeflow.graders.composite import Combined, CompositeGrader
from gradeflow.models import ChangedFile, Decision, EnvironmentFingerprint, GradeComponent, GradeResult, TaskSpec
from gradeflow.models.result import StrictReading
from gradeflow.profiles import Bands, Profile

__all__ = [
    "composite_for",
    "decide",
    "gate_decided_result",
    "graded_result",
    "inconclusive_result",
    "refused_result",
    "strict_reading",
]


def decide(score: float, rejected: bool, bands: Bands, *, passed: bool) -> Decision:
    """The decision of a graded result: ``rejected`` by a failed gate or hard gate, else by the score's band.

    A grade that did not pass is never ``merge-candidate``, whatever its score: in the merge band it goes
    to ``human-review`` (a patch that fixes the issue and breaks two other tests scores high, and fails).
    """
    if rejected:
        return "rejected"
    if score >= bands.merge_candidate and passed:
        return "merge-candidate"
    return "human-review" if score >= bands.human_review else "retry"


def composite_for(task: TaskSpec, profile: Profile) -> CompositeGrader:
    """The combination of a task without custom graders under ``profile``."""
    return CompositeGrader.for_task(task, profile)


def graded_result(
    task: TaskSpec,
    submission_id: str,
    components: Sequence[GradeComponent],
    composite: CompositeGrader | Profile,
    *,
    patch: str,
    changes: Sequence[ChangedFile],
    environment: EnvironmentFingerprint | None = None,
) -> GradeResult:
    """Combine the components (through ``composite``, or a profile's plain one) into a graded result.

    Inconclusive instead when a dimension the profile requires (``missing: inconclusive``) has no
    evidence, or a detector could not run under a profile with ``detector_unavailable: inconclusive``:
    the components and the dimensions that were scored are kept, the score is not.
    """
    if isinstance(composite, Profile):
        composite = composite_for(task, composite)
    profile = composite.profile
    combined = composite.combine(components)
    unscorable = _unscorable(combined, profile)
    if unscorable is not None:
        code, message = unscorable
        return inconclusive_result(
            task,
            submission_id,
            code,
            message,
            profile.name,
            components=combined.components,
            patch=patch,
            changes=changes,
            environment=environment,
            dimensions=combined.dimensions,
        )
    verdict = _verdict(combined, profile, empty=not changes)
    result = _graded(task, submission_id, combined, profile, patch, changes, environment, verdict)
    return result.model_copy(update={"strict_reading": strict_reading(result, composite)})


def strict_reading(result: GradeResult, composite: CompositeGrader) -> StrictReading | None:
    """gradeflow's stricter verdict beside a grade that followed SWE-bench's procedure (``tests.hidden_edits:
    reset``), combined by ``composite`` as the grade was: the edits to the hidden tests' files that were set
    aside fail the gates they are about, and where the candidate's other test edits were kept in the run, the
    tests component is the one of the run with them reset (``details["strict_tests"]``). ``None`` when nothing
    was set aside or kept.
    """
    extra = [code for c in result.components for code in c.details.get("strict_reason_codes", ())]
    if not extra:
        return None
    verdict = _verdict(
        composite.combine([_strict_component(c) for c in result.components]),
        composite.profile,
        empty=not result.files_changed,
    )
    return StrictReading(
        passed=verdict["passed"],
        decision=verdict["decision"],
        reason_codes=list(dict.fromkeys([*verdict["reason_codes"], *extra])),
        messages=[m for c in result.components for m in c.details.get("strict_messages", ())],
    )


def _strict_component(component: GradeComponent) -> GradeComponent:
    """``component`` as gradeflow's own reading has it: a gate that set edits aside fails with their codes; a
    tests component that ran with test edits kept scores as its run with them reset did."""
    set_aside = component.details.get("strict_reason_codes", ())
    if component.role == "gate" and set_aside:
        codes = list(dict.fromkeys([*component.reason_codes, *set_aside]))
        return component.model_copy(update={"passed": False, "reason_codes": codes})
    tests = component.details.get("strict_tests")
    if isinstance(tests, dict):
        return component.model_copy(update={k: tests[k] for k in ("score", "passed", "reason_codes")})
    return component


def _unscorable(combined: Combined, profile: Profile) -> tuple[str, str] | None:
    """Why the profile leaves this combination without a score (reason code, message), or ``None``."""
    if combined.missing:
        return "dimension-missing", (
            f"no evidence for {', '.join(combined.missing)}, which profile {profile.name!r} requires"
        )
    if profile.detector_unavailable == "inconclusive":
        unavailable = [c.name for c in combined.components if "detector-unavailable" in c.reason_codes]
        if unavailable:
            return "detector-unavailable", (
                f"detector {', '.join(unavailable)} could not run, which profile {profile.name!r} requires"
            )
    return None


def _graded(
    task: TaskSpec,
    submission_id: str,
    combined: Combined,
    profile: Profile,
    patch: str,
    changes: Sequence[ChangedFile],
    environment: EnvironmentFingerprint | None,
    verdict: Mapping[str, Any],
) -> GradeResult:
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="graded",
        components=combined.components,
        patch=patch,
        profile=profile.name,
        dimensions=combined.dimensions,
        environment=environment,
        gradeflow_version=gradeflow_version(),
        **verdict,
        **_change_counts(changes),
    )


def _verdict(combined: Combined, profile: Profile, *, empty: bool) -> dict[str, Any]:
    """Score, passed, decision, reason codes and messages of a combination under the profile's hard gates."""
    codes = list(dict.fromkeys((["empty-patch"] if empty else []) + combined.reason_codes))
    hard = [c for c in codes if c in profile.hard_gates]
    passed = combined.passed and not hard
    decision = decide(combined.score, combined.gate_failed or bool(hard), profile.bands, passed=passed)
    held = [] if passed or combined.score < profile.bands.merge_candidate or decision == "rejected" else [_held(codes)]
    return {
        "score": combined.score,
        "passed": passed,
        "decision": decision,
        "reason_codes": codes,
        "messages": [f"hard gate: {code}" for code in hard] + held + _unplaced(combined.components, profile),
    }


def _held(codes: Sequence[str]) -> str:
    """Why a score in the merge band is sent to a person: the grade did not pass."""
    why = f" ({', '.join(codes)})" if codes else ""
    return f"not passed{why}: a score in the merge band goes to human-review"


def _change_counts(changes: Sequence[ChangedFile]) -> dict[str, Any]:
    return {
        "files_changed": [c.path for c in changes],
        "lines_added": sum(c.lines_added for c in changes),
        "lines_removed": sum(c.lines_removed for c in changes),
    }


def _unplaced(components: Sequence[GradeComponent], profile: Profile) -> list[str]:
    """A note for each objective whose dimension the profile does not name (reported, never scored)."""
    return [
        f"component {c.name} belongs to dimension {profile.dimension_of(c)!r}, which profile {profile.name!r} "
        "does not name: reported, not scored"
        for c in components
        if c.role == "objective" and not profile.reports(profile.dimension_of(c))
    ]


def gate_decided_result(
    task: TaskSpec,
    submission_id: str,
    components: Sequence[GradeComponent],
    profile: Profile,
    *,
    patch: str,
    changes: Sequence[ChangedFile],
    environment: EnvironmentFingerprint | None,
    unfinished: str,
) -> GradeResult | None:
    """A grade a later step could not finish, decided by a gate that had already failed; ``None`` if none had.

    A failed gate (or a profile's hard gate) decides the grade whatever the other steps would have
    found, so the result is graded and ``rejected``, score 0, with the components gathered so far;
    ``unfinished`` (what broke) is kept in its messages.
    """
    combined = composite_for(task, profile).combine(components)
    verdict = _verdict(combined, profile, empty=not changes)
    if verdict["decision"] != "rejected":
        return None
    decided = {
        **verdict,
        "score": 0.0,
        "passed": False,
        "messages": [*verdict["messages"], f"a later step did not finish ({unfinished}); the failed gate decides"],
    }
    return _graded(task, submission_id, combined, profile, patch, changes, environment, decided)


def refused_result(
    task: TaskSpec,
    submission_id: str,
    reason_code: str,
    message: str,
    profile: Profile,
    *,
    patch: str,
    environment: EnvironmentFingerprint | None = None,
) -> GradeResult:
    """A submission that could not be graded by its own fault: a failed ``patch`` gate, score 0."""
    gate = GradeComponent(
        name="patch", role="gate", score=0.0, passed=False, messages=[message], reason_codes=[reason_code]
    )
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="graded",
        score=0.0,
        passed=False,
        decision="rejected",
        reason_codes=[reason_code],
        components=[gate],
        patch=patch,
        messages=[message],
        profile=profile.name,
        dimensions=dict.fromkeys(profile.dimensions),
        environment=environment,
        gradeflow_version=gradeflow_version(),
    )


def inconclusive_result(
    task: TaskSpec,
    submission_id: str,
    reason_code: str,
    message: str,
    profile_name: str,
    *,
    components: Sequence[GradeComponent] = (),
    patch: str = "",
    changes: Sequence[ChangedFile] = (),
    environment: EnvironmentFingerprint | None = None,
    dimensions: Mapping[str, float | None] | None = None,
) -> GradeResult:
    """No score: the reason, and whatever evidence (components, dimension scores) was gathered."""
    return GradeResult(
        task_id=task.task_id,
        submission_id=submission_id,
        status="inconclusive",
        score=None,
        passed=False,
        decision="inconclusive",
        reason_codes=[reason_code],
        components=list(components),
        files_changed=[c.path for c in changes],
        lines_added=sum(c.lines_added for c in changes),
        lines_removed=sum(c.lines_removed for c in changes),
        patch=patch,
        messages=[message],
        profile=profile_name,
        dimensions=dict(dimensions or {}),
        environment=environment,
        gradeflow_version=gradeflow_version(),
    )
