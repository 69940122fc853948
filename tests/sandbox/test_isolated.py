"""The isolated sandbox on this machine's real bubblewrap: what a command can see, do and keep."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from gradeflow.errors import SandboxUnavailable
from gradeflow.models import EnvironmentSpec
from gradeflow.sandbox import _bwrap, _disk
from gradeflow.sandbox._cgroups import cgroups_available
from gradeflow.sandbox.isolated import IsolatedSandbox, IsolatedSandboxFactory
from gradeflow.sandbox.shape import Shape

pytestmark = pytest.mark.slow


@pytest.fixture
def factory() -> IsolatedSandboxFactory:
    if _bwrap.bwrap_problem() is not None:
        pytest.fail(f"the isolated sandbox must run here: {_bwrap.bwrap_problem()}")
    return IsolatedSandboxFactory(EnvironmentSpec(memory="512m", pids=64, disk="32m"))


@pytest.fixture
def box(factory: IsolatedSandboxFactory, tmp_path: Path) -> Iterator[IsolatedSandbox]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "given.txt").write_text("from the grader\n")
    with factory.open(workspace) as sandbox:
        yield sandbox


def run(box: IsolatedSandbox, command: str, **kwargs: object) -> tuple[int | None, str, str]:
    result = box.run(command, env={}, timeout=kwargs.pop("timeout", 30), **kwargs)  # type: ignore[arg-type]
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the command keeps that user's uid")
def test_commands_run_as_a_user_of_their_own_with_no_capabilities(box: IsolatedSandbox) -> None:
    code, out, _ = run(box, "id -u; id -un; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; umount -l /proc")
    lines = out.split()
    assert int(lines[0]) >= 200_000 and lines[1] == "sandbox"
    assert "0000000000000000" in out and out.count("0000000000000000") == 2
    assert "NoNewPrivs:" in out and lines[-1] == "1"
    assert code != 0  # umount failed: /proc is still the sandbox's own


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the command keeps that user's uid")
def test_a_user_the_task_names_is_the_one_commands_run_as(tmp_path: Path) -> None:
    with IsolatedSandboxFactory(EnvironmentSpec(user="1234:1234")).open(tmp_path) as box:
        assert box.run("id -u; id -g", env={}, timeout=30).stdout.split() == ["1234", "1234"]


@pytest.mark.skipif(os.geteuid() != 0, reason="per-sandbox users need root")
def test_a_process_hog_in_one_sandbox_leaves_the_next_ones_processes_alone(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with factory.open(tmp_path / "a") as hog, factory.open(tmp_path / "b") as other:
        hold = "for i in $(seq 80); do sleep 5 & done; sleep 5"  # past its pids limit of 64
        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(hog.run, hold, env={}, timeout=30)
            time.sleep(1.5)
            result = other.run("for i in $(seq 20); do sleep 0.1 & done; wait; echo forked", env={}, timeout=30)
            held.result()
    assert (result.exit_code, result.stdout, result.stderr) == (0, "forked\n", "")


def test_only_the_commands_own_processes_are_visible(box: IsolatedSandbox) -> None:
    code, out, _ = run(box, "ls /proc | grep -E '^[0-9]+$' | wc -l")
    assert code == 0 and int(out) < 10  # bwrap's init, the shell and ls: none of the host's


def test_the_host_is_seen_by_allow_list_only(box: IsolatedSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "next-to-the-workspace.txt"
    secret.write_text("grader state")
    home = os.environ["GRADEFLOW_HOME"]
    code, out, _err = run(
        box,
        f"cat given.txt; ls {home} && echo HOME-SEEN; cat {secret} && echo SIBLING-SEEN; "
        "ls /run/docker.sock && echo DOCKER-SEEN; ls /var && echo VAR-SEEN; ls /root/.cache && echo CACHE-SEEN; true",
    )
    assert code == 0 and out.startswith("from the grader")
    assert "SEEN" not in out, out


def test_nothing_outside_the_run_can_be_written(box: IsolatedSandbox) -> None:
    token = uuid.uuid4().hex
    _code, out, _ = run(
        box,
        f"for p in /usr/{token} /etc/{token} {sys.prefix}/{token} /{token}; do "
        f'touch "$p" 2>/dev/null && echo "WROTE $p"; done; touch {box.workspace}/ok && echo WS-OK',
    )
    assert "WROTE" not in out and "WS-OK" in out
    assert not any(Path(p).exists() for p in (f"/usr/{token}", f"/etc/{token}", f"/{token}"))


def test_no_socket_of_the_host_is_reachable(box: IsolatedSandbox) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        code, _out, _ = run(box, f"python -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'")
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert code != 0


def _global_address() -> str:
    shown = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global", "up"], capture_output=True, check=True)
    found = [a["local"] for i in json.loads(shown.stdout) for a in i.get("addr_info", [])]
    assert found, "this test needs a non-loopback IPv4 address on the host"
    return str(found[0])


def test_the_network_when_the_task_asks_goes_out_through_slirp_never_to_the_host_loopback(tmp_path: Path) -> None:
    factory = IsolatedSandboxFactory(EnvironmentSpec(network=True))
    with socket.socket() as outside, socket.socket() as local, factory.open(tmp_path) as box:
        outside.bind((_global_address(), 0))
        local.bind(("127.0.0.1", 0))
        for server in (outside, local):
            server.listen(1)
        (address, port), local_port = outside.getsockname(), local.getsockname()[1]
        connect = "python -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)'"
        result = box.run(f"{connect} {address} {port}", env={}, timeout=30)
        assert result.exit_code == 0, result.stderr
        for host in ("127.0.0.1", "10.0.2.2"):  # the sandbox's own loopback; slirp's gateway to the host's
            assert box.run(f"{connect} {host} {local_port}", env={}, timeout=30).exit_code != 0
        local.setblocking(False)
        with pytest.raises(BlockingIOError):
            local.accept()


def test_a_daemon_dies_with_its_command(box: IsolatedSandbox) -> None:
    marker = str(4000 + uuid.uuid4().int % 900)
    code, _, _ = run(box, f"setsid sh -c 'sleep {marker}' & nohup sleep {marker} >/dev/null 2>&1 & echo started")
    assert code == 0
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == f"sleep\0{marker}"]
    assert alive == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().rstrip(b"\0").decode()
    except OSError:
        return ""


def test_stdin_is_read_once_and_then_empty(box: IsolatedSandbox) -> None:
    code, out, _ = run(box, "head -c 7; echo; cat", stdin=b"payloadMORE")
    assert (code, out) == (0, "payload\nMORE")
    code, out, _ = run(box, "cat")
    assert (code, out) == (0, "")


def test_the_limits_hold(box: IsolatedSandbox) -> None:
    result = box.run("python -c 'bytearray(700 * 1024 * 1024)'", env={}, timeout=60)
    assert result.exit_code != 0
    if cgroups_available():  # the kernel's OOM killer, as in docker
        assert result.oom_killed
    else:
        assert "MemoryError" in result.stderr
    code, _, _ = run(box, "head -c 40m /dev/zero > /tmp/big")
    assert code != 0
    bomb = "python -c 'import os\nfor _ in range(200):\n    os.fork()' 2>&1 | grep -c 'Resource temporarily' || true"
    code, out, _ = run(box, bomb)
    assert int(out.split()[-1]) > 0  # forks refused at the pids limit
    result = box.run("head -c 40m /dev/zero > big.bin", env={}, timeout=30)
    assert result.disk_full and not result.ok


def test_multiprocessing_has_a_shared_memory_folder_bounded_and_fresh_per_command(box: IsolatedSandbox) -> None:
    pool = "python -c 'import multiprocessing as m\nwith m.Pool(2) as p:\n    print(sum(p.map(abs, [-1, -2])))'"
    _, out, err = run(box, f"{pool} && echo left > /dev/shm/left && head -c 80m /dev/zero > /dev/shm/big; echo $?")
    assert out.splitlines()[0] == "3", err  # semaphores made: a pool runs
    assert out.splitlines()[-1] != "0"  # past 64 MiB the write fails
    assert run(box, "ls -A /dev/shm")[1] == ""  # the next command starts with none of it


def test_files_a_command_writes_stay_for_the_next_command_but_tmp(box: IsolatedSandbox) -> None:
    assert run(box, "echo kept > made.txt && echo home > $HOME/h && mkdir -p $TMPDIR/d")[0] == 0
    assert run(box, "cat made.txt $HOME/h; test -d $TMPDIR/d || echo tmp-emptied")[1] == "kept\nhome\ntmp-emptied\n"
    assert (Path(box.workspace) / "made.txt").read_text() == "kept\n"


def test_a_command_that_fills_tmp_is_disk_full(box: IsolatedSandbox) -> None:
    result = box.run("head -c 40m /dev/zero > $TMPDIR/fill; echo done", env={}, timeout=30)
    assert result.disk_full and not result.ok  # on the sandbox's own disk, stopped too
    assert not box.run("true", env={}, timeout=30).disk_full  # /tmp starts empty again


def test_no_bwrap_means_sandbox_unavailable_with_a_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_bwrap, "_probed", {})
    monkeypatch.setattr(_bwrap, "bwrap_path", lambda: None)
    factory = IsolatedSandboxFactory()
    with pytest.raises(SandboxUnavailable) as caught:
        factory.describe()
    message = str(caught.value)
    assert "bubblewrap" in message and "--sandbox docker" in message and "--sandbox local" in message
    with pytest.raises(SandboxUnavailable):
        factory.open(tmp_path)
    monkeypatch.setattr(_bwrap, "_probed", {})


def test_a_command_bwrap_cannot_start_is_the_sandboxs_failure(
    box: IsolatedSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mount source that vanished: bwrap fails before the command runs, which is not the command's exit 1.
    monkeypatch.setattr(box, "_read_only", (*box._read_only, f"/nonexistent-{uuid.uuid4().hex}"))
    with pytest.raises(SandboxUnavailable, match="isolated sandbox cannot start"):
        box.run("true", env={}, timeout=30)


def test_more_folders_can_be_shown_read_only(tmp_path: Path) -> None:
    tool = tmp_path / "agent"
    tool.mkdir()
    (tool / "run.sh").write_text("echo agent\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with IsolatedSandboxFactory(read_only=(str(tool),)).open(workspace) as box:
        result = box.run(f"sh {tool}/run.sh && touch {tool}/x", env={}, timeout=30)
    assert result.stdout == "agent\n" and result.exit_code != 0
    assert not (tool / "x").exists()


def test_the_timeout_ends_the_command_and_everything_it_started(box: IsolatedSandbox) -> None:
    marker = str(5000 + uuid.uuid4().int % 900)
    result = box.run(f"setsid sleep {marker} & sleep {marker}", env={}, timeout=1)
    assert result.timed_out and result.exit_code is None
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == f"sleep\0{marker}"]
    assert alive == []


@pytest.mark.skipif(not cgroups_available(), reason="memory is per process without cgroups")
def test_memory_is_bounded_across_every_process_of_the_command(box: IsolatedSandbox) -> None:
    # Three processes of 200 MiB each: each is under the 512 MiB limit, together they are not.
    hog = "python -c 'import time; b = bytearray(200 << 20); time.sleep(3)'"
    result = box.run(f"{hog} & {hog} & {hog} & wait", env={}, timeout=60)
    assert result.oom_killed
    assert not box.run("true", env={}, timeout=30).oom_killed  # the next command has a cgroup of its own


@contextmanager
def _small_disk(tmp_path: Path, options: str) -> Iterator[Path]:
    """A workspace folder on a tmpfs mounted with ``options``, standing in for the host's disk."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(disk)], check=True)
    try:
        (disk / "ws").mkdir()
        yield disk / "ws"
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system for the test needs root")
def test_a_command_taking_the_hosts_disk_down_is_stopped_as_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workspace's file system stands in for the host's disk: 512 MiB, of which the command takes 400.
    # Without a disk of its own, where the workspace's writes land on the host's disk (a sandbox's own takes its
    # room when it opens: test_isolated_bounds.py).
    monkeypatch.setattr(_disk, "_found", [False])
    with _small_disk(tmp_path, "size=512m") as workspace, IsolatedSandboxFactory().open(workspace) as box:
        fill = "for i in $(seq 40); do head -c 10m /dev/zero > f$i; sleep 0.05; done; echo all-written"
        result = box.run(fill, env={}, timeout=60)
        assert result.disk_full and "all-written" not in result.stdout
        assert len(list(workspace.glob("f*"))) < 40
        assert not box.run("rm -f f*", env={}, timeout=30).disk_full


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system for the test needs root")
def test_a_command_taking_the_hosts_inodes_down_is_stopped_as_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Empty files take no space, only inodes: a file system of 60,000 inodes, of which the command wants 55,000.
    # Without a disk of its own (a sandbox's own has 137,000 inodes for 1 GiB: test_isolated_bounds.py).
    monkeypatch.setattr(_disk, "_found", [False])
    with (
        _small_disk(tmp_path, "size=512m,nr_inodes=60000") as workspace,
        IsolatedSandboxFactory().open(workspace) as box,
    ):
        spray = (
            "python3 -c \"import time\nfor i in range(55000):\n    open(f'f{i}', 'w').close()\n"
            "    i % 500 or time.sleep(0.01)\nprint('all-written')\""
        )
        result = box.run(spray, env={}, timeout=120)
        assert result.disk_full and "all-written" not in result.stdout
        assert len(list(workspace.glob("f*"))) < 55000


