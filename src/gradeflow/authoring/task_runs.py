"""``task new``'s runs: each side repeated, the written spec's baseline and its validation, two runs at a time.

| side      | runs, in order                                                                              |
|-----------|---------------------------------------------------------------------------------------------|
| base      | ``max(1, repeat - 2)`` plain runs in one workspace, the baseline's health check, the empty grade |
| reference | ``max(1, repeat - 1)`` plain runs in one workspace, the reference's grade                    |

So ``repeat`` runs a side (three at least on the base, two with the reference), six in all at ``--repeat 3``,
and none is made only to validate. The plain runs of both sides start at once, in two threads beside the
flows and before the first request to the Prefect server (seconds on a fresh one): a run is no Prefect task
run of its own, so two of them never write to a SQLite-backed server at once. From the first run of each
side the lists are derived and written, and that spec is validated as ``gradeflow validate`` does it while
the other plain runs go on: its baseline (health check included), then the empty submission's and the
reference's grades through ``grade-submission``, nothing skipped or stood in for. The baseline's run and the
grades' acceptance runs, heard through :data:`~gradeflow.tasks.tests.acceptance_listener`, are the last runs
of each side: the lists are derived again from every run, and when they changed (a test whose outcome
changed in a later run) the spec is written again and validated again from scratch.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial

from prefect import flow

from gradeflow.authoring.derive import DerivedTests, derive_tests
from gradeflow.errors import BaselineBroken
from gradeflow.flows.session import Session
from gradeflow.flows.validate import BASELINE_ID, EMPTY_ID, REFERENCE_ID, ValidationReport, validate_task
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TestRunEvidence
from gradeflow.sandbox.base import SandboxFactory
from gradeflow.tasks.baseline import Baseline, baseline_key, build_base
from gradeflow.tasks.environment import describe_environment
from gradeflow.tasks.flaky import RepeatedRuns, RunListener, one_run, repeat_runs
from gradeflow.tasks.repo import BaseRef
from gradeflow.tasks.tests import acceptance_listener

__all__ = ["RunPlan", "Written", "derive_and_validate"]

Written = Callable[[DerivedTests], TaskSpec]
"""Writes the lists into the task spec file and loads it back."""
Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunPlan:
    """How many runs each side gets for ``repeat``."""

    repeat: int

    @property
    def base_plain(self) -> int:
        """Plain runs of the base before its baseline's and the empty grade's runs."""
        return max(1, self.repeat - 2)

    @property
    def reference_plain(self) -> int:
        """Plain runs with the reference before its grade's run."""
        return max(1, self.repeat - 1)

    @property
    def base(self) -> int:
        return self.base_plain + 2

    @property
    def reference(self) -> int:
        return self.reference_plain + 1

    @property
    def total(self) -> int:
        return self.base + self.reference


def _ground(task_spec: TaskSpec, factory: SandboxFactory, base: BaseRef) -> Baseline:
    """The pristine base and the task's environment (``setup`` run once) the plain runs start from, without a
    health-check run of their own: the runs are the check (a run without a usable report says why). No Prefect
    call: the runs start before the first request to the server, which can take seconds on a fresh one. Built as
    a baseline's (held by ``factory``, counted in the store and its cap)."""
    key = baseline_key(task_spec, base, describe_environment.fn(task_spec, factory))
    pristine, environment = build_base(task_spec, base, key, factory)
    return Baseline(base=base, key=key, pristine=pristine, tests_record=b"", environment=environment)


class _Sides:
    """Both sides' plain runs, each in a thread; the first run of each is available before the others end."""

    __slots__ = ("_every", "_first")  # no __dict__: Prefect records a flow parameter it cannot encode by its type

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        task_spec: TaskSpec,
        ground: Baseline,
        reference: str,
        factory: SandboxFactory,
        plan: RunPlan,
    ) -> None:
        self._first: list[Future[RepeatedRuns]] = [Future(), Future()]
        self._every = [
            pool.submit(
                contextvars.copy_context().run,  # the progress display's listener
                repeat_runs,
                task_spec,
                ground,
                patch,
                factory,
                runs,
                partial(_set_once, first),
            )
            for patch, runs, first in (
                (None, plan.base_plain, self._first[0]),
                (reference, plan.reference_plain, self._first[1]),
            )
        ]

    def first(self) -> list[RepeatedRuns]:
        """The first run of each side (all of a side's runs when it ended before its first was recorded)."""
        found = []
        for first, every in zip(self._first, self._every, strict=True):
            wait([first, every], return_when=FIRST_COMPLETED)
            found.append(first.result() if first.done() else every.result())
        return found

    def every(self) -> list[RepeatedRuns]:
        return [every.result() for every in self._every]


def _set_once(future: Future[RepeatedRuns], runs: RepeatedRuns) -> None:
    if not future.done():
        future.set_result(runs)


