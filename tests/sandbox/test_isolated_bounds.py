"""CPU and disk bounds of the isolated sandbox on this machine's real bubblewrap, cgroups and loop devices.

CI is a busy 2-core machine: CPU is checked against generous bounds (a command of four busy processes under
half a core against the two cores it would take unbounded), never against tight ratios.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gradeflow.errors import SandboxUnavailable
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox import _bwrap, _cgroups, _disk
from gradeflow.sandbox.isolated import IsolatedSandbox, IsolatedSandboxFactory
from gradeflow.sandbox.shape import Shape

pytestmark = [pytest.mark.slow, pytest.mark.timing]

_BUSY = (
    "python3 -c 'import os, time\nt = time.time()\nwhile time.time() - t < 2.5: pass\n"
    'os.write(1, ("%f\\n" % time.process_time()).encode())\''
)
"""One process busy for 2.5 s of wall time; it prints the CPU seconds it got, in one write (four processes
share the pipe: print's buffered writes could interleave)."""


def _open(tmp_path: Path, shape: Shape | None = None, **environment: object) -> IsolatedSandbox:
    if _bwrap.bwrap_problem() is not None:
        pytest.fail(f"the isolated sandbox must run here: {_bwrap.bwrap_problem()}")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "given.txt").write_text("from the grader\n")
    factory = IsolatedSandboxFactory(EnvironmentSpec(memory="512m", pids=64, **environment))
    return (factory if shape is None else factory.shaped(shape)).open(workspace)


def _cpu_cgroups() -> bool:
    groups = _cgroups.make_groups(64 * 1024 * 1024, 16, 1.0)
    if groups is None:
        return False
    groups.remove()
    return groups.cpu


def _mounts() -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


@pytest.fixture
def own_disk() -> None:
    if not _disk.disk_available():
        pytest.skip("sandboxes get no disk of their own here (not root, no loop device or no overlayfs)")


@pytest.mark.skipif(not _cpu_cgroups(), reason="no cpu cgroup can be made here")
def test_every_process_of_a_command_shares_its_cpus(tmp_path: Path) -> None:
    with _open(tmp_path, cpus=0.5) as box:
        result = box.run(f"{_BUSY} & {_BUSY} & {_BUSY} & {_BUSY} & wait", env={}, timeout=60)
    assert result.exit_code == 0, result.stderr
    # Unbounded, four busy processes take both cores: about 2 × the wall time.
    bound = 0.5 * result.duration * 1.5 + 0.3
    assert result.cpu_seconds is not None and 0.1 < result.cpu_seconds <= bound
    assert sum(float(line) for line in result.stdout.split()) <= bound  # as the processes saw it
    assert result.cpu_throttled


def test_a_command_within_its_bounds_is_unaffected(tmp_path: Path) -> None:
    with _open(tmp_path, cpus=1.0, disk="64m") as box:
        command = "sleep 0.2; head -c 8m /dev/zero > $TMPDIR/t; head -c 8m /dev/zero > made.bin; echo ok"
        result = box.run(command, env={}, timeout=60)
        assert (result.exit_code, result.stdout) == (0, "ok\n"), result.stderr
        assert not result.cpu_throttled and not result.disk_full
        assert box.run("test -f made.bin && ! test -f $TMPDIR/t", env={}, timeout=30).ok  # /tmp is emptied
    assert (tmp_path / "ws" / "made.bin").stat().st_size == 8 * 1024 * 1024  # the workspace keeps its writes


def test_without_cgroups_cpu_is_a_budget_per_process_at_a_lower_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cgroups, "_found", [None])  # as where gradeflow is not root
    with _open(tmp_path, cpus=0.025) as box:  # a timeout of 40 s: a budget of 1 CPU second per process
        result = box.run("nice; python3 -c 'while True: pass'", env={}, timeout=40)
    assert result.stdout.split() == [str(_bwrap.NICE)]
    assert not result.timed_out and result.exit_code == _bwrap.SIGXCPU_EXIT and result.cpu_throttled