def test_a_shaped_sandbox_looks_like_a_developers_machine(factory: IsolatedSandboxFactory, tmp_path: Path) -> None:
    shape = Shape(user="maria", uid=1234, hostname="maria-laptop", folder="src", project="calc", first_pid=5000)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "given.txt").write_text("from the grader\n")
    probe = (
        "id -un; hostname; pwd; echo $HOME; cat given.txt; echo made > made.txt; ls -d /home/maria; "
        'echo "[${PYTHONHASHSEED-unset}] [${TZ-unset}] [${PYTHONDONTWRITEBYTECODE-unset}] [$USER]"; ulimit -f; '
        "echo $$; cat /proc/1/comm; cat /etc/hostname; cat /proc/net/dev"
    )
    with factory.shaped(shape).open(workspace) as sandbox:
        assert sandbox.workspace == "/home/maria/src/calc" and sandbox.runs_on(workspace)
        result = sandbox.run(probe, env={"KEPT": "1"}, timeout=30)
    lines = result.stdout.splitlines()
    assert result.exit_code == 0, result.stderr
    assert lines[1:6] == ["maria-laptop", "/home/maria/src/calc", "/home/maria", "from the grader", "/home/maria"]
    assert lines[6] == "[unset] [unset] [unset] [maria]"
    assert (workspace / "made.txt").read_text() == "made\n"  # the host's tree, at the developer's path
    if os.geteuid() == 0:
        assert lines[0] == "maria"
        assert lines[7] == ("unlimited" if cgroups_available() else str(32 * 1024 * 1024 // 512))
        assert int(lines[8]) >= 5000
        assert lines[9] != "bwrap"  # pid 1 is not the sandbox's reaper
        assert lines[10] == "maria-laptop"  # /etc/hostname names the host, as on a machine
        if shutil.which("ip"):
            assert "eth0:" in result.stdout


_LOGIN = (
    'python3 -c "import os, resource\n'
    "print(os.getsid(0), len(os.getgroups()), os.stat('/proc/1').st_uid, os.access('/proc/1/exe', os.R_OK))\n"
    "print(open('/proc/self/loginuid').read() == str(os.getuid()), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    "print(os.path.isdir('/run/user/%d' % os.getuid()), os.stat('/run/user/%d' % os.getuid()).st_uid == os.getuid()"
    ' if os.path.isdir(\'/run/user/%d\' % os.getuid()) else None)"; read given; echo "$given"; exit 7'
)
"""The session, how many supplementary groups, pid 1's owner and whether ``/proc/1/exe`` is readable; whether the login
uid is the user's and the soft limit of open files; whether ``/run/user/<uid>`` is there and the user's; then
standard input, and exit 7."""


@pytest.mark.skipif(os.geteuid() != 0, reason="a shaped run is a login's as root only")
def test_a_shaped_sandboxs_command_runs_as_a_logins_would(factory: IsolatedSandboxFactory, tmp_path: Path) -> None:
    with factory.shaped(Shape.drawn("calc")).open(tmp_path) as sandbox:
        shaped = sandbox.run(_LOGIN, env={}, timeout=30, stdin=b"given\n")
    with factory.open(tmp_path) as sandbox:
        plain = sandbox.run(_LOGIN, env={}, timeout=30, stdin=b"given\n")
    # A session of its own, a person's groups, a root-owned pid 1 it cannot look into, a login uid, 1,024 open files
    # (under a higher hard limit), its own /run/user/<uid>; its input and exit status pass through.
    session, groups, pid1_owner, pid1_readable = shaped.stdout.split()[:4]
    assert (int(session) != 1, int(groups) >= 2, pid1_owner, pid1_readable) == (True, True, "0", "False"), shaped
    assert shaped.stdout.splitlines()[1:] == ["True 1024", "True True", "given"] and shaped.exit_code == 7, shaped
    # The main run: pid 1's session, no groups, pid 1 the command's own, no login, no /run.
    session, groups, pid1_owner, pid1_readable = plain.stdout.split()[:4]
    assert (session, groups, pid1_owner != "0", pid1_readable) == ("1", "0", True, "True"), plain
    assert plain.stdout.splitlines()[1].startswith("False") and plain.stdout.splitlines()[2:] == ["False None", "given"]


def _capabilities(status: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (line.partition(":") for line in status.splitlines()) if k.startswith("Cap")}


@pytest.mark.skipif(os.geteuid() != 0, reason="a shaped run is a login's as root only")
def test_a_shaped_sandboxs_bounding_set_is_a_logins_and_grants_nothing(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    probe = "cat /proc/self/status"
    with factory.shaped(Shape.drawn("calc")).open(tmp_path) as sandbox:
        shaped = sandbox.run(probe, env={}, timeout=30)
    with factory.open(tmp_path) as sandbox:
        plain = sandbox.run(probe, env={}, timeout=30)
    ours = _capabilities(Path("/proc/self/status").read_text())
    held = {"CapInh": "0" * 16, "CapPrm": "0" * 16, "CapEff": "0" * 16, "CapAmb": "0" * 16}
    # A login's bounding set (the kernel's, as this process has it), and still no capability held, no privilege gained.
    assert _capabilities(shaped.stdout) == {**held, "CapBnd": ours["CapBnd"]}, shaped
    assert "NoNewPrivs:\t1" in shaped.stdout
    assert _capabilities(plain.stdout) == {**held, "CapBnd": "0" * 16}, plain


def test_a_shaped_sandboxs_dev_lists_a_machines_entries_and_reaches_no_more(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    probe = (
        "ls -A /dev | wc -l; ls -A /dev/disk | wc -l; test -e /dev/kvm || echo no-kvm; "
        "(readlink /dev/tty1 || echo none); cat /dev/tty3 2>/dev/null || echo unreadable; echo T$TERM; env | wc -l"
    )
    with factory.shaped(Shape.drawn("calc")).open(tmp_path) as sandbox:
        shaped = sandbox.run(probe, env={}, timeout=30).stdout.split()
    with factory.open(tmp_path) as sandbox:
        plain = sandbox.run(probe, env={}, timeout=30).stdout.split()
    assert int(shaped[0]) >= 100 and int(plain[0]) < 40
    assert shaped[1:5] == ["0", "no-kvm", "vc/1", "unreadable"] and shaped[5] not in ("T", "Tdumb")
    assert int(shaped[6]) >= 35 and int(plain[6]) < 20


@pytest.mark.skipif(os.geteuid() != 0, reason="a shaped run mounts /sys as root only")
def test_a_shaped_sandboxs_sys_is_a_read_only_sysfs_of_its_own_network(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    probe = "ls /sys/class/net | sort | tr '\\n' ' '; echo; touch /sys/made 2>/dev/null || echo refused; ls -d /sys"
    shape = Shape.drawn("calc")
    with factory.shaped(shape).open(tmp_path) as sandbox:
        shaped = sandbox.run(probe, env={}, timeout=30).stdout.splitlines()
    with factory.open(tmp_path) as sandbox:
        plain = sandbox.run(probe, env={}, timeout=30)
    links = set(shaped[0].split())
    # Its own links (lo and the shape's pair), none of the host's others (docker0, say).
    assert "lo" in links and not links & (set(os.listdir("/sys/class/net")) - {"lo", shape.interface}), shaped
    assert shaped[1:] == ["refused", "/sys"]
    assert "/sys" not in plain.stdout  # the main run's root has none


_FLAGS = (
    "python3 -c \"import os\nfor f in ('/', '/usr', '/etc', '.', os.environ['HOME'], '/tmp', '/proc'):\n"
    '    i = os.statvfs(f).f_flag; print(f, bool(i & os.ST_NOSUID), bool(i & os.ST_NODEV), bool(i & os.ST_RDONLY))"; '
    "grep NoNewPrivs /proc/self/status; touch /usr/made /etc/made 2>/dev/null || echo refused"
)
"""Whether ``/``, ``/usr``, ``/etc``, the workspace, ``HOME``, ``/tmp`` and ``/proc`` are ``nosuid``, ``nodev`` and
read-only, one line each; then ``no_new_privs``, and whether ``/usr`` and ``/etc`` refused a file."""


@pytest.mark.skipif(os.geteuid() != 0, reason="a shaped run remounts as root only")
def test_a_shaped_sandboxs_mounts_are_neither_nosuid_nor_nodev_where_a_machines_are_not(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    with factory.shaped(Shape.drawn("calc")).open(tmp_path) as sandbox:
        shaped = sandbox.run(_FLAGS, env={}, timeout=30).stdout.splitlines()
    with factory.open(tmp_path) as sandbox:
        plain = sandbox.run(_FLAGS, env={}, timeout=30).stdout.splitlines()
    flags = {line.split()[0]: line.split()[1:] for line in shaped[:7]}
    # No nosuid but on the kernel's file systems; no nodev on / and the system folders; read-only kept.
    assert flags.pop("/proc")[0] == "True", shaped
    assert [flags[f] for f in ("/", "/usr", "/etc")] == [
        ["False", "False", "False"],
        ["False", "False", "True"],
        ["False", "False", "True"],
    ], shaped
    # The workspace, HOME and /tmp (written by the command): not nosuid; nodev kept.
    assert [flags[f][:2] for f in list(flags)[3:]] == [["False", "True"]] * 3, shaped
    # Nothing opened by it: set-user-id bits are ignored (no_new_privs) and the system stays unwritable.
    assert shaped[7].split() == ["NoNewPrivs:", "1"] and shaped[8] == "refused", shaped
    # The main run's mounts are all nosuid and nodev, as bubblewrap makes them.
    assert all(line.split()[1:3] == ["True", "True"] for line in plain[:7]), plain


_DISKS = (
    "python3 -c \"import os\nfor f in ('.', '/', '/tmp', os.environ['HOME'], '/usr'):\n"
    "    i = os.statvfs(f)\n    print(i.f_blocks * i.f_frsize, i.f_files, os.stat(f).st_dev,"
    ' (i.f_blocks - i.f_bfree) * i.f_frsize, i.f_bavail * i.f_frsize)"'
    "; touch /made 2>/dev/null || echo root-refused"
)
"""The size, inode count, device, bytes in use and bytes free to a user of the workspace's, ``/``'s, ``/tmp``'s,
``HOME``'s and ``/usr``'s file systems, one line each, then whether ``/`` refused a file."""


@pytest.mark.skipif(not _disk.disk_available(), reason="sandboxes get no disk of their own here")
def test_a_shaped_sandboxs_disk_is_the_size_of_the_machines_and_holds_its_root(
    factory: IsolatedSandboxFactory, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = os.statvfs(workspace)
    with factory.shaped(Shape.drawn("calc")).open(workspace) as sandbox:
        shaped = sandbox.run(_DISKS, env={}, timeout=30)
    with factory.open(workspace) as sandbox:
        plain = sandbox.run(_DISKS, env={}, timeout=30)
    *disks, refused = shaped.stdout.splitlines()
    workspace_line, root_line, tmp_line, home_line, usr_line = disks
    # The workspace (an overlay over the host's tree), /tmp and HOME on a file system of the host's size, /tmp and
    # HOME on one device; / on /usr's (the system's own file system, as a machine's / and /usr are one device).
    sizes = {tuple(map(int, line.split()[:2])) for line in (workspace_line, tmp_line, home_line)}
    assert len(sizes) == 1 and refused == "root-refused", shaped.stdout
    assert tmp_line.split()[2] == home_line.split()[2]
    assert root_line.split()[2] == usr_line.split()[2], shaped.stdout
    ((size, inodes),) = sizes
    assert abs(size - host.f_blocks * host.f_frsize) < 0.01 * host.f_blocks * host.f_frsize
    # The host's inode count where it counts them (mke2fs rounds it up to whole groups; at most one per block).
    expected = min(host.f_files, size // 4096)
    assert abs(inodes - expected) < 0.01 * expected if host.f_files else inodes > 0
    # As much in use as on the host (up to TAKEN_MOST), and as much free to a user as that leaves (within 1% of its
    # size, less what mke2fs can keep for root: at most half), on the folders on its disk.
    used, free = int(tmp_line.split()[3]), int(tmp_line.split()[4])
    in_use = min((host.f_blocks - host.f_bfree) * host.f_frsize, _disk.TAKEN_MOST)
    assert abs(used - in_use) < 0.01 * size, shaped.stdout
    kept = min(host.f_bfree - host.f_bavail, host.f_blocks // 2) * host.f_frsize
    assert abs(free - (size - used - kept)) < 0.01 * size, shaped.stdout
    # The main run's disk is the task's 32 MiB, under the workspace; / is a file system of its own.
    main = [tuple(map(int, line.split())) for line in plain.stdout.splitlines()[:4]]
    assert main[0][0] < 64 * 1024 * 1024 and main[1][2] != main[0][2]


def test_an_unshaped_factory_is_left_as_it_was(factory: IsolatedSandboxFactory, tmp_path: Path) -> None:
    shaped = factory.shaped(Shape.drawn("calc"))
    assert factory.shape is None and shaped.shape is not None
    with factory.open(tmp_path) as sandbox:
        assert sandbox.workspace == str(tmp_path)
        assert sandbox.run("hostname", env={}, timeout=30).stdout.strip() == "sandbox"


@pytest.mark.skipif(not cgroups_available(), reason="pid 1 is bwrap's reaper where the command has no cgroups")
def test_pid_1_is_the_commands_own_shell_as_in_a_plain_container(box: IsolatedSandbox) -> None:
    # Read without an audited call (readlink, stat) or with one: nothing of pid 1 names bwrap or the sandbox's mounts.
    probe = (
        "python3 -c \"import os; print(os.readlink('/proc/1/exe')); print(open('/proc/1/comm').read().strip()); "
        "print(open('/proc/1/cmdline').read().replace(chr(0), ' '))\"; sleep 31.25 & setsid sleep 31.25 & echo started"
    )
    result = box.run(probe, env={}, timeout=30)
    exe, comm, cmdline, started = result.stdout.splitlines()
    assert (Path(exe).name, comm, started) == ("bash", "bash", "started"), result.stdout
    assert "bwrap" not in cmdline and "--bind" not in cmdline
    # That pid 1 outlives bwrap's own process: stopping the command still stops all of it.
    stopped = box.run("sleep 61.25 & setsid sleep 61.25 & sleep 61.25", env={}, timeout=1)
    assert stopped.timed_out
    left = subprocess.run(["pgrep", "-f", "^sleep (31|61)\\.25$"], capture_output=True, text=True, check=False).stdout
    assert not left.split(), left
