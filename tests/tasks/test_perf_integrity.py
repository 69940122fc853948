"""Perf runs that cannot be faked: hostile patches graded for real on a real benchmark (local sandbox).

The benchmark (``bench.py``) times ``total(N)``, which the base computes twice. An honest patch drops
the second pass (a 2x speed-up of the timed region); every fake below makes nothing faster and must
score 0 on perf. ``tests/sandbox/test_docker_perf.py`` grades the same fakes in docker.
"""

from __future__ import annotations

import difflib
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gradeflow import grade
from gradeflow.graders import perf_score
from gradeflow.models import GradeComponent, PerfSpec, TaskSpec
from gradeflow.sandbox import LocalSandboxFactory
from gradeflow.tasks.perf import benchmark_files, output_digest

# Speed-up figures: run after the parallel suite, on a machine no other test worker shares (make test).
pytestmark = pytest.mark.timing

N = 1_000_000
EXPECTED = sum(i * i % 7 for i in range(N))

WORK = '''"""The work the benchmark times."""


def _pass(n):
    return sum(i * i % 7 for i in range(n))


def total(n):
    """The sum of i*i mod 7 for i < n, computed twice to be sure."""
    first = _pass(n)
    if _pass(n) != first:
        raise ArithmeticError("unstable")
    return first
'''

BENCH = f'''"""Benchmark: total(N); with --report the timed region's seconds are the last stdout line."""

import json
import sys
import time

sys.path.insert(0, "src")

from work import total

N = {N}

if __name__ == "__main__":
    started = time.perf_counter()
    result = total(N)
    elapsed = time.perf_counter() - started
    print(f"total {{result}}")
    with open("result.txt", "w") as handle:
        handle.write(str(result))
    if "--report" in sys.argv:
        print(json.dumps({{"seconds": elapsed}}))
'''

SEEDED_BENCH = BENCH.replace('print(f"total {result}")', 'print(f"total {result} for seed {sys.argv[-1]}")')
"""The benchmark printing the seed it was given last on its command line (``{seed}``)."""

BASE_FILES = {
    "bench.py": BENCH,
    "bench_seeded.py": SEEDED_BENCH,
    "check.py": f'import sys\n\nsys.exit(0 if open("result.txt").read() == "{EXPECTED}" else 1)\n',
    "setup_hook.py": "",
    "src/work.py": WORK,
    "pytest.ini": "[pytest]\npythonpath = src\n",
    "tests/test_work.py": "from work import total\n\n\ndef test_small():\n    assert total(10) == 19\n",
}

HONEST = {
    "src/work.py": WORK.replace(
        "    first = _pass(n)\n    if _pass(n) != first:\n", "    first = _pass(n)\n    if False:\n"
    )
}
"""Drops the second pass: the timed region takes half as long."""


def _slow_miss(cache_code: str) -> str:
    """A ``total`` that reads a cache kept by ``cache_code`` and, on a miss, does the base's work and more."""
    return WORK.replace(
        "    first = _pass(n)\n",
        f"{cache_code}    first = _pass(n)\n    _pass(n)\n    store(n, first)\n",
    )


TREE_CACHE = {
    "src/work.py": _slow_miss(
        "    import os\n"
        "    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '.total-cache')\n"
        "    if os.path.exists(path):\n"
        "        return int(open(path).read())\n"
        "    def store(n, value):\n"
        "        open(path, 'w').write(str(value))\n"
    )
}
"""The issue's first fake: the first run caches the result in the tree, later runs read it."""

ATEXIT = {
    "src/work.py": "import atexit\nimport json\n\natexit.register(lambda: print(json.dumps({'seconds': 0.0001})))\n"
    + WORK
}
"""The issue's second fake: an exit handler prints a forged timing line after the benchmark's own."""

EDIT_BENCH = {"bench.py": BENCH.replace("result = total(N)", f"result = {EXPECTED}")}
"""The issue's third fake: the benchmark no longer calls the code it times."""