@pytest.mark.usefixtures("own_disk")
def test_many_small_files_past_the_disk_stop_the_command(tmp_path: Path) -> None:
    # 16 MiB hold about 2,300 files (one inode per 8 KiB): the command wants 10,000 empty ones.
    with _open(tmp_path, disk="16m") as box:
        spray = (
            "python3 -c \"import time\nfor i in range(10000):\n    open(f'f{i}', 'w').close()\n"
            "    i % 500 or time.sleep(0.01)\nprint('all-written')\""
        )
        result = box.run(spray, env={}, timeout=60)
        assert result.disk_full and "all-written" not in result.stdout
        assert 1000 < len(list((tmp_path / "ws").glob("f*"))) < 2500
        cleared = box.run("rm -f f*; touch again", env={}, timeout=30)
        assert cleared.ok and not cleared.disk_full  # the room comes back
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["again", "given.txt"]


@pytest.mark.usefixtures("own_disk")
@pytest.mark.parametrize("shaped", [False, True], ids=["main", "shaped"])
def test_a_few_big_files_past_the_disk_stop_the_command(tmp_path: Path, shaped: bool) -> None:
    # Shaped, the disk shows the host's size (sparse past the room taken for it): no ENOSPC at the room, the
    # guard alone stops the command past the limit (a few milliseconds late: how far is the machine's load).
    with _open(tmp_path, disk="64m", shape=Shape.drawn("calc") if shaped else None) as box:
        fill = "for i in $(seq 8); do head -c 30m /dev/zero > big$i || exit 1; done; echo all-written"
        result = box.run(fill, env={}, timeout=60)
        assert result.disk_full and not result.ok and "all-written" not in result.stdout
        assert box._disk is not None and (box._disk.image.stat().st_size > 1 << 30) == shaped
        written = sum(p.stat().st_size for p in (tmp_path / "ws").glob("big*"))
        assert written <= 64 * 1024 * 1024 + _disk.headroom(64 * 1024 * 1024) or shaped


_FILL_TMP = """
import os, sys, time
path = os.path.join(os.environ["TMPDIR"], "cache.bin")
try:
    with open(path, "wb") as handle:
        for _ in range(16):  # as c5-fill-tmp: ENOSPC with a megabyte or two still shown free
            handle.write(bytes(64 << 20))
except OSError as error:
    print("swallowed", error.errno)
os.truncate(path, os.path.getsize(path) - (4 << 20))  # gives a little back at once
print("carried on")
time.sleep(float(sys.argv[1]))
if sys.argv[2] == "delete":
    os.unlink(path)
"""
"""Fills ``/tmp`` with one file, swallows the ``ENOSPC``, gives 4 MiB back at once (the disk no longer looks
full), carries on (a while), then keeps or deletes the file."""


@pytest.mark.usefixtures("own_disk")
@pytest.mark.parametrize(("carry_on", "then"), [(0, "keep"), (1, "delete")])
def test_a_command_that_ran_the_disk_out_and_swallowed_it_is_stopped(
    tmp_path: Path, carry_on: float, then: str
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "fill.py").write_text(_FILL_TMP)
    with _open(tmp_path, disk="64m") as box:
        result = box.run(f"python3 fill.py {carry_on} {then}; echo exit=$?", env={}, timeout=60)
        assert result.disk_full and not result.ok, (result.stdout, result.stderr)
        assert "exit=0" not in result.stdout  # stopped while it carried on, when it kept it till the end
        assert box.run("touch again", env={}, timeout=30).ok  # the room comes back


@pytest.mark.usefixtures("own_disk")
def test_a_command_well_under_the_disk_passes_however_much_it_writes_over_time(tmp_path: Path) -> None:
    # 40 MiB at a time in a 64 MiB disk, six times over: 240 MiB written, never more than 40 MiB held.
    churn = "for i in 1 2 3 4 5 6; do head -c 40m /dev/zero > $TMPDIR/t$i && rm $TMPDIR/t$i || exit 1; done"
    with _open(tmp_path, disk="64m") as box:
        result = box.run(
            f"{churn}; head -c 24m /dev/zero > w && head -c 24m /dev/zero > $HOME/h && echo ok", env={}, timeout=60
        )
        assert (result.exit_code, result.stdout, result.disk_full) == (0, "ok\n", False), result.stderr


