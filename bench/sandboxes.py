"""What each sandbox adds to one command, side by side in one run: raw, local, isolated and docker.

For a short command (``true``) and one that takes 0.17 s, the median of REPEAT runs of each, taken in
turns so that the machine's load falls on all of them alike: raw (``subprocess.run``), then through
each sandbox's ``run`` (scrubbed environment, output drained through pipes, everything the command
started killed; isolated: bubblewrap namespaces and the allow-list view; docker: ``docker exec`` in a
running container). Printed: seconds added over raw, and isolated's difference from local (target:
within 50 ms per command). Docker is left out when no engine answers.

    python bench/sandboxes.py [REPEAT]
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gradeflow.errors import SandboxUnavailable
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox.base import Sandbox
from gradeflow.sandbox.docker import DockerSandboxFactory
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory

COMMANDS = ("true", "sleep 0.17")


def _time(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _boxes(stack: contextlib.ExitStack, folder: Path) -> dict[str, Sandbox]:
    boxes: dict[str, Sandbox] = {
        "local": stack.enter_context(LocalSandboxFactory().open(folder / "local")),
        "isolated": stack.enter_context(IsolatedSandboxFactory().open(folder / "isolated")),
    }
    try:
        boxes["docker"] = stack.enter_context(
            DockerSandboxFactory(EnvironmentSpec(sandbox="docker")).open(folder / "docker")
        )
    except SandboxUnavailable as exc:
        print(f"(docker left out: {exc})")
    return boxes


def main(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        folder = Path(scratch)
        for name in ("local", "isolated", "docker"):
            (folder / name).mkdir()
        boxes = _boxes(stack, folder)
        header = "".join(f"{'+' + name + ' s':>13}" for name in boxes)
        print(f"{'command':<12}{'raw s':>9}{header}{'isolated-local':>16}")
        for command in COMMANDS:
            times: dict[str, list[float]] = {name: [] for name in ("raw", *boxes)}
            for _ in range(repeat):
                times["raw"].append(_time(lambda c=command: subprocess.run(["sh", "-c", c], check=True)))
                for name, box in boxes.items():
                    times[name].append(_time(lambda box=box, c=command: box.run(c, env={}, timeout=60)))
            median = {name: statistics.median(values) for name, values in times.items()}
            added = "".join(f"{median[name] - median['raw']:>+13.4f}" for name in boxes)
            print(f"{command:<12}{median['raw']:>9.4f}{added}{median['isolated'] - median['local']:>+16.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
