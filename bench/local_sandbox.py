"""What the local sandbox adds to one command: ``sh -c CMD`` run directly beside ``LocalSandbox.run``.

Printed side by side in one run (medians of REPEAT): a short command (``true``) and one that takes
0.17 s, each raw (``subprocess.run``) and through the sandbox (scrubbed environment, its own session,
everything it started killed, output drained through pipes).

    python bench/local_sandbox.py [REPEAT]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradeflow.sandbox.local import LocalSandbox


def _median(run: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(repeat: int) -> None:
    print(f"{'command':<14}{'raw s':>10}{'sandbox s':>12}{'added s':>10}")
    with tempfile.TemporaryDirectory() as folder, LocalSandbox(Path(folder)) as box:
        for command in ("true", "sleep 0.17"):
            raw = _median(lambda c=command: subprocess.run(["sh", "-c", c], check=True), repeat)
            boxed = _median(lambda c=command: box.run(c, env={}, timeout=30), repeat)
            print(f"{command:<14}{raw:>10.4f}{boxed:>12.4f}{boxed - raw:>+10.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
