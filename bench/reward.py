"""What a ``RepoEnv`` reward costs beside the tests it runs, and episodes per minute as episodes run at once.

On a generated repository (bench/cli_overhead.py's: one module with a bug, one test file, one fail-to-pass
test) in the isolated sandbox, against gradeflow's local Prefect server under a temporary ``GRADEFLOW_HOME``,
printed side by side in one run:

- **reward latency** at 10 and 1,000 tests: ``step(Submit())`` of an episode whose agent wrote the fix, the
  varied run started after the main run and beside it (``GRADEFLOW_VARIED_RUN``), each paired with a raw run
  of the test command on the fixed tree just before it (no sandbox, plugins autoloaded, the Python a grade's
  commands get): medians, the difference and the ratio to raw, the issue's target (1.3 x raw + 0.3 s), and
  where the reward's time went (the medians of ``info["time"]``: handing the workspace back, each step, the
  engine's flow and task runs);
- **episodes per minute** (reset, write the fix, submit) at concurrency 1, 2 and the machine's cores, each
  episode stream in a thread of its own with its own ``RepoEnv`` (opened and warmed before the clock starts, as an
  RL loop opens its environments once), the levels measured in turns, and each figure's ratio to concurrency 1.

    python bench/reward.py [REPEAT] [EPISODES]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cli_overhead import _raw, _repository  # sets a temporary GRADEFLOW_HOME

from gradeflow.agents import RepoEnv, Submit, Write
from gradeflow.engine.local_server import stop_server
from gradeflow.logs import quiet_prefect

FIXED = "def double(x):\n    return x + x\n"
SIZES = (10, 1_000)


def _episode(env: RepoEnv) -> tuple[float, dict[str, float]]:
    env.reset()
    env.step(Write("mod.py", FIXED))
    started = time.perf_counter()
    _, reward, _, _, info = env.step(Submit())
    seconds = time.perf_counter() - started
    assert reward == 1.0, info["result"].summary()
    inside = info["result"].component("tests").details["time"]
    return seconds, {**info["time"], **{f"tests.{k}": v for k, v in inside.items() if not isinstance(v, bool)}}


def latency(root: Path, tests: int, repeat: int) -> None:
    task, _ = _repository(root, tests)
    raw: list[float] = []
    rewards: dict[str, list[float]] = {"after": [], "beside": []}
    spent: dict[str, dict[str, list[float]]] = {"after": {}, "beside": {}}
    with RepoEnv(task) as env:
        _episode(env)  # the baseline, the environment, the server: built once, not measured
        for _ in range(repeat):
            raw.append(_raw(root))
            for when in rewards:
                os.environ["GRADEFLOW_VARIED_RUN"] = when
                seconds, where = _episode(env)
                rewards[when].append(seconds)
                for name, value in where.items():
                    spent[when].setdefault(name, []).append(value)
    base = statistics.median(raw)
    print(
        f"{tests} tests: raw test command {base:.3f} s (median of {repeat}); target 1.3 x raw + 0.3 s = "
        f"{1.3 * base + 0.3:.3f} s"
    )
    for when, values in rewards.items():
        median = statistics.median(values)
        parts = "  ".join(f"{name} {statistics.median(v):.3f}" for name, v in spent[when].items())
        print(f"  reward, varied run {when:>6}: {median:.3f} s  ({median - base:+.3f} s, {median / base:.2f}x raw)")
        print(f"    where it went (medians, s): {parts}")


def throughput(root: Path, episodes: int, rounds: int = 2) -> None:
    task, _ = _repository(root, 10)
    cores = len(os.sched_getaffinity(0))
    levels = sorted({1, 2, cores})
    os.environ["GRADEFLOW_VARIED_RUN"] = "auto"
    # One RepoEnv per stream, opened and warmed before the clock starts: an environment is opened once and runs
    # many episodes (what an RL loop does), so the figure is the episodes' steady rate, not the opening's.
    envs = [RepoEnv(task) for _ in range(max(levels))]
    rates: dict[int, list[float]] = {level: [] for level in levels}
    try:
        for env in envs:
            _episode(env)
        for _ in range(rounds):  # the levels in turns: a load that comes and goes falls on each alike
            for concurrency in levels:
                started = time.perf_counter()
                with ThreadPoolExecutor(concurrency) as pool:
                    list(pool.map(lambda k: [_episode(envs[k]) for _ in range(episodes)], range(concurrency)))
                rates[concurrency].append(concurrency * episodes * 60 / (time.perf_counter() - started))
    finally:
        for env in envs:
            env.close()
    one = statistics.median(rates[1])
    print(
        f"episodes per minute (10 tests, {episodes} episodes per stream, varied run auto, {cores} cores, "
        f"medians of {rounds} rounds in turns):"
    )
    for concurrency, measured in rates.items():
        rate = statistics.median(measured)
        shown = ", ".join(f"{r:.1f}" for r in measured)
        print(f"  concurrency {concurrency}: {rate:.1f} per minute ({rate / one:.2f}x concurrency 1; rounds {shown})")


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    episodes = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    quiet_prefect()
    root = Path(tempfile.mkdtemp(prefix="gradeflow-bench-reward-"))
    try:
        for tests in SIZES:
            latency(root / str(tests), tests, repeat)
        throughput(root / "throughput", episodes)
    finally:
        stop_server()


if __name__ == "__main__":
    main()
