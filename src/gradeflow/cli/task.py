"""``gradeflow task new`` and ``gradeflow task import-swebench``: task specs derived instead of typed.

Progress goes to stderr. ``task new`` exits 0 when the task spec was written and is valid, 1 when it
was written and is invalid (the problems listed), 2 for bad input (named before any flow runs).
``task import-swebench`` exits 0 when every row was converted, 1 when any was skipped (each listed
with its reason) or, with ``--validate``, any written task is not valid against its reference (a table
of every task's verdict is printed), 2 for bad input (an unreadable file, a line that is not JSON). A test
name left out of scoring (it has no id form) is listed on stderr and does not change the exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gradeflow.cli.server import choose_server
from gradeflow.cli.strength import add_strength_command, run_strength
from gradeflow.config import SANDBOX_KINDS, TASK_TYPES
from gradeflow.text import for_terminal

__all__ = ["TASK_COMMANDS", "add_task_commands", "run_task_command"]

TASK_COMMANDS = ("task",)


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def add_task_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``task new`` and ``task import-swebench``."""
    task = sub.add_parser("task", help="derive task specs (from a reference fix, or SWE-bench instances)")
    actions = task.add_subparsers(dest="task_command", required=True)
    new = actions.add_parser("new", help="derive a task spec from a base and a reference fix")
    new.add_argument("--repo", required=True, help="the git repository")
    new.add_argument("--base", required=True, help="the base revision the agent starts from")
    reference = new.add_mutually_exclusive_group(required=True)
    reference.add_argument("--reference", help="the reference fix as a unified diff file")
    reference.add_argument("--fix-commit", help="a commit whose difference from --base is the reference fix")
    new.add_argument("--tests", required=True, help="the test command, with {junit} where the report goes")
    new.add_argument("--type", default="bugfix", choices=TASK_TYPES)
    new.add_argument(
        "--repeat",
        type=_positive,
        default=3,
        metavar="N",
        help="runs per side, the validation's last ones (default 3; at least 3 on the base, 2 with the reference)",
    )
    new.add_argument("--setup", help="command run in the sandbox before the tests")
    new.add_argument("--task-id", help="the task id (default: the --out folder's name)")
    new.add_argument("--out", required=True, help="where to write task.yaml (reference.diff and hidden_tests/ beside)")
    new.add_argument("--ephemeral", action="store_true", help="use a temporary Prefect server for this call only")
    swebench = actions.add_parser("import-swebench", help="convert SWE-bench dataset rows into task specs")
    swebench.add_argument("instances", help="a JSON lines file of SWE-bench instances")
    swebench.add_argument("--repos", required=True, help="a folder of git mirrors named owner__name")
    swebench.add_argument(
        "--commands",
        help="YAML: owner/name → version → setup, test_command (optional: SWE-bench's repositories are known; "
        "an entry here overrides the table)",
    )
    swebench.add_argument("--out", required=True, help="the folder to write <instance_id>/task.yaml into")
    swebench.add_argument(
        "--validate", action="store_true", help="validate each written task with its reference and print a table"
    )
    swebench.add_argument("--sandbox", choices=SANDBOX_KINDS, help="with --validate: override environment.sandbox")
    swebench.add_argument("--ephemeral", action="store_true", help="use a temporary Prefect server for this call only")
    add_strength_command(actions)


def run_task_command(args: argparse.Namespace) -> int:
    """Run ``task new`` or ``task import-swebench``."""
    if args.task_command == "import-swebench":
        return _import_swebench(args)
    if args.task_command == "strength":
        return run_strength(args)
    return _new(args)


def _progress(message: str) -> None:
    print(f"gradeflow: {message}", file=sys.stderr)


def _new(args: argparse.Namespace) -> int:
    from gradeflow.authoring.new_task import NewTaskRequest, new_task, prepare_new_task

    request = NewTaskRequest(
        repo=Path(args.repo),
        base=args.base,
        reference=Path(args.reference) if args.reference else None,
        fix_commit=args.fix_commit,
        tests=args.tests,
        out=Path(args.out),
        type=args.type,
        repeat=args.repeat,
        task_id=args.task_id,
        setup=args.setup,
    )
    prepared = prepare_new_task(request)
    choose_server(args.ephemeral)
    made = new_task(prepared, _progress)
    report = made.report
    verdict = "VALID" if report.valid else f"INVALID ({len(report.problems)} problems)"
    print(f"{verdict}: {report.task_id} written to {made.path}")
    for problem in report.problems:
        print(f"  - {problem}")
    return 0 if report.valid else 1


def _import_swebench(args: argparse.Namespace) -> int:
    from gradeflow.authoring.swebench import import_instances

    commands = Path(args.commands) if args.commands else None
    report = import_instances(Path(args.instances), Path(args.repos), commands, Path(args.out))
    for path in report.written:
        print(path)
    for row in report.skipped:
        print(f"gradeflow: skipped {row.instance_id} (line {row.line}): {row.reason}", file=sys.stderr)
    for name in report.quarantined:
        shown = for_terminal(json.dumps(name.name))
        print(
            f"gradeflow: {name.instance_id}: {name.key} name {shown} left out of scoring: {name.reason}",
            file=sys.stderr,
        )
    if report.last_run:
        _progress(
            f"{len(report.last_run)} names several tests print (a docstring's first line) are scored as the one "
            "of those tests that runs last (tests.last_run_of), as SWE-bench's log parser reads them"
        )
    _progress(f"{len(report.written)} task specs written, {len(report.skipped)} rows skipped")
    valid = _validate_imported(report.written, args) if args.validate else True
    return 1 if report.skipped or not valid else 0


def _validate_imported(written: list[Path], args: argparse.Namespace) -> bool:
    """Validate each written task against the reference beside it; a table row each; whether all were valid."""
    from gradeflow.api import load_task, open_session
    from gradeflow.authoring.new_task import REFERENCE_FILE
    from gradeflow.errors import GradeflowError
    from gradeflow.flows.session import flow_runs_without_heartbeat
    from gradeflow.flows.validate import validate_task

    choose_server(args.ephemeral)
    rows: list[tuple[str, str, str]] = []
    for path in written:
        try:
            task = load_task(path)
            session = open_session(task, args.sandbox)
            reference = (path.parent / REFERENCE_FILE).read_bytes().decode("utf-8", errors="surrogateescape")
            with flow_runs_without_heartbeat():
                found = validate_task(task, reference, session.factory, session.profile, 1, base=session.base)
            rows.append((task.task_id, "VALID" if found.valid else "INVALID", "; ".join(found.problems)))
        except (GradeflowError, OSError) as exc:
            rows.append((path.parent.name, "ERROR", str(exc)))
    width = max([len("instance"), *(len(row[0]) for row in rows)])
    print(f"{'instance':<{width}}  verdict  problems")
    for instance, verdict, problems in rows:
        print(for_terminal(f"{instance:<{width}}  {verdict:<7}  {problems or '-'}"))
    return all(verdict == "VALID" for _, verdict, _ in rows)
