"""The ``serve``, ``deploy`` and ``webhook`` subcommands (registered by :mod:`gradeflow.cli`).

``serve`` and ``deploy`` wait up to a minute (``--server-wait``) for a Prefect server that is starting, then
exit 3 with one line. ``serve`` and ``webhook`` run until interrupted (exit 130 on Ctrl-C). On SIGTERM ``serve``
pauses its schedules and exits 0, or, when its Prefect server does not answer, stops its runs at once and exits 3 with
one line. ``deploy`` exits 0 once the deployments are registered. All exit 2 on bad input (a bad config
file, no webhook secret, no task spec).
"""

from __future__ import annotations

import argparse

__all__ = ["SERVICE_COMMANDS", "add_service_commands", "run_service_command"]

SERVICE_COMMANDS = ("serve", "deploy", "webhook")


def add_service_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve``, ``deploy`` and ``webhook`` on the ``gradeflow`` subcommand parser."""
    serve = sub.add_parser("serve", help="serve the grade-submission and evaluate-suite deployments in-process")
    serve.add_argument("--limit", type=int, help="flow runs executed at once by this process")
    deploy = sub.add_parser("deploy", help="register the deployments on a process work pool for workers")
    deploy.add_argument("--pool", required=True, help="work pool name (a process pool is created when missing)")
    webhook = sub.add_parser("webhook", help="receive signed webhooks and start grades through Prefect")
    webhook.add_argument("--tasks", required=True, help="folder holding the task specs, found by task_id")
    webhook.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    webhook.add_argument("--port", type=int, default=8787)
    for parser in (serve, deploy):
        parser.add_argument(
            "--server-wait",
            type=_seconds,
            default=60.0,
            metavar="SECONDS",
            help="how long to wait for a Prefect server that is starting before exit 3 (default 60)",
        )
    for parser in (serve, deploy, webhook):
        parser.add_argument("--config", help="service config YAML (default $GRADEFLOW_CONFIG or ./gradeflow.yaml)")


def _seconds(text: str) -> float:
    """A non-negative number of seconds (argparse's usage error, exit 2, otherwise)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def run_service_command(args: argparse.Namespace) -> int:
    """Run ``serve``, ``deploy`` or ``webhook``; a ``GradeflowError`` propagates to the CLI's handler."""
    from gradeflow.service.config import load_service_config

    config = load_service_config(args.config)
    if args.command == "serve":
        from gradeflow.service.deployments import serve_deployments

        serve_deployments(config, limit=args.limit, server_wait=args.server_wait)
        return 0
    if args.command == "deploy":
        from gradeflow.agents.service import TRIALS_DEPLOYMENT
        from gradeflow.service.deployments import EVALUATE_DEPLOYMENT, GRADE_DEPLOYMENT, deploy_to_pool
        from gradeflow.service.review import REVIEW_DEPLOYMENT

        names = (GRADE_DEPLOYMENT, EVALUATE_DEPLOYMENT, REVIEW_DEPLOYMENT, TRIALS_DEPLOYMENT)
        ids = deploy_to_pool(config, args.pool, server_wait=args.server_wait)
        for name, deployment_id in zip(names, ids, strict=True):
            print(f"{name}\t{deployment_id}\tpool {args.pool}")
        print(f"start workers with: prefect worker start --pool {args.pool}")
        return 0
    from gradeflow.service.webhook import create_app, run_webhook

    run_webhook(create_app(args.tasks, config), host=args.host, port=args.port)
    return 0