@flow(name="derive-task", flow_run_name="derive-{task_spec.task_id}", persist_result=False, validate_parameters=False)
def first_runs(task_spec: TaskSpec, sides: _Sides) -> list[RepeatedRuns]:
    """The first run of each side, the lists' first source (``BaselineBroken`` when one gave no usable report)."""
    del task_spec  # names the flow run
    return _usable(sides.first())


def derive_and_validate(
    skeleton: TaskSpec,
    reference: str,
    session: Session,
    plan: RunPlan,
    files: set[str],
    write: Written,
    display: RunListener,
    progress: Progress,
) -> tuple[DerivedTests, ValidationReport]:
    """Run both sides, write the lists, validate the spec; the lists derived from every run, and the report on
    the spec holding them."""
    factory, base = session.factory, session.base
    ground = _ground(skeleton, factory, base)
    settle: Callable[[], None] = _nothing
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="gradeflow-side") as pool:
            sides = _Sides(pool, skeleton, ground, reference, factory, plan)
            first = first_runs(skeleton, sides)
            early = derive_tests(first[0].outcomes, first[1].outcomes, {**first[0].cases, **first[1].cases}, files)
            spec = write(early)
            settle = _hand_over(ground, spec, factory)
            progress(f"wrote {_counts(early)} from the first run of each side; validating it")
            report, heard = _validate_hearing(spec, reference, session, plan, display)
            plain = _usable(sides.every())
    finally:
        settle()  # every plain run is over (the pool waited for them)
    base_runs = plain[0]
    for role in (BASELINE_ID, EMPTY_ID):
        base_runs = base_runs.merged(one_run("base", heard.get(role)))
    reference_runs = plain[1].merged(one_run("reference", heard.get(REFERENCE_ID)))
    cases = {**base_runs.cases, **reference_runs.cases}
    derived = derive_tests(base_runs.outcomes, reference_runs.outcomes, cases, files)
    if _lists(derived) != _lists(early):
        spec = write(derived)
        progress(f"a test changed outcome in a later run: wrote {_counts(derived)}; validating again")
        report = validate_task(spec, reference, factory, session.profile, 1, base=base)
    return derived, report


def _validate_hearing(
    spec: TaskSpec, reference: str, session: Session, plan: RunPlan, display: RunListener
) -> tuple[ValidationReport, dict[str, TestRunEvidence]]:
    """``validate_task`` on ``spec``, with its baseline's run and each grade's acceptance run heard and shown."""
    heard: dict[str, TestRunEvidence] = {}
    numbers = {
        BASELINE_ID: ("base", plan.base_plain + 1),
        REFERENCE_ID: ("reference", plan.reference),
        EMPTY_ID: ("base", plan.base),
    }

    def hear(role: str, evidence: TestRunEvidence) -> None:
        heard[role] = evidence
        side, number = numbers[role]
        display.finished(side, number, evidence.duration, evidence.junit_found)
        if role == BASELINE_ID:
            for side, number in (numbers[REFERENCE_ID], numbers[EMPTY_ID]):
                display.started(side, number)

    display.started(*numbers[BASELINE_ID])
    token = acceptance_listener.set(hear)
    try:
        report = validate_task(spec, reference, session.factory, session.profile, 1, base=session.base)
    finally:
        acceptance_listener.reset(token)
    return report, heard


def _hand_over(ground: Baseline, spec: TaskSpec, factory: SandboxFactory) -> Callable[[], None]:
    """The ground's folder (the pristine base, and the environment ``setup`` built on it) shown where the written
    spec's baseline looks for them, so that ``setup`` runs once: nothing that built them depends on the lists, the
    only difference between the two specs. Shown by a link while the plain runs go on, since they start every
    command from the ground's paths (a sandbox that mounts the environment's layers names them at each command's
    start); the returned callable, called once they are over, moves the folder in the link's place. Nothing is
    done when the written spec already has a folder (another run made it): theirs is as good."""
    key = baseline_key(spec, ground.base, describe_environment.fn(spec, factory))
    folder = ground.pristine.parent
    target = folder.with_name(key)
    if target == folder:
        return _nothing
    try:
        target.symlink_to(folder.name)
    except OSError:  # there already
        return _nothing

    def settle() -> None:
        with contextlib.suppress(OSError):  # another run replaced the link: its folder stays, ours with it
            if target.is_symlink() and str(target.readlink()) == folder.name:
                target.unlink()
                folder.rename(target)

    return settle


def _nothing() -> None:
    return None


def _usable(sides: list[RepeatedRuns]) -> list[RepeatedRuns]:
    errors = [f"{r.side} {e}" for r in sides for e in r.errors]
    if errors:
        raise BaselineBroken(f"task new: the tests gave no usable report: {'; '.join(errors)}")
    return sides


def _lists(derived: DerivedTests) -> tuple[list[str], list[str], list[str]]:
    return derived.fail_to_pass, derived.pass_to_pass, derived.quarantine


def _counts(derived: DerivedTests) -> str:
    return (
        f"{len(derived.fail_to_pass)} fail_to_pass, {len(derived.pass_to_pass)} pass_to_pass, "
        f"{len(derived.quarantine)} quarantined"
    )