SLOW_CLOCK = {
    "src/work.py": "import time\n\n_real = time.perf_counter\ntime.perf_counter = lambda: _real() / 10\n" + WORK
}
"""A fake of our own: the clock the benchmark reads runs ten times slower, so every run reports 1/10."""

HOME_CACHE = {
    "src/work.py": _slow_miss(
        "    import os\n"
        "    path = os.path.join(os.path.expanduser('~'), '.total-cache')\n"
        "    if os.path.exists(path):\n"
        "        return int(open(path).read())\n"
        "    def store(n, value):\n"
        "        open(path, 'w').write(str(value))\n"
    )
}
"""A fake of our own: the cache lives in ``HOME``, outside the tree."""

WRONG_ANSWER = {
    "src/work.py": WORK.replace(
        "    first = _pass(n)\n    if _pass(n) != first:\n", "    first = _pass(n // 4) * 4\n    if False:\n"
    )
}
"""A fake of our own: an eighth of the work, extrapolated from a sample; the total is off by 10."""


def unified_diff(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(True), new.splitlines(True), f"a/{path}" if old is not None else "/dev/null", f"b/{path}"
    )
    return "".join(lines)


def patch_of(files: dict[str, str]) -> str:
    return "".join(unified_diff(path, BASE_FILES.get(path), text) for path, text in files.items())


def perf_task(repo: Path, sandbox: str = "local", **perf: Any) -> TaskSpec:
    """A perf task over :data:`BASE_FILES` written to ``repo``: reported timing, output compared."""
    for name, text in BASE_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    spec: dict[str, Any] = {
        "task_id": "perf-integrity",
        "type": "perf",
        "repo": str(repo),
        "setup": "python setup_hook.py",
        "tests": {
            "command": "python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "pass_to_pass": ["tests/test_work.py::test_small"],
            "timeout": 60,
        },
        "perf": {
            "command": "python bench.py --report",
            "timing": "reported",
            "runs": 4,
            "compare_output": True,
            "timeout": 60,
            **perf,
        },
        "grading": {"weights": {"perf": 1.0}},
        "environment": {"sandbox": sandbox},
    }
    return TaskSpec.model_validate(spec)


FAKES: dict[str, tuple[dict[str, str], str]] = {
    "tree-cache": (TREE_CACHE, "perf-below-noise-floor"),
    "atexit-forged-time": (ATEXIT, "perf-output-mismatch"),
    "edited-benchmark": (EDIT_BENCH, "perf-benchmark-modified"),
    "slowed-clock": (SLOW_CLOCK, "perf-timing-implausible"),
    "home-cache": (HOME_CACHE, "perf-below-noise-floor"),
    "wrong-answer": (WRONG_ANSWER, "perf-output-mismatch"),
}
"""Fake → the reason its perf component must carry. All of them work in the local sandbox too."""


def assert_faked_out(perf: GradeComponent, reason: str) -> None:
    assert (perf.score, perf.passed) == (0.0, False), perf
    assert reason in perf.reason_codes, perf


def assert_honest_2x(perf: GradeComponent) -> None:
    speedup = perf.details["speedup"]
    assert isinstance(speedup, float)
    # Half the work measures 2x on a quiet machine; a shared 2-core machine's load has moved a docker grade's figure to
    # 2.63x (three grades in a row, in CI's serial part), so the band only catches a distorted measurement (a fixed
    # cost counted in, ~1x; a fake, far beyond), not the load. The score must follow the formula at any figure.
    assert 1.5 <= speedup <= 3.0, perf
    assert perf.score == pytest.approx(perf_score(speedup, 1.15, 4.0), abs=1e-3)
    assert perf.reason_codes == ["perf-below-min-speedup"], perf


