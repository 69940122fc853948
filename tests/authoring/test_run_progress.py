"""``task new``'s progress display: redrawn in place with the current run's time on a terminal, a plain line
per finished run elsewhere."""

from __future__ import annotations

import io
import time

from gradeflow.authoring.run_progress import RunProgress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_line_redrawn_with_the_current_runs_time() -> None:
    screen = _Terminal()
    with RunProgress(2, stream=screen) as display:
        display.started("base", 1)
        time.sleep(1.2)  # long enough for the ticker to redraw the running run at least once
        display.finished("base", 1, 1.2, True)
        display.started("reference", 1)
        display.finished("reference", 1, 0.4, True)
    shown = screen.getvalue()
    assert "\n" not in shown.rstrip("\n") and shown.endswith("\n")
    assert "runs 0/2: base run 1 running" in shown
    assert "runs 1/2: base run 1 took 1.2 s" in shown and "runs 2/2: reference run 1 took 0.4 s" in shown


def test_elsewhere_each_finished_run_is_a_line() -> None:
    log = io.StringIO()
    with RunProgress(2, stream=log) as display:
        display.started("base", 1)
        display.finished("base", 1, 2.0, True)
        display.started("reference", 1)
        display.finished("reference", 1, 3.5, False)
    assert log.getvalue().splitlines() == [
        "gradeflow: run 1/2 (base 1): 2.0 s",
        "gradeflow: run 2/2 (reference 1): 3.5 s (no usable report)",
    ]