@pytest.mark.usefixtures("own_disk")
@pytest.mark.parametrize("order", [("./w", "$HOME/h", "$TMPDIR/t", "$VIRTUAL_ENV/e"), ("$TMPDIR/t", "$HOME/h", "./w")])
def test_the_workspace_home_environment_and_tmp_share_one_disk(tmp_path: Path, order: tuple[str, ...]) -> None:
    # Each 20 MiB write fits alone in the 48 MiB disk; the third does not.
    with _open(tmp_path, disk="48m") as box:
        writes = "; ".join(f"head -c 20m /dev/zero > {target} && echo wrote" for target in order)
        result = box.run(writes, env={}, timeout=60)
    assert result.disk_full and result.stdout.count("wrote") == 2


@pytest.mark.usefixtures("own_disk")
def test_the_writes_over_a_shared_environment_count_too(tmp_path: Path) -> None:
    layer = tmp_path / "home-layer"
    layer.mkdir(mode=0o755)
    (layer / "settings").write_text("shared\n")
    with _open(tmp_path, disk="32m") as box:
        box.mount_environment({"home": (layer,)}, {}, 200_777)
        result = box.run("cat $HOME/settings; head -c 40m /dev/zero > $HOME/cache", env={}, timeout=60)
        assert result.stdout == "shared\n" and result.disk_full
    assert [p.name for p in layer.iterdir()] == ["settings"]


@pytest.mark.usefixtures("own_disk")
def test_nothing_of_the_disk_outlives_a_killed_command(tmp_path: Path) -> None:
    box = _open(tmp_path, disk="32m")
    assert box._disk is not None
    host = box._disk.host
    result = box.run("head -c 8m /dev/zero > $HOME/h; head -c 8m /dev/zero > w; sleep 60", env={}, timeout=2)
    assert result.timed_out
    assert any(m.startswith(str(host)) for m in _mounts()) and str(tmp_path / "ws") in _mounts()
    box.close()
    assert not any(m.startswith(str(host)) or m.startswith(str(tmp_path)) for m in _mounts())
    assert not host.exists()
    assert (tmp_path / "ws" / "w").stat().st_size == 8 * 1024 * 1024  # the workspace's writes: the caller's


@contextmanager
def _small_temp_folder(tmp_path: Path, size: str) -> Iterator[Path]:
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.usefixtures("own_disk")
def test_a_disk_the_host_cannot_hold_makes_the_sandbox_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its room is taken when the sandbox opens: a full host is the environment's fault, never the candidate's.
    with _small_temp_folder(tmp_path, "64m") as small:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        with pytest.raises(SandboxUnavailable, match="disk"):
            _open(tmp_path, disk="128m")
        assert list(small.iterdir()) == []
        with _open(tmp_path, disk="16m") as box:
            assert box.run("true", env={}, timeout=30).ok
        assert list(small.iterdir()) == []


@pytest.mark.skipif(not _cpu_cgroups(), reason="no cpu cgroup can be made here")
def test_a_grade_says_when_its_test_command_was_held_to_its_cpus(tmp_path: Path, prefect: None) -> None:
    from gradeflow import grade
    from gradeflow.models import TaskSpec

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    loop = "import time\\nt = time.time()\\nwhile time.time() - t < 3: pass"
    test = (
        "import subprocess, sys\n\n\ndef test_add():\n    from calc import add\n\n"
        f"    busy = [subprocess.Popen([sys.executable, '-c', '{loop}']) for _ in range(4)]\n"
        "    assert [p.wait() for p in busy] == [0, 0, 0, 0]\n    assert add(1, 2) == 3\n"
    )
    (repo / "tests" / "test_calc.py").write_text(test)
    spec = {
        "task_id": "busy",
        "type": "bugfix",
        "repo": str(repo),
        "environment": {"cpus": 0.5},
        "tests": {
            "command": "PYTHONPATH=. python -m pytest -q -p no:cacheprovider --junitxml={junit}",
            "pass_to_pass": ["tests/test_calc.py::test_add"],
            "varied_run": False,
        },
    }
    result = grade(TaskSpec.model_validate(spec), patch="", sandbox="isolated")
    tests = result.component("tests")
    assert tests.passed and tests.details.get("cpu_throttled") is True, tests.messages
    assert any("environment.cpus (0.5)" in m for m in tests.messages)
