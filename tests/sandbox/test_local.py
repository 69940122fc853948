"""The local sandbox runs real processes: timeouts kill the whole group, the environment is scrubbed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from gradeflow.sandbox._local_procs import pid_namespace_available
from gradeflow.sandbox.base import MAX_OUTPUT_BYTES
from gradeflow.sandbox.local import LocalSandboxFactory
from gradeflow.sandbox.shape import Shape


@pytest.fixture
def box(tmp_path: Path):
    with LocalSandboxFactory().open(tmp_path) as sandbox:
        yield sandbox


def test_runs_in_the_workspace_and_captures_output(box, tmp_path: Path) -> None:
    result = box.run("pwd; echo oops >&2; exit 3", env={}, timeout=10)
    assert (result.exit_code, result.stdout.strip(), result.stderr.strip()) == (3, str(tmp_path), "oops")
    assert not result.ok and not result.timed_out


def test_timeout_kills_the_whole_process_group(box, tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    started = time.monotonic()
    result = box.run(f"(sleep 2; touch {marker}) & sleep 30", env={}, timeout=0.5)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    time.sleep(2.5)
    assert not marker.exists()  # the background child died with the group


def test_the_graders_environment_does_not_leak(box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_SECRET", "s3cr3t-value")
    result = box.run("env", env={"TASK_VAR": "visible"}, timeout=10)
    assert "s3cr3t-value" not in result.stdout and "GRADER_SECRET" not in result.stdout
    assert "TASK_VAR=visible" in result.stdout and "PYTHONHASHSEED=0" in result.stdout
    assert f"HOME={os.environ.get('HOME')}\n" not in result.stdout


def test_output_is_capped(box) -> None:
    result = box.run("head -c 1000000 /dev/zero | tr '\\0' x", env={}, timeout=10)
    assert len(result.stdout) <= MAX_OUTPUT_BYTES + 100 and "output truncated" in result.stdout


def test_reports_go_outside_the_workspace_and_are_read_back(box, tmp_path: Path) -> None:
    target = box.output_path("junit.xml")
    assert not target.startswith(str(tmp_path))
    box.run(f"echo '<testsuites/>' > {target}", env={}, timeout=10)
    data, _mtime = box.read_output("junit.xml", 1024)
    assert data == b"<testsuites/>\n"
    assert box.read_output("absent.xml", 1024) is None
    box.run(f"head -c 4096 /dev/zero > {target}", env={}, timeout=10)
    with pytest.raises(ValueError, match="over the 1024-byte cap"):
        box.read_output("junit.xml", 1024)


def test_each_command_starts_with_an_empty_output_dir(box) -> None:
    box.run(f"echo planted > {box.output_path('junit.xml')}", env={}, timeout=10)
    box.run("true", env={}, timeout=10)
    assert box.read_output("junit.xml", 1024) is None


def test_close_removes_the_scratch_folders(tmp_path: Path) -> None:
    sandbox = LocalSandboxFactory().open(tmp_path)
    scratch = Path(sandbox.output_dir).parent
    sandbox.close()
    sandbox.close()  # idempotent
    assert not scratch.exists() and tmp_path.exists()


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel holding module ``name`` (so pip installs it offline)."""
    import zipfile

    info = f"{name}-0.1.dist-info"
    files = {
        f"{name}.py": "VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    wheel = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def test_pip_installs_into_a_private_environment_never_into_gradeflows(tmp_path: Path) -> None:
    import importlib.util
    import sys

    wheel = _wheel(tmp_path, "gradeflow_probe_pkg")
    factory = LocalSandboxFactory()
    with factory.open(tmp_path) as first:
        installed = first.run(f"pip install -q --no-index --no-deps {wheel}", env={}, timeout=120)
        assert installed.ok, installed.stderr
        seen = first.run(
            "python -c 'import gradeflow_probe_pkg, pytest; print(gradeflow_probe_pkg.VALUE)'", env={}, timeout=60
        )
        assert (seen.exit_code, seen.stdout.strip()) == (0, "42")  # installed, and the host's pytest still imports
        also = first.run(
            f"python -m pip install -q --no-index --no-deps --force-reinstall {wheel}", env={}, timeout=120
        )
        assert also.ok, also.stderr
    assert importlib.util.find_spec("gradeflow_probe_pkg") is None
    assert not any(Path(p, "gradeflow_probe_pkg.py").exists() for p in sys.path if p)
    with factory.open(tmp_path) as later:  # the next sandbox starts without it
        assert later.run("python -c 'import gradeflow_probe_pkg'", env={}, timeout=60).exit_code != 0
    assert "private per sandbox" in (factory.describe().python_environment or "")


CONTAINMENT = [
    pytest.param(
        True,
        id="pid-namespace",
        marks=pytest.mark.skipif(not pid_namespace_available(), reason="needs root and util-linux unshare"),
    ),
    pytest.param(False, id="marker-scan"),
]


@pytest.mark.parametrize("pid_namespace", CONTAINMENT)
@pytest.mark.parametrize("when", ["after-success", "at-timeout"])
def test_a_setsid_daemon_dies_with_its_command(tmp_path: Path, pid_namespace: bool, when: str) -> None:
    marker = tmp_path / "marker"
    daemon = f"setsid sh -c 'sleep 2; touch {marker}' > /dev/null 2>&1 &"
    command = f"{daemon} {'true' if when == 'after-success' else 'sleep 30'}"
    with LocalSandboxFactory(pid_namespace=pid_namespace).open(tmp_path) as box:
        result = box.run(command, env={}, timeout=1.0)
    assert result.timed_out == (when == "at-timeout")
    time.sleep(3)
    assert not marker.exists()  # the daemon left the process group and the session, and still died


@pytest.mark.parametrize("pid_namespace", CONTAINMENT)
def test_a_daemon_holding_the_output_open_does_not_hold_the_command(tmp_path: Path, pid_namespace: bool) -> None:
    started = time.monotonic()
    with LocalSandboxFactory(pid_namespace=pid_namespace).open(tmp_path) as box:
        result = box.run("setsid sh -c 'sleep 30' & echo done", env={}, timeout=20)
    assert (result.exit_code, result.stdout) == (0, "done\n")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("pid_namespace", CONTAINMENT)
def test_commands_keep_ordinary_signals_and_exit_codes(tmp_path: Path, pid_namespace: bool) -> None:
    # Not the first process of the namespace: a SIGTERM it sends itself still ends it.
    with LocalSandboxFactory(pid_namespace=pid_namespace).open(tmp_path) as box:
        killed = box.run("python -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'", env={}, timeout=20)
        exited = box.run("exit 7", env={}, timeout=10)
    assert killed.exit_code not in (0, None) and exited.exit_code == 7


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a file system of the test's own")
def test_output_over_the_cap_is_cut_and_never_reaches_the_disk(
    box, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1 GiB of output once went to temporary files; now it streams through pipes, head and tail kept. Temporary
    # files go to a small file system of this test's own (a shared disk's free space moves with every other
    # process on the machine; a file deleted once opened is still counted there).
    size = 1024**3
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(scratch)], check=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        monkeypatch.setenv("TMPDIR", str(scratch))
        disk = shutil.disk_usage(scratch)
        grew = [0]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                grew[0] = max(grew[0], disk.free - shutil.disk_usage(scratch).free)
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            result = box.run(f"echo first; head -c {size} /dev/zero; echo; echo last", env={}, timeout=120)
        finally:
            done.set()
            watcher.join()
    finally:
        subprocess.run(["umount", "-l", str(scratch)], check=False)
    assert result.ok and result.stdout_bytes == size + len("first\n\nlast\n")
    assert result.stdout.startswith("first\n") and result.stdout.endswith("last\n")
    assert len(result.stdout) <= MAX_OUTPUT_BYTES + 100 and "output truncated" in result.stdout
    assert grew[0] < 64 * 1024**2


def test_the_local_sandbox_warns_once_per_grade(capsys: pytest.CaptureFixture[str]) -> None:
    from gradeflow.sandbox.local import LOCAL_WARNING, LocalSandboxFactory

    LocalSandboxFactory().describe()
    err = capsys.readouterr().err.splitlines()
    assert err == [LOCAL_WARNING] and "trusted code only" in err[0]


def test_a_shaped_local_sandbox_changes_the_variables_only(tmp_path: Path) -> None:
    shape = Shape(user="kai", uid=1500, hostname="kai-desktop", folder="code", project="calc")
    given = {"TZ": "Europe/Berlin", "TASK_VAR": "visible"}
    with LocalSandboxFactory().shaped(shape).open(tmp_path) as sandbox:
        result = sandbox.run("env; pwd", env={"PYTHONHASHSEED": "7", **given}, timeout=10)
        assert sandbox.workspace == str(tmp_path)
    lines = result.stdout.splitlines()
    assert lines[-1] == str(tmp_path)
    assert {"USER=kai", "LOGNAME=kai", "TZ=Europe/Berlin", "TASK_VAR=visible", "PYTHONHASHSEED=7"} <= set(lines)
    assert not any(line.startswith(("LC_ALL=", "PYTHONDONTWRITEBYTECODE=")) for line in lines)


def test_shape_leaves_out_the_graders_variables_unless_given() -> None:
    shape = Shape.drawn("../my repo!")
    assert shape.project == "myrepo" and shape.workspace == f"/home/{shape.user}/{shape.folder}/myrepo"
    own = {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "HOME": "/h"}
    shaped = shape.variables({**own, "PATH": "/usr/bin:/bin"}, {})
    named = {"LANG": "C.UTF-8", "HOME": "/h", "USER": shape.user, "LOGNAME": shape.user, "SHELL": "/bin/bash"}
    assert named.items() <= shaped.items()
    assert not shaped.keys() & {"PYTHONHASHSEED", "TZ", "LC_ALL", "DISPLAY", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK"}
    assert shaped["PATH"].startswith("/usr/bin:/bin:") and f"/home/{shape.user}/.local/bin" in shaped["PATH"]
    assert len(shaped) >= 28 and "TERM" in shaped and "~" not in "".join(shaped.values())
    assert shape.variables(own, {"TZ": "UTC"})["TZ"] == "UTC"
    assert 1000 <= shape.uid < 30000
