"""When a ``docker exec`` counts as ended: never before the engine has started its process."""

from __future__ import annotations

import threading
from typing import Any

from gradeflow.sandbox import _docker_exec


class _Engine:
    """Answers ``exec_inspect`` with the given states in turn, the last one from then on."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states
        self.asked = 0

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        del exec_id
        state = self.states[min(self.asked, len(self.states) - 1)]
        self.asked += 1
        return state


class _OpenStream(threading.Thread):
    """A reader whose stream stays open (a process the command left behind holds it)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.done = threading.Event()

    def run(self) -> None:
        self.done.wait(30)


NOT_STARTED = {"Running": False, "ExitCode": None, "Pid": 0}
RUNNING = {"Running": True, "ExitCode": None, "Pid": 42}
EXITED = {"Running": False, "ExitCode": 3, "Pid": 42}
EXITED_UNRECORDED = {"Running": False, "ExitCode": None, "Pid": 42}


def _wait(states: list[dict[str, Any]], seconds: float = 20.0) -> tuple[bool, int]:
    engine, reader = _Engine(states), _OpenStream()
    reader.start()
    try:
        ended = _docker_exec._wait(engine, "exec", reader, _docker_exec.time.perf_counter() + seconds)  # type: ignore[arg-type]
    finally:
        reader.done.set()
    return ended, engine.asked


def test_an_exec_the_engine_has_not_started_yet_is_waited_for() -> None:
    # Two polls before the engine starts it, two while it runs: ended at the fifth, not the first.
    assert _wait([NOT_STARTED, NOT_STARTED, RUNNING, RUNNING, EXITED]) == (True, 5)


def test_an_exec_that_ran_and_stopped_is_ended_even_before_its_exit_code_is_recorded() -> None:
    assert _wait([RUNNING, EXITED_UNRECORDED]) == (True, 2)


def test_an_exec_never_started_runs_into_its_deadline() -> None:
    ended, asked = _wait([NOT_STARTED], seconds=0.3)
    assert not ended and asked >= 2
