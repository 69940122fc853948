"""Trials in the docker sandbox: the agent edits the container's copy, which comes back to be graded."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gradeflow.agents import TrialRun
from sandbox.conftest import docker_client  # noqa: F401  (the fixture: a live engine, skipped without one)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_client")]

SED_AGENT = "sed -i 's/return None/raise ZeroDivisionError(\"division by zero is undefined\")/' src/calc.py"


def test_oracle_and_a_sed_agent_pass_in_docker(trials: Callable[..., TrialRun]) -> None:
    for agent in ("oracle", SED_AGENT):
        done = trials(agent, sandbox="docker", model_id=f"docker-{agent[:6]}")
        (record,), (trial,) = done.records, done.trials
        assert trial.exit_code == 0 and record.passed and record.status == "graded", record.reason_codes
