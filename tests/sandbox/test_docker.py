"""DockerSandbox and its factory against a real engine, without Prefect."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from pydantic import ValidationError

from gradeflow.errors import SandboxUnavailable, SpecError
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox import DEFAULT_IMAGE, DockerSandbox, DockerSandboxFactory, _docker_layers
from gradeflow.sandbox import docker as docker_module
from gradeflow.sandbox.factory import sandbox_factory
from gradeflow.tasks._environment import capture_environment, import_environment, lay_workspace, tree_manifest

pytestmark = pytest.mark.docker
SMALL = EnvironmentSpec(sandbox="docker", memory="256m", pids=64)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "data.txt").write_text("hello")
    (root / "link").symlink_to("pkg/data.txt")
    return root


@pytest.fixture
def box(docker_client: Any, workspace: Path, no_leftovers: None) -> Any:
    del docker_client, no_leftovers
    with DockerSandboxFactory(SMALL).open(workspace) as sandbox:
        yield sandbox


def _processes(box: DockerSandbox) -> list[str]:
    result = box.run("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done", env={}, timeout=10)
    return [line for line in result.stdout.splitlines() if line and "/proc/[0-9]" not in line]


def test_commands_run_as_the_task_user_in_a_scrubbed_environment(box: DockerSandbox) -> None:
    result = box.run("id -u; id -g; pwd; env | sort; cat pkg/data.txt link", env={"TASK_VAR": "v"}, timeout=10)
    lines = result.stdout.splitlines()
    assert result.ok and lines[:3] == ["1000", "1000", "/workspace"]
    names = {line.split("=", 1)[0] for line in lines[3:] if "=" in line}
    assert names <= {
        "HOME",
        "HOSTNAME",
        "LANG",
        "LC_ALL",
        "OLDPWD",
        "PATH",
        "PWD",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "TASK_VAR",
        "TMPDIR",
        "TZ",
    }
    assert "HOME=/home/grader" in lines and "TASK_VAR=v" in lines and "PYTHONHASHSEED=0" in lines
    assert lines[-1] == "hellohello"


def test_the_workspace_is_a_writable_copy_and_the_host_is_untouched(box: DockerSandbox, workspace: Path) -> None:
    result = box.run("echo new > pkg/data.txt && echo x > created && touch $HOME/h /tmp/t", env={}, timeout=10)
    assert result.ok, result.stderr
    assert (workspace / "pkg" / "data.txt").read_text() == "hello"
    assert not (workspace / "created").exists()


def test_exit_code_and_both_streams_are_reported(box: DockerSandbox) -> None:
    result = box.run("echo out; echo err >&2; exit 3", env={}, timeout=10)
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (3, "out\n", "err\n", False)
    assert 0 < result.duration < 5


def test_long_output_keeps_head_and_tail(box: DockerSandbox) -> None:
    result = box.run("echo first; yes middle | head -c 300000; echo; echo last", env={}, timeout=20)
    assert result.stdout.startswith("first") and result.stdout.rstrip().endswith("last")
    assert "[... output truncated ...]" in result.stdout and len(result.stdout) < 70_000


def test_timeout_kills_the_whole_process_tree(box: DockerSandbox) -> None:
    started = time.perf_counter()
    result = box.run("sleep 300 & (sleep 301 &) ; setsid sleep 302 & sleep 303", env={}, timeout=2)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert time.perf_counter() - started < 8
    assert not [p for p in _processes(box) if p.startswith("sleep 30")]
    assert box.run("echo alive", env={}, timeout=10).stdout == "alive\n"


def test_background_processes_die_with_the_command_that_started_them(box: DockerSandbox) -> None:
    result = box.run("sleep 300 & sleep 301 >/dev/null 2>&1 & echo started", env={}, timeout=10)
    assert result.ok and result.stdout == "started\n" and result.duration < 5
    assert not [p for p in _processes(box) if p.startswith("sleep 30")]


def test_a_memory_kill_is_reported_for_that_command_only(box: DockerSandbox) -> None:
    hog = box.run("python3 -c 'x = bytearray(1 << 30)'", env={}, timeout=30)
    assert hog.oom_killed and hog.exit_code == 137 and not hog.ok
    after = box.run("python3 -c 'x = bytearray(1 << 20)'", env={}, timeout=30)
    assert after.ok and not after.oom_killed


def test_only_loopback_and_no_capabilities(box: DockerSandbox) -> None:
    result = box.run("ls /sys/class/net; grep -E '^Cap(Eff|Prm|Bnd)|^NoNewPrivs' /proc/self/status", env={}, timeout=10)
    lines = result.stdout.split()
    assert lines[0] == "lo" and lines[1:4:2] == ["CapPrm:", "CapEff:"]
    assert set(lines[2:6:2]) == {"0000000000000000"} and lines[-1] == "1"
    # The bounding set keeps only CAP_KILL (bit 5), for the root keeper; no-new-privileges means a
    # command can never gain it.
    assert lines[5:7] == ["CapBnd:", "0000000000000020"]


BOMB = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"


def test_a_fork_bomb_left_behind_is_reaped_and_the_next_command_runs(box: DockerSandbox) -> None:
    # The bomb holds every pid the limit allows, so no reaper can start inside: the keeper kills it on a signal.
    started = box.run(f"python3 -c '{BOMB}' bomb-marker >/dev/null 2>&1 & sleep 3; echo started", env={}, timeout=20)
    assert started.stdout.endswith("started\n")
    assert box.run("echo alive", env={}, timeout=10).stdout == "alive\n"
    assert not [p for p in _processes(box) if "bomb-marker" in p]


def _keeper_pid(box: DockerSandbox) -> int:
    """The keeper's process id on this host (the engine runs here)."""
    found = box._client.api.top(box._live().id, ps_args="-eo pid,args")["Processes"]
    (pid,) = [int(row[0]) for row in found if row[-1].startswith("python3 -c") and "SIGUSR1" in row[-1]]
    return pid