def steady_honest_grade(grade_once: Callable[[], GradeComponent], attempts: int = 3) -> GradeComponent:
    """The honest patch's perf component, graded again while it measures off 2x by more than 6%.

    The speed-up is the minimum over interleaved runs, which this shared 2-core machine's load can still
    move by 10% or more; a grader that distorted honest figures would be off on every attempt.
    """
    for _ in range(attempts):
        perf = grade_once()
        speedup = perf.details.get("speedup")
        if isinstance(speedup, float) and abs(speedup - 2.0) <= 0.12:
            break
    return perf


@pytest.fixture
def grade_perf(tmp_path: Path, prefect: None) -> Callable[..., GradeComponent]:
    del prefect

    def run(files: dict[str, str], **perf: Any) -> GradeComponent:
        result = grade(perf_task(tmp_path / "repo", **perf), patch=patch_of(files), sandbox="local")
        assert result.status == "graded", result.messages
        return result.component("perf")

    return run


@pytest.mark.slow
def test_an_honest_2x_patch_scores_the_formula(grade_perf: Callable[..., GradeComponent]) -> None:
    perf = steady_honest_grade(lambda: grade_perf(HONEST, runs=10))
    assert_honest_2x(perf)
    # The wall speed-up is shown beside the reported one (start-up time makes it smaller).
    wall = perf.details["wall_speedup"]
    assert isinstance(wall, float) and wall <= perf.details["speedup"] * 1.1


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAKES))
def test_a_perf_fake_scores_zero(name: str, grade_perf: Callable[..., GradeComponent]) -> None:
    files, reason = FAKES[name]
    assert_faked_out(grade_perf(files), reason)


@pytest.mark.slow
def test_every_run_starts_from_the_tree_after_setup(grade_perf: Callable[..., GradeComponent]) -> None:
    # Without a fresh tree per run, the cache written by run 1 makes runs 2-4 near-instant.
    perf = grade_perf(TREE_CACHE)
    candidate, baseline = perf.details["candidate"], perf.details["baseline"]
    assert isinstance(candidate, list) and isinstance(baseline, list) and len(candidate) == 4
    assert min(candidate) > 0.5 * min(baseline)


@pytest.mark.slow
def test_the_forged_and_the_wall_figures_are_both_shown(grade_perf: Callable[..., GradeComponent]) -> None:
    perf = grade_perf(ATEXIT)
    # The benchmark's own timing line is no longer the last, so the output check ends the runs too.
    assert perf.details["candidate"] == [0.0001]
    # The output check catches it whatever the machine's load; the timing rule is table-tested in
    # tests/graders/test_perf.py (one early-ended run here gives it too few samples to be certain).
    assert perf.reason_codes[0] == "perf-output-mismatch" and perf.score == 0.0
    assert isinstance(perf.details["wall_speedup"], float) and perf.details["wall_speedup"] < 2
    assert perf.details["speedup"] > 100  # 0.0001 s against the base's ~0.1 s


@pytest.mark.slow
def test_an_edited_benchmark_is_reset_and_reported(grade_perf: Callable[..., GradeComponent]) -> None:
    perf = steady_honest_grade(lambda: grade_perf({**HONEST, **EDIT_BENCH}))
    assert perf.details["modified"] == ["bench.py"]
    # The base's bench.py ran: the honest half of the patch is measured (about 2x; an idle run here measured
    # 1.42x once), not the edit, whose timed region does no work at all (far beyond 3x).
    assert isinstance(perf.details["speedup"], float) and 1.15 < perf.details["speedup"] <= 3.0


@pytest.mark.slow
def test_a_setup_hook_the_patch_rewrites_never_runs(grade_perf: Callable[..., GradeComponent]) -> None:
    # Setup runs once, on the pristine base; both sides get a copy of what it built. The candidate's
    # hook would have replaced the benchmark by an instant print of the expected answer.
    hook = f"from pathlib import Path\n\nPath('bench.py').write_text('print(\"total {EXPECTED}\")\\n')\n"
    perf = grade_perf({"setup_hook.py": hook}, timing="wall", compare_output=False)
    assert "modified" not in perf.details and "perf-benchmark-modified" not in perf.reason_codes
    assert isinstance(perf.details["speedup"], float) and perf.details["speedup"] < 1.5


