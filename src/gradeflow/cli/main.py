"""The ``gradeflow`` command.

Exit codes: 0 passed (or valid), 1 graded and not passed (or invalid), 2 usage or input error,
3 inconclusive (the environment failed, not the submission: a sandbox, the ledger's database, a Prefect
server that does not come up), 141 the reader of the output went away (``| head``), 130 interrupted.

Building the parser imports only the standard library and small modules (each command module imports what
it needs inside the function that runs it), so ``--help``, ``--version`` and a usage error answer without
pydantic, structlog or Prefect. ``tests/cli/test_parser_imports.py`` holds it to that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradeflow.cli.checkout import add_checkout_command, run_checkout
from gradeflow.cli.env import ENV_COMMANDS, add_env_command, run_env_command
from gradeflow.cli.plan import PLAN_COMMANDS, add_plan_command, run_plan_command
from gradeflow.cli.run import add_run_command, run_run
from gradeflow.cli.runner import LOCAL_SERVER, SERVE, add_runner_command, run_runner_command
from gradeflow.cli.server import SERVER_COMMANDS, add_server_commands, choose_server, run_server_command
from gradeflow.cli.service import SERVICE_COMMANDS, add_service_commands, run_service_command
from gradeflow.cli.suite import SUITE_COMMANDS, add_suite_commands, run_suite_command
from gradeflow.cli.task import TASK_COMMANDS, add_task_commands, run_task_command
from gradeflow.config import SANDBOX_KINDS
from gradeflow.errors import GradeflowError, SpecError, prefect_server_errors
from gradeflow.text import for_terminal

if TYPE_CHECKING:
    from gradeflow.flows.session import Session
    from gradeflow.models import GradeResult, TaskSpec

__all__ = ["main"]

EPHEMERAL_HELP = "use a temporary Prefect server for this call only, not the reused local one"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradeflow", description="Grade coding-agent patches.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="grade one submission")
    grade.add_argument("task", help="path to task.yaml")
    source = grade.add_mutually_exclusive_group(required=True)
    source.add_argument("--workspace", help="the agent's modified checkout")
    source.add_argument("--patch", help="a unified diff file")
    grade.add_argument("--submission-id", default="submission")
    grade.add_argument("--json", action="store_true", help="print the result JSON only")
    grade.add_argument("--out", help="also write the result JSON to this file")
    for p in (grade, validate := sub.add_parser("validate", help="check a task spec against its base")):
        p.add_argument("--sandbox", choices=SANDBOX_KINDS, help="override environment.sandbox (default isolated)")
        p.add_argument("--profile", help="a shipped profile name or a profile YAML file")
        p.add_argument("--ephemeral", action="store_true", help=EPHEMERAL_HELP)
    validate.add_argument("task", help="path to task.yaml")
    validate.add_argument("--reference", help="a reference patch that must pass")
    validate.add_argument("--json", action="store_true")
    validate.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="run the tests N times on the base (and the reference) and list tests whose outcome changes",
    )
    validate.add_argument(
        "--strength",
        type=float,
        metavar="MIN",
        help="also grade mutants of the reference (needs --reference): invalid when the kill rate is below MIN",
    )
    sub.add_parser("schema", help="print the task spec's JSON schema")
    sub.add_parser("profiles", help="list the shipped grading profiles")
    add_suite_commands(sub)
    add_service_commands(sub)
    add_server_commands(sub)
    add_checkout_command(sub)
    add_task_commands(sub)
    add_plan_command(sub)
    add_run_command(sub)
    add_env_command(sub)
    add_runner_command(sub)
    return parser


class _Version(argparse._VersionAction):
    """``--version``: the installed version, read from the package metadata (importlib.metadata) only when asked."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from gradeflow.config import gradeflow_version

        self.version = f"gradeflow {gradeflow_version()}"
        super().__call__(parser, namespace, values, option_string)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def main(argv: list[str] | None = None, *, warm: bool = False) -> int:
    """Run ``gradeflow`` with ``argv`` (``sys.argv[1:]`` by default) and return its exit code. With ``warm`` (the
    executable's way), a command that runs the engine goes through the warm runner, else in this process."""
    args = _parser().parse_args(argv)
    if warm:
        try:
            code = _through_runner(args, sys.argv[1:] if argv is None else argv)
        except GradeflowError as exc:
            print(f"gradeflow: error: {for_terminal(str(exc))}", file=sys.stderr)
            return exc.exit_code
        if code is not None:
            return code
    return _run(args)


