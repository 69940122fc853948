"""One ``docker exec`` with a deadline measured on the host, its output read in a background thread.

The engine keeps an exec's output stream open while any process holds its stdout, so the end of the
command is detected by polling the exec's state, not only by the end of the stream: a command that
leaves a background process behind is finished when its shell exits, as in the local sandbox.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import urllib3
from docker.utils.socket import frames_iter

from gradeflow.errors import SandboxUnavailable
from gradeflow.sandbox._docker_engine import ENGINE_ERRORS
from gradeflow.sandbox.base import OutputCapture

__all__ = ["ExecOutcome", "exit_code", "finish", "run_exec"]

_FIRST_POLL = 0.05
_MAX_POLL = 0.5
_EXIT_CODE_WAIT = 2.0
_STDERR = 2
_STREAM_ERRORS: tuple[type[Exception], ...] = (OSError, urllib3.exceptions.HTTPError, *ENGINE_ERRORS)


@dataclass
class ExecOutcome:
    """How one exec ended; ``exit_code`` is ``None`` when the deadline passed first."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    """Seconds from the start of the exec to the end of its process (or to the deadline)."""
    stdout_bytes: int | None = None
    """Bytes of stdout in all, once :func:`finish` has read the stream."""

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


class _Reader(threading.Thread):
    """Reads an exec's demultiplexed ``(stdout, stderr)`` stream, or its raw socket's frames (with stdin)."""

    def __init__(self, stream: Any, frames: Any = None) -> None:
        super().__init__(daemon=True, name="gradeflow-docker-exec")
        self.stream = stream
        self.frames = frames
        self.stdout = OutputCapture()
        self.stderr = OutputCapture()
        self.ended: float | None = None

    def run(self) -> None:
        try:
            if self.frames is not None:
                for kind, data in self.frames:
                    (self.stderr if kind == _STDERR else self.stdout).add(data)
                return
            for out, err in self.stream:
                if out:
                    self.stdout.add(out)
                if err:
                    self.stderr.add(err)
        except _STREAM_ERRORS:
            pass  # a broken stream only ends the capture; the exec's state decides the outcome
        finally:
            self.ended = time.perf_counter()


def run_exec(
    api: Any,
    container_id: str,
    argv: list[str],
    *,
    user: str,
    env: dict[str, str],
    timeout: float,
    stdin: bytes | None = None,
) -> tuple[ExecOutcome, _Reader]:
    """Start ``argv`` in the container and wait until its process exits or ``timeout`` passes.

    Returns the outcome and the reader thread, which may still be running when processes the command
    left behind hold its output open; the caller kills those, then :func:`finish` joins the reader.
    ``stdin`` is written to the process's standard input, which is then closed. Engine errors propagate
    (``docker.errors.DockerException``, ``requests`` errors).
    """
    exec_id = api.exec_create(
        container_id, argv, user=user, environment=env, stdin=stdin is not None, stdout=True, stderr=True
    )["Id"]
    started = time.perf_counter()
    if stdin is None:
        reader = _Reader(api.exec_start(exec_id, stream=True, demux=True))
    else:
        sock = api.exec_start(exec_id, socket=True)
        threading.Thread(target=_send, args=(sock, stdin), daemon=True, name="gradeflow-docker-input").start()
        reader = _Reader(sock, frames_iter(sock, tty=False))
    reader.start()
    exited = _wait(api, exec_id, reader, started + timeout)
    ended = reader.ended if reader.ended is not None else time.perf_counter()
    code = exit_code(api, exec_id) if exited else None
    return ExecOutcome(exit_code=code, stdout="", stderr="", duration=ended - started), reader


def finish(outcome: ExecOutcome, reader: _Reader, grace: float = 5.0) -> ExecOutcome:
    """The outcome with the captured output, once the stream has ended (or ``grace`` seconds passed)."""
    reader.join(grace)
    if reader.is_alive():
        _close(reader.stream)
    return ExecOutcome(
        exit_code=outcome.exit_code,
        stdout=reader.stdout.text(),
        stderr=reader.stderr.text(),
        duration=outcome.duration,
        stdout_bytes=reader.stdout.total,
    )


def _wait(api: Any, exec_id: str, reader: _Reader, deadline: float) -> bool:
    poll = _FIRST_POLL
    while True:
        reader.join(max(0.0, min(poll, deadline - time.perf_counter())))
        if not reader.is_alive():
            return True
        if _ended(api.exec_inspect(exec_id)):
            return True
        if time.perf_counter() >= deadline:
            return False
        poll = min(poll * 2, _MAX_POLL)


def _ended(state: dict[str, Any]) -> bool:
    """Whether an exec's process has ended. Not running reads the same before the engine has started it (a busy
    machine's engine may take a while), so an exec counts as ended only once it has an exit code or has had a
    process (``Pid``): taken for ended at once, a late start left :func:`exit_code` two seconds for the whole
    command."""
    return not state["Running"] and (state.get("ExitCode") is not None or bool(state.get("Pid")))


def exit_code(api: Any, exec_id: str, wait: float = _EXIT_CODE_WAIT) -> int:
    """The exec's exit code, waited for up to ``wait`` seconds: the stream can end a moment before the
    engine records it; ``SandboxUnavailable`` when it never does."""
    give_up = time.perf_counter() + wait
    while True:
        state = api.exec_inspect(exec_id)
        if not state["Running"] and state["ExitCode"] is not None:
            return int(state["ExitCode"])
        if time.perf_counter() >= give_up:
            raise SandboxUnavailable(f"docker exec {exec_id[:12]}: the engine recorded no exit code")
        time.sleep(0.01)


def _send(sock: Any, payload: bytes) -> None:
    raw = getattr(sock, "_sock", sock)
    with contextlib.suppress(OSError):
        raw.sendall(payload)
        raw.shutdown(socket.SHUT_WR)


def _close(stream: Any) -> None:
    # Best effort: the reader thread is a daemon either way.
    with contextlib.suppress(OSError, AttributeError):
        stream.close()