def test_a_keeper_late_to_its_signal_kills_no_later_command(box: DockerSandbox) -> None:
    # The keeper takes its signal when it is next scheduled: on a loaded machine, after the next command started.
    # Held stopped over a command and let go while the next one runs, it must not kill that one.
    keeper = _keeper_pid(box)
    os.kill(keeper, signal.SIGSTOP)
    try:
        assert box.run("true", env={}, timeout=10).exit_code == 0
        running = threading.Event()

        def let_go_while_it_runs() -> None:
            for _ in range(500):
                rows = box._client.api.top(box._live().id, ps_args="-eo pid,args")["Processes"]
                if any("sleep 2.5" in row[-1] for row in rows):
                    running.set()
                    break
                time.sleep(0.02)
            os.kill(keeper, signal.SIGCONT)

        letting_go = threading.Thread(target=let_go_while_it_runs)
        letting_go.start()
        result = box.run("sleep 2.5; echo survived", env={}, timeout=30)
        letting_go.join()
    finally:
        os.kill(keeper, signal.SIGCONT)
    assert running.is_set() and (result.exit_code, result.stdout) == (0, "survived\n"), result


def test_a_container_whose_main_process_exits_at_once_says_what_it_wrote(
    docker_client: Any, workspace: Path, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    del docker_client, no_leftovers
    monkeypatch.setattr(docker_module, "_KEEPER_START", "echo keeper-went-away >&2; exit 127")
    with pytest.raises(SandboxUnavailable, match="its main process said: 'keeper-went-away'"):
        DockerSandboxFactory(SMALL).open(workspace).close()


def test_the_command_user_cannot_signal_the_keeper(box: DockerSandbox) -> None:
    result = box.run("kill -USR1 1; echo $?; kill -KILL -1; echo done", env={}, timeout=10)
    assert result.stdout.split()[-1] == "done"
    assert box.run("echo alive", env={}, timeout=10).stdout == "alive\n"


def test_output_dir_is_emptied_before_each_command(box: DockerSandbox) -> None:
    box.run(
        f"echo stale > {box.output_path('junit.xml')}; mkdir -p {box.output_dir}/d; chmod 000 {box.output_dir}/d",
        env={},
        timeout=10,
    )
    assert box.read_output("junit.xml", 1000) is not None
    result = box.run(f"ls -A {box.output_dir}", env={}, timeout=10)
    assert result.ok and result.stdout == ""
    assert box.read_output("junit.xml", 1000) is None


def test_read_output_returns_bytes_and_a_host_comparable_mtime(box: DockerSandbox) -> None:
    before = time.time()
    box.run(
        f"printf '<x/>' > {box.output_path('r.xml')}; ln -s /etc/passwd {box.output_path('l')}; "
        f"mkdir {box.output_path('dir')}",
        env={},
        timeout=10,
    )
    report = box.read_output("r.xml", 100)
    assert report is not None and report[0] == b"<x/>" and before - 1 <= report[1] <= time.time() + 1
    assert box.read_output("l", 100) is None and box.read_output("dir", 100) is None
    assert box.read_output("absent", 100) is None
    with pytest.raises(ValueError, match="over the 2-byte cap"):
        box.read_output("r.xml", 2)


def test_close_removes_the_container_even_after_an_exception(
    docker_client: Any, workspace: Path, no_leftovers: None
) -> None:
    del no_leftovers
    sandbox = DockerSandboxFactory(SMALL).open(workspace)
    with pytest.raises(RuntimeError), sandbox:
        sandbox.run("true", env={}, timeout=10)
        raise RuntimeError("boom")
    sandbox.close()
    with pytest.raises(SandboxUnavailable, match="after close"):
        sandbox.run("true", env={}, timeout=10)


def test_describe_resolves_the_image_and_asks_python_inside(docker_client: Any) -> None:
    description = DockerSandboxFactory(SMALL).describe()
    inside = (
        docker_client.containers.run(
            DEFAULT_IMAGE,
            ["python3", "-c", "import platform; print(platform.machine(), platform.python_version())"],
            remove=True,
            network_mode="none",
        )
        .decode()
        .split()
    )
    assert description.sandbox == "docker" and description.image == DEFAULT_IMAGE
    assert description.image_id == docker_client.images.get(DEFAULT_IMAGE).id
    assert [description.architecture, description.python_version] == inside


def test_a_missing_image_is_unavailable_with_a_hint(docker_client: Any) -> None:
    del docker_client
    factory = DockerSandboxFactory(EnvironmentSpec(sandbox="docker", image="does-not-exist:1"))
    with pytest.raises(SandboxUnavailable, match=r"'does-not-exist:1' is not on this engine.*scripts/build-image.sh"):
        factory.describe()


def test_an_engine_that_does_not_answer_is_unavailable_after_a_bounded_wait(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    started = time.perf_counter()
    with pytest.raises(SandboxUnavailable, match="did not answer within 1 s"):
        DockerSandboxFactory(engine_wait=1.0).describe()
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("user", "grader", "numeric 'uid:gid'"),
    ],
)
def test_bad_settings_are_spec_errors_without_an_engine(field: str, value: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        sandbox_factory(EnvironmentSpec.model_validate({"sandbox": "docker", field: value}))


def test_a_memory_that_is_not_a_size_is_refused_when_the_spec_loads() -> None:
    with pytest.raises(ValidationError, match="'lots' is not a size like '512m' or '2g'"):
        EnvironmentSpec.model_validate({"sandbox": "docker", "memory": "lots"})


def test_the_docker_kind_builds_a_factory_with_the_default_image() -> None:
    factory = sandbox_factory(EnvironmentSpec(), "docker")
    assert isinstance(factory, DockerSandboxFactory) and factory.settings.image == DEFAULT_IMAGE
    assert (factory.settings.user, factory.settings.memory, factory.settings.pids) == ("1000:1000", 2 << 30, 256)


def test_the_task_environment_is_carried_to_a_new_container(
    docker_client: Any, workspace: Path, tmp_path: Path, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    pristine = tmp_path / "pristine"
    shutil.copytree(workspace, pristine, symlinks=True)
    factory = DockerSandboxFactory(SMALL)
    setup = "mkdir -p $HOME/.local && echo tool:$PWD > $HOME/.local/tool && echo gen > pkg/gen.txt && rm pkg/data.txt"
    before = tree_manifest(workspace)
    with factory.open(workspace) as box:
        assert box.run(setup, env={}, timeout=30).ok
        environment = capture_environment(box, before, tmp_path / "environment")
    assert environment.removed == ["pkg/data.txt"] and environment.roots == {"home": "/home/grader"}
    candidate = tmp_path / "candidate"
    shutil.copytree(pristine, candidate, symlinks=True)
    lay_workspace(environment, candidate, pristine)
    with factory.open(candidate) as box:
        import_environment(environment, box, candidate)
        seen = box.run(
            "cat $HOME/.local/tool pkg/gen.txt; ls pkg; id -u; stat -c %u $HOME/.local/tool", env={}, timeout=30
        )
    tool, generated, listing, uid, owner = seen.stdout.split()
    # HOME and the workspace as setup left them (data.txt removed), owned by the command user.
    assert (tool, generated, listing) == ("tool:/workspace", "gen", "gen.txt")
    assert owner == uid != "0"


def _gradeflow_tmpfs_mounts() -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines() if line.startswith("gradeflow-home ")]


@pytest.mark.skipif(os.geteuid() != 0, reason="HOME's writes go to a tmpfs gradeflow mounts as root")
def test_home_is_mounted_from_the_shared_layer_under_a_bounded_layer_of_each_containers_own(
    docker_client: Any, workspace: Path, tmp_path: Path, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    factory = DockerSandboxFactory(EnvironmentSpec(sandbox="docker", memory="256m", pids=64, disk="16m"))
    setup = "mkdir -p $HOME/.local/lib && head -c 1048576 /dev/urandom > $HOME/.local/lib/pkg.bin && echo s > $HOME/n"
    with factory.open(workspace) as box:
        assert box.run(setup, env={}, timeout=30).ok
        environment = capture_environment(box, tree_manifest(workspace), tmp_path / "environment")
    assert box.mounts_layers and environment.layered == ["home"]
    layer = environment.folder / "layers" / "home"
    data = (layer / ".local" / "lib" / "pkg.bin").read_bytes()
    # The layers are root's alone on the host: they belong to the command user, who may be a user here too.
    assert (environment.folder / "layers").stat().st_mode & 0o077 == 0
    assert layer.stat().st_uid == factory.settings.uid
    one, two = factory.open(workspace), factory.open(workspace)
    try:
        for box in (one, two):
            import_environment(environment, box, workspace)
        assert len(_gradeflow_tmpfs_mounts()) == 2
        mounted = one.run(
            "awk '$2 == \"/home/grader\" {print $3}' /proc/mounts; md5sum < $HOME/.local/lib/pkg.bin",
            env={},
            timeout=30,
        )
        wrote = one.run(
            "echo one >> $HOME/n && mkdir $HOME/.local/lib/mine && rm $HOME/.local/lib/pkg.bin", env={}, timeout=30
        )
        other = two.run("cat $HOME/n; ls $HOME/.local/lib", env={}, timeout=30)
        again = one.run("cat $HOME/n; ls $HOME/.local/lib", env={}, timeout=30)
        full = one.run("head -c 32m /dev/zero > $HOME/big", env={}, timeout=30)
    finally:
        one.close()
        two.close()
    assert mounted.stdout.split()[0] == "overlay", mounted
    assert mounted.stdout.split()[1] == hashlib.md5(data).hexdigest()
    assert wrote.ok, wrote
    assert other.stdout.split() == ["s", "pkg.bin"]
    assert again.stdout.split() == ["s", "one", "mine"]
    # HOME's writes are bounded by environment.disk, as the tmpfs it replaces was.
    assert full.disk_full, full
    # The shared layer is never written, and nothing of the containers' own layers is left on the host.
    assert sorted(p.name for p in (layer / ".local" / "lib").iterdir()) == ["pkg.bin"]
    assert (layer / "n").read_text() == "s\n"
    assert _gradeflow_tmpfs_mounts() == []


def test_the_engine_is_asked_once_whether_it_finds_a_folder_of_this_host(docker_client: Any) -> None:
    image = docker_client.images.get(DEFAULT_IMAGE).id
    assert _docker_layers._binds_here(docker_client, image)  # the suite's engine runs here

    class Elsewhere:
        """An engine on another machine: a bind of a folder made here is refused as docker refuses it."""

        class containers:
            @staticmethod
            def create(*args: Any, **kwargs: Any) -> Any:
                raise docker.errors.APIError("invalid mount config for type bind: bind source path does not exist")

    assert not _docker_layers._binds_here(Elsewhere(), image)