def _through_runner(args: argparse.Namespace, argv: list[str]) -> int | None:
    """The exit code of ``argv`` run by the warm runner, ``None`` to run it here (see :mod:`gradeflow.cli.runner`)."""
    from gradeflow.engine.runner_client import RUNNER_COMMANDS, through_runner

    if args.command not in RUNNER_COMMANDS:
        return None
    # A one-shot call that will start the local Prefect server (no server named, a task file to grade) starts it
    # beside a runner it starts: the server's start then overlaps the runner's imports.
    local = args.command in ("grade", "validate") and not (args.ephemeral or os.environ.get("PREFECT_API_URL"))
    return through_runner(argv, SERVE, LOCAL_SERVER if local and Path(args.task).is_file() else None)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command: the modules it needs (pydantic, structlog, Prefect for a flow) load from here."""
    from pydantic import ValidationError

    from gradeflow.logs import configure_logging, quiet_prefect
    from gradeflow.spec import validation_message

    # Interactive commands keep stderr for errors; services log every step (GRADEFLOW_LOG_LEVEL overrides).
    service = args.command in {"serve", "deploy", "webhook"}
    configure_logging(os.environ.get("GRADEFLOW_LOG_LEVEL") or ("INFO" if service else "WARNING"))
    quiet_prefect()
    try:
        with prefect_server_errors():
            return _dispatch(args)
    except GradeflowError as exc:
        print(f"gradeflow: error: {for_terminal(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gradeflow: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (``| head``): nothing more to print, and the interpreter's last flush must not fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except ValidationError as exc:
        if not exc.title.endswith("Settings"):
            raise
        print(f"gradeflow: error: {for_terminal(validation_message(exc, 'Prefect settings'))}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "schema":
        from gradeflow.models import TaskSpec

        print(json.dumps(TaskSpec.model_json_schema(), indent=2))
        return 0
    if args.command == "profiles":
        from gradeflow.profiles import available_profiles, load_profile

        for name in available_profiles():
            policy = load_profile(name)
            print(f"{name}\t{policy.description}\t{policy.outline()}")
        return 0
    if args.command in SUITE_COMMANDS:
        return run_suite_command(args)
    if args.command in SERVICE_COMMANDS:
        return run_service_command(args)
    if args.command in SERVER_COMMANDS:
        return run_server_command(args)
    if args.command == "checkout":
        return run_checkout(args)
    if args.command in ENV_COMMANDS:
        return run_env_command(args)
    if args.command == "run":
        return run_run(args)
    if args.command in TASK_COMMANDS:
        return run_task_command(args)
    if args.command in PLAN_COMMANDS:
        return run_plan_command(args)
    if args.command == "runner":
        return run_runner_command(args)
    if args.command == "validate":
        return _validate(args)
    return _grade(args)


def _grade(args: argparse.Namespace) -> int:
    from gradeflow.api import grade_in, load_task, make_submission

    task = load_task(args.task)
    submission = make_submission(patch=args.patch, workspace=args.workspace, submission_id=args.submission_id)
    session = _open_session(args, task)
    choose_server(args.ephemeral)
    result = grade_in(session, submission)
    payload = result.model_dump_json(indent=2)
    if args.out:
        _write(Path(args.out), payload)
    if args.json:
        print(payload)
    else:
        print(_describe(result))
    return result.exit_code


def _open_session(args: argparse.Namespace, task: TaskSpec) -> Session:
    """:func:`~gradeflow.api.open_session`; a ``SpecError`` about the task names its file (and key)."""
    from gradeflow.api import open_session

    try:
        return open_session(task, args.sandbox, args.profile)
    except SpecError as exc:
        message = str(exc)
        if args.profile is None and message.startswith(f"{task.grading.profile}: no such profile"):
            message = f"grading.profile: {message}"
        raise SpecError(message if message.startswith(str(args.task)) else f"{args.task}: {message}") from None


def _write(path: Path, payload: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(payload + "\n")
    except OSError as exc:
        raise SpecError(f"--out: cannot write {path}: {exc.strerror or exc}") from None


def _describe(result: GradeResult) -> str:
    """The grade for a terminal: every line escaped (file names and messages may hold ESC, CR or LF)."""
    lines = [for_terminal(result.summary()), f"decision: {result.decision}"]
    if result.dimensions:
        shown = ", ".join(f"{d} {'n/a' if s is None else f'{s:.2f}'}" for d, s in result.dimensions.items())
        lines.append(f"dimensions ({result.profile}): {shown}")
    if result.reason_codes:
        lines.append(f"reasons: {', '.join(result.reason_codes)}")
    lines += [f"  {for_terminal(m)}" for m in result.messages]
    for component in result.components:
        lines += [f"  [{for_terminal(component.name)}] {for_terminal(m)}" for m in component.messages]
    return "\n".join(lines)


def _validate(args: argparse.Namespace) -> int:

    from gradeflow.api import load_task, make_submission
    from gradeflow.flows.session import flow_runs_without_heartbeat
    from gradeflow.flows.validate import validate_task

    task = load_task(args.task)
    session = _open_session(args, task)
    reference = make_submission(patch=args.reference).diff() if args.reference else None
    choose_server(args.ephemeral)
    if args.strength is not None and reference is None:
        raise SpecError("validate --strength needs --reference: mutants are made from the reference fix")
    with flow_runs_without_heartbeat():
        report = validate_task(task, reference, session.factory, session.profile, args.repeat, base=session.base)
    if args.strength is not None and reference is not None:
        report.problems += _strength_problems(task, reference, args)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        verdict = "VALID" if report.valid else f"INVALID ({len(report.problems)} problems)"
        print(f"{verdict}: {task.task_id}")
        for problem in report.problems:
            print(f"  - {problem}")
        for warning in report.warnings:
            print(f"  warning: {warning}")
        for flaky in report.flaky:
            seen = ", ".join(f"{k} {n}x" for k, n in sorted(flaky.counts.items()))
            state = "quarantined" if flaky.quarantined else "scored" if flaky.scored else "not scored"
            print(f"  flaky on the {flaky.side}: {flaky.test} ({seen}; {state})")
    return 0 if report.valid else 1


def _strength_problems(task: TaskSpec, reference: str, args: argparse.Namespace) -> list[str]:
    from gradeflow.cli.strength import measure_and_record, print_strength

    found = measure_and_record(task, reference, args.sandbox, args.profile, 20, None)
    if not args.json:
        print_strength(found)
    if found.kill_rate is not None and found.kill_rate >= args.strength:
        return []
    rate = "unknown" if found.kill_rate is None else f"{found.kill_rate:.0%}"
    return [f"task strength {rate} is below --strength {args.strength:g} ({found.survived} wrong patches pass)"]
