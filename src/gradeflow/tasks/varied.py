"""The varied re-run: the tests a candidate passed, run again with pytest's marks off the process.

Code under test can notice a test run without reading anything the harness watches: faulthandler is on,
``threading.excepthook`` and ``sys.unraisablehook`` are pytest's, the root logger has pytest's handlers,
``sys.stdout`` is a capture object, warnings are recorded instead of shown, ``__main__`` is pytest's, the CPU time
already spent and the stack room left are a test process's, and the grader pins a hash seed. A patch that behaves
only then passes its tests and fixes nothing for a real caller. So once the candidate's required tests passed (the
fail_to_pass tests, or the pass_to_pass tests of a task with none), they run again through the same command and
harness, each call in a child forked for it (fresh CPU time) where faulthandler is off, the standard hooks are
Python's own, pytest's handlers are off the root logger (unless the test asks for ``caplog``), ``sys.stdout`` is
the real one (unless it asks for ``capsys`` or ``capfd``), a warning is shown as Python shows it (unless it asks
for ``recwarn``), ``__main__`` and ``sys.argv`` name a script, the recursion limit is raised by a random amount.
The session's collection runs with those marks off too (pytest's capture suspended while a test file's modules are
imported), and the sandbox is shaped like a developer's machine, drawn per run (:mod:`gradeflow.sandbox.shape`:
another user, host name, ``HOME`` and path of the tree, no ``PYTHONHASHSEED`` so Python draws one, as far as the
kind of sandbox allows). A test that passed and now does not is ``outcome-varies-with-environment``, for a person
to look at. What the harness notes in a forked call (the child sends it, signed, with the call's outcome) is
checked against the base run like the main run's notes: a varied run whose record shows tampering is
``junit-tampered``. A candidate whose required tests failed pays nothing: no varied run. Where a core is idle
(``GRADEFLOW_VARIED_RUN``), the varied run starts beside the main run instead of after it (:class:`VariedAhead`)
and the main run's outcome decides whether it counts: a passing grade's tests step then takes about one run's time,
not two.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from functools import partial

from gradeflow.config import varied_beside_main
from gradeflow.errors import SubmissionError
from gradeflow.graders.tests import counts_as_passed
from gradeflow.integrity.harness import Varied
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TestCaseResult, TestRunEvidence, VariedRunEvidence
from gradeflow.sandbox.base import SandboxFactory, remove_tree
from gradeflow.sandbox.shape import Shape
from gradeflow.tasks._junit import junit_names
from gradeflow.tasks._sealing import seal_for_run
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import Baseline, inject_hidden, task_sandbox, working_copy
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["VariedAhead", "rerun_ids", "varied_ahead", "varied_run"]


def rerun_ids(task_spec: TaskSpec, evidence: TestRunEvidence) -> list[str]:
    """The tests a varied run repeats: every fail_to_pass test, else, for a task with none, the pass_to_pass
    tests that passed. None when a fail_to_pass test did not pass or a pass_to_pass test failed (or is
    missing): that grade fails anyway and pays for no second run. None either for a task that turned it off
    (``tests.varied_run: false``)."""
    spec = task_spec.tests
    if not spec.varied_run:
        return []
    f2p, p2p = _required(task_spec)
    if any(evidence.outcomes.get(t, "missing") in ("failed", "error", "missing") for t in p2p):
        return []
    if f2p:
        return f2p if all(counts_as_passed(evidence.outcomes.get(t, "missing"), spec) for t in f2p) else []
    return [t for t in p2p if evidence.outcomes.get(t) == "passed"]


def _required(task_spec: TaskSpec) -> tuple[list[str], list[str]]:
    """The fail_to_pass and pass_to_pass tests a varied run may repeat: those the task does not quarantine."""
    quarantine = set(task_spec.tests.quarantine)
    return (
        [t for t in task_spec.tests.fail_to_pass if t not in quarantine],
        [t for t in task_spec.tests.pass_to_pass if t not in quarantine],
    )


def varied_run(
    task_spec: TaskSpec,
    snapshot: Snapshot,
    baseline: Baseline,
    sandboxes: SandboxFactory,
    main: TestRunEvidence,
    ahead: VariedAhead | None = None,
) -> VariedRunEvidence | None:
    """The varied re-run of :func:`rerun_ids` on a fresh sealed copy, or ``None`` when there is nothing to
    repeat, the main run is not usable, or the task's runs have no harness (the base's run never joined it).

    ``ahead`` (:func:`varied_ahead`), a varied run started beside the main run, is taken as this run when it
    repeated exactly the tests this one would and selected them by the same names; otherwise it is left
    unused and the varied run starts now, as without it."""
    ids = rerun_ids(task_spec, main)
    usable = main.junit_found and not (main.junit_error or main.junit_tampered or main.timed_out)
    if not ids or not usable or baseline.tests.harness is None or snapshot.workspace is None:
        return None
    select = _selection(task_spec.tests.expanded(ids), main.cases)
    if ahead is not None and (early := ahead.taken_for(ids, select)) is not None:
        return early
    return _run(task_spec, snapshot, baseline, sandboxes, ids, select)


def _selection(ids: list[str], cases: list[TestCaseResult]) -> list[str]:
    """The ids as written and as a run's report spelled them: pytest selects by node id, and a spec's id may be
    the report's spelling instead (a Django-style id, a package prefix the rootdir drops). A name of
    ``tests.last_run_of`` comes with its ids (:meth:`~gradeflow.models.TestsSpec.expanded`)."""
    return [*ids, *junit_names(ids, cases)]


def _run(
    task_spec: TaskSpec,
    snapshot: Snapshot,
    baseline: Baseline,
    sandboxes: SandboxFactory,
    ids: list[str],
    select: list[str],
) -> VariedRunEvidence:
    assert snapshot.workspace is not None
    tree = working_copy(snapshot.workspace)
    try:
        seal_for_run(task_spec, snapshot.changes, tree, baseline.pristine)
        try:
            hidden = inject_hidden(task_spec, tree, tree.parent / "hidden-backup")
        except (OSError, SubmissionError) as exc:
            return VariedRunEvidence(tests=ids, problem=f"hidden tests cannot be injected: {exc}")
        varied = Varied.drawn()
        harness = start_harness(task_spec, tree, None, baseline.tests, select=select, hidden=hidden, varied=varied)
        shaped = sandboxes.shaped(Shape.drawn(_project_name(task_spec)))
        with task_sandbox(task_spec, tree, baseline, shaped) as sandbox:
            run = run_test_command(task_spec, sandbox, harness=harness, base=baseline.tests)
    finally:
        remove_tree(tree.parent, ignore_errors=True)
    outcomes = {t: run.outcomes.get(t, "missing") for t in ids}
    tampered = run.junit_error if run.junit_tampered else None
    return VariedRunEvidence(
        tests=ids, outcomes=outcomes, problem=_problem(run), tampered=tampered, duration=run.duration
    )


class VariedAhead:
    """A varied run started beside the main run, on the tests :func:`rerun_ids` gives when every one of them
    passes, selected by the base run's spelling of their names. The main run's outcome decides, as ever,
    whether it counts: :func:`varied_run` takes it only for those same tests and names, so a grade's verdict
    is the one the varied run after the main run gives. Its cost is the varied run's, on a core that was
    idle, and for a candidate whose required tests fail, a varied run nobody reads."""

    def __init__(self, run: Callable[[], VariedRunEvidence], ids: list[str], select: list[str]) -> None:
        self.ids, self.select = ids, select
        self._result: VariedRunEvidence | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()  # the grade's bound log fields go with it
        self._thread = threading.Thread(
            target=context.run, args=(self._work, run), name="gradeflow varied run", daemon=True
        )
        self._thread.start()

    def _work(self, run: Callable[[], VariedRunEvidence]) -> None:
        try:
            self._result = run()
        except BaseException as exc:  # handed to the caller that takes the run, with its traceback
            self._error = exc

    def wait(self) -> None:
        """Until the run is over (its tree removed, its sandbox closed): a grade leaves no run behind it."""
        self._thread.join()

    def taken_for(self, ids: list[str], select: list[str]) -> VariedRunEvidence | None:
        """This run's evidence when it repeated ``ids`` selected as ``select``, else ``None``; what the run
        raised is raised here when it is taken, as a varied run started after the main run would raise it."""
        if ids != self.ids or sorted(select) != sorted(self.select):
            return None
        self.wait()
        if self._error is not None:
            raise self._error
        return self._result


def varied_ahead(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory
) -> VariedAhead | None:
    """A varied run started now, beside the main run, when ``GRADEFLOW_VARIED_RUN`` says so (``beside``, or
    ``auto`` with a core to spare) and the task has one to run; else ``None`` (it runs after the main run)."""
    if not task_spec.tests.varied_run or baseline.tests.harness is None or snapshot.workspace is None:
        return None
    f2p, p2p = _required(task_spec)
    ids = f2p or p2p
    if not ids or not varied_beside_main():
        return None
    select = _selection(task_spec.tests.expanded(ids), baseline.tests.cases)
    return VariedAhead(partial(_run, task_spec, snapshot, baseline, sandboxes, ids, select), ids, select)


def _project_name(task_spec: TaskSpec) -> str:
    """What a developer's checkout of the task's repository would be called: its folder's or URL's last part."""
    name = str(task_spec.repo).rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]
    return task_spec.task_id if name in ("", ".", "..", "repo", "repository") else name


def _problem(run: TestRunEvidence) -> str | None:
    if run.timed_out:
        return "the varied run timed out"
    if run.oom_killed or run.disk_full:
        return "the varied run was killed for its memory or disk"
    if run.junit_tampered:
        return f"the varied run's report cannot be trusted: {run.junit_error}"
    if run.junit_error or not run.junit_found:
        return f"the varied run wrote no usable report: {run.junit_error or f'exit code {run.exit_code}'}"
    return None
