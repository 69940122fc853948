"""A progress bar on stderr for long evaluations: redrawn in place on a terminal, one line each otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts finished submissions out of ``total``; ``already`` were recorded before this run."""

    def __init__(self, total: int, already: int = 0, *, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total = total
        self.done = already
        self.failed = 0
        self.inconclusive = 0
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._started = time.monotonic()
        if enabled and already:
            self._write(f"{already} of {total} already recorded, skipped")

    def advance(self, label: str, outcome: str) -> None:
        """One more submission finished; ``outcome`` is ``graded``, ``inconclusive`` or ``failed``."""
        self.done += 1
        self.failed += outcome == "failed"
        self.inconclusive += outcome == "inconclusive"
        if not self._enabled:
            return
        if self._tty:
            self._stream.write("\r" + self._bar() + f" {label[:40]:<40}")
            if self.done >= self.total:
                self._stream.write("\n")
            self._stream.flush()
        else:
            self._write(f"{self._bar()} {label}: {outcome}")

    def _bar(self, width: int = 24) -> str:
        filled = int(width * self.done / self.total) if self.total else width
        elapsed = time.monotonic() - self._started
        extra = f" inconclusive {self.inconclusive}" if self.inconclusive else ""
        extra += f" failed {self.failed}" if self.failed else ""
        return f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {elapsed:5.0f}s{extra}"

    def _write(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()
