"""The varied re-run: the tests a candidate passed, run again with pytest's marks off the process.

Code under test can notice a test run without reading anything the harness watches: faulthandler is on,
``threading.excepthook`` and ``sys.unraisablehook`` are pytest's, the root logger has pytest's handlers,
``sys.stdout`` is a capture object, ``__main__`` is pytest's, the CPU time already spent and the stack room
left are a test process's, and the grader pins a hash seed. A patch that behaves only then passes its tests
and fixes nothing for a real caller. So once the candidate's required tests passed (the fail_to_pass tests,
or the pass_to_pass tests of a task with none), they run again through the same command and harness, each
call in a child forked for it (fresh CPU time) where faulthandler is off, the standard hooks are Python's
own, pytest's handlers are off the root logger (unless the test asks for ``caplog``), ``sys.stdout`` is the
real one (unless it asks for ``capsys`` or ``capfd``), ``__main__`` and ``sys.argv`` name a script, the
recursion limit is raised by a random amount. The session's collection runs with those marks off too (pytest's
capture suspended while a test file's modules are imported), and the sandbox is shaped like a developer's
machine, drawn per run (:mod:`gradeflow.sandbox.shape`: another user, host name, ``HOME`` and path of the tree,
no ``PYTHONHASHSEED`` so Python draws one, as far as the kind of sandbox allows). A test that passed and now
does not is ``outcome-varies-with-environment``, for a person to look at. What the harness notes in a forked call
(the child sends it, signed, with the call's outcome) is checked against the base run like the main run's
notes: a varied run whose record shows tampering is ``junit-tampered``. A candidate whose required tests
failed pays nothing: no varied run.
"""

from __future__ import annotations

from gradeflow.errors import SubmissionError
from gradeflow.graders.constraints import protected_globs
from gradeflow.graders.tests import counts_as_passed
from gradeflow.integrity.harness import Varied
from gradeflow.integrity.sealing import seal_acceptance_tree
from gradeflow.models import TaskSpec
from gradeflow.models.evidence import TestRunEvidence, VariedRunEvidence
from gradeflow.sandbox.base import SandboxFactory, remove_tree
from gradeflow.sandbox.shape import Shape
from gradeflow.tasks._junit import junit_names
from gradeflow.tasks._testrun import run_test_command, start_harness
from gradeflow.tasks.baseline import Baseline, inject_hidden, task_sandbox, working_copy
from gradeflow.tasks.snapshot import Snapshot

__all__ = ["rerun_ids", "varied_run"]


def rerun_ids(task_spec: TaskSpec, evidence: TestRunEvidence) -> list[str]:
    """The tests a varied run repeats: every fail_to_pass test, else, for a task with none, the pass_to_pass
    tests that passed. None when a fail_to_pass test did not pass or a pass_to_pass test failed (or is
    missing): that grade fails anyway and pays for no second run. None either for a task that turned it off
    (``tests.varied_run: false``)."""
    spec = task_spec.tests
    if not spec.varied_run:
        return []
    quarantine = set(spec.quarantine)
    f2p = [t for t in spec.fail_to_pass if t not in quarantine]
    p2p = [t for t in spec.pass_to_pass if t not in quarantine]
    if any(evidence.outcomes.get(t, "missing") in ("failed", "error", "missing") for t in p2p):
        return []
    if f2p:
        return f2p if all(counts_as_passed(evidence.outcomes.get(t, "missing"), spec) for t in f2p) else []
    return [t for t in p2p if evidence.outcomes.get(t) == "passed"]


def varied_run(
    task_spec: TaskSpec, snapshot: Snapshot, baseline: Baseline, sandboxes: SandboxFactory, main: TestRunEvidence
) -> VariedRunEvidence | None:
    """The varied re-run of :func:`rerun_ids` on a fresh sealed copy, or ``None`` when there is nothing to
    repeat, the main run is not usable, or the task's runs have no harness (the base's run never joined it)."""
    ids = rerun_ids(task_spec, main)
    usable = main.junit_found and not (main.junit_error or main.junit_tampered or main.timed_out)
    if not ids or not usable or baseline.tests.harness is None or snapshot.workspace is None:
        return None
    tree = working_copy(snapshot.workspace)
    try:
        seal_acceptance_tree(task_spec, snapshot.changes, tree, baseline.pristine, protected_globs(task_spec))
        try:
            hidden = inject_hidden(task_spec, tree, tree.parent / "hidden-backup")
        except (OSError, SubmissionError) as exc:
            return VariedRunEvidence(tests=ids, problem=f"hidden tests cannot be injected: {exc}")
        varied = Varied.drawn()
        # The ids as written and as the main run's report spelled them: pytest selects by node id, and a spec's
        # id may be the report's spelling instead (a Django-style id, a package prefix the rootdir drops).
        select = [*ids, *junit_names(ids, main.cases)]
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