@pytest.mark.slow
def test_a_wrong_answer_fails_the_check(grade_perf: Callable[..., GradeComponent]) -> None:
    assert sum(i * i % 7 for i in range(N // 4)) * 4 != EXPECTED
    perf = grade_perf(
        WRONG_ANSWER, command="python bench.py", timing="wall", compare_output=False, check="python check.py"
    )
    assert_faked_out(perf, "perf-output-mismatch")
    assert perf.messages[1:] == ["candidate run 1: perf.check exited 1"]


@pytest.mark.slow
def test_an_edited_check_script_is_sealed_too(grade_perf: Callable[..., GradeComponent]) -> None:
    files = {**WRONG_ANSWER, "check.py": "import sys\n\nsys.exit(0)\n"}
    perf = grade_perf(files, timing="wall", compare_output=False, check="python check.py")
    assert set(perf.reason_codes) >= {"perf-benchmark-modified", "perf-output-mismatch"}


def test_the_output_digest_leaves_out_the_timing_line_only_when_reported() -> None:
    reported = PerfSpec(command="python bench.py", timing="reported")
    wall = PerfSpec(command="python bench.py")
    one, two = 'total 3\n{"seconds": 0.5}\n', 'total 3\n{"seconds": 0.25}\n'
    assert output_digest(reported, one) == output_digest(reported, two) == output_digest(wall, "total 3\n")
    assert output_digest(wall, one) != output_digest(wall, two)
    assert output_digest(reported, 'total 4\n{"seconds": 0.5}\n') != output_digest(reported, one)


@pytest.mark.parametrize(
    ("perf", "expected"),
    [
        ({"command": "python bench.py --report"}, ["bench.py"]),
        ({"command": "bash scripts/run.sh", "check": "python check.py"}, ["scripts/run.sh", "check.py"]),
        ({"command": "python -m pkg.bench -n 3"}, ["pkg/bench.py", "pkg/bench/__main__.py"]),
        ({"command": "make bench", "sealed": ["data/**"]}, ["data/**", "Makefile", "makefile", "GNUmakefile"]),
    ],
)
def test_the_sealed_benchmark_files(perf: dict[str, Any], expected: list[str]) -> None:
    assert benchmark_files(PerfSpec.model_validate(perf)) == expected


def test_a_local_import_is_a_fresh_start_from_the_export(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "kept.txt").write_text("base\n")
    with LocalSandboxFactory().open(tmp_path / "ws") as box:
        box.run("echo setup > made.txt && echo home > $HOME/h", env={}, timeout=10)
        box.export_workspace(tmp_path / "tree.tar")
        box.run(
            "echo run > left.txt && echo run >> $HOME/h && echo t > $TMPDIR/t && echo x > kept.txt", env={}, timeout=10
        )
        box.import_workspace(tmp_path / "tree.tar")
        seen = box.run('ls; cat kept.txt $HOME/h; ls "$TMPDIR" | wc -l', env={}, timeout=10).stdout.split()
    assert seen == ["kept.txt", "made.txt", "base", "home", "0"]
    with tarfile.open(tmp_path / "tree.tar") as tar:
        assert sorted(tar.getnames()) == [".", "./kept.txt", "./made.txt"]


@pytest.mark.slow
def test_a_seeded_benchmark_is_compared_with_the_base_for_the_same_seed(
    grade_perf: Callable[..., GradeComponent],
) -> None:
    # Each pair of runs prints a new seed: equal outputs mean base and candidate got the same one.
    assert "for seed {sys.argv[-1]}" in SEEDED_BENCH
    perf = grade_perf(HONEST, command="python bench_seeded.py --report {seed}", runs=3)
    assert "perf-output-mismatch" not in perf.reason_codes, perf
    assert len(perf.details["candidate"]) == 3
