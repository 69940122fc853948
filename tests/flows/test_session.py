"""Opening a grading session: the settings every grade's flow run is entered under."""

from __future__ import annotations

from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    get_current_settings,
    temporary_settings,
)

from gradeflow.flows.session import flow_runs_without_heartbeat


def test_flow_runs_have_no_heartbeat_and_the_settings_are_built_once() -> None:
    # Whatever the session's settings say, a heartbeat is configured here, and switched off inside.
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 30}):
        with flow_runs_without_heartbeat():
            first = get_current_settings()
            assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None
        with flow_runs_without_heartbeat():
            assert get_current_settings() is first  # not rebuilt for every grade
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() == 30


def test_the_settings_follow_the_current_ones() -> None:
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}), flow_runs_without_heartbeat():
        assert PREFECT_API_URL.value() == "http://127.0.0.1:9/api"
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None
    with flow_runs_without_heartbeat():
        assert PREFECT_API_URL.value() != "http://127.0.0.1:9/api"
