"""``task new``'s progress: the repeated runs of both sides as they happen, on stderr.

On a terminal one line is redrawn in place: runs done of the total and the current run's time, ticking.
Elsewhere (a log, a pipe) each finished run is one plain line. It listens through
:data:`gradeflow.tasks.flaky.run_listener`, so the flow's tasks take no display as a parameter.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

__all__ = ["RunProgress"]

_TICK = 0.5
"""Seconds between redraws of the current run's time on a terminal."""


class RunProgress:
    """Counts ``total`` runs; a :class:`~gradeflow.tasks.flaky.RunListener`. Use it as a context manager."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self._stream = stream or sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._current: tuple[str, int, float] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker = threading.Thread(target=self._tick, name="gradeflow-run-progress", daemon=True)

    def started(self, side: str, number: int) -> None:
        with self._lock:
            self._current = (side, number, time.monotonic())
        if self._tty and not self._ticker.is_alive():
            self._ticker.start()

    def finished(self, side: str, number: int, seconds: float, ok: bool) -> None:
        with self._lock:
            self.done += 1
            self._current = None
        if self._tty:
            self._redraw(f"runs {self.done}/{self.total}: {side} run {number} took {seconds:.1f} s")
        else:
            note = "" if ok else " (no usable report)"
            self._line(f"gradeflow: run {self.done}/{self.total} ({side} {number}): {seconds:.1f} s{note}")

    def _tick(self) -> None:
        while not self._stop.wait(_TICK):
            with self._lock:
                current = self._current
            if current is not None:
                side, number, since = current
                elapsed = time.monotonic() - since
                self._redraw(f"runs {self.done}/{self.total}: {side} run {number} running, {elapsed:.0f} s")

    def _redraw(self, text: str) -> None:
        self._stream.write(f"\r\x1b[2Kgradeflow: {text}")
        self._stream.flush()

    def _line(self, text: str) -> None:
        self._stream.write(text + "\n")
        self._stream.flush()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join()
        if self._tty and self.done:
            self._stream.write("\n")
            self._stream.flush()
