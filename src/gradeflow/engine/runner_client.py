"""The client side of the warm runner: a one-shot command handed to a process that imported the engine once.

A ``gradeflow`` call that runs the engine (:data:`RUNNER_COMMANDS`) connects to the runner of its gradeflow home
(``$GRADEFLOW_HOME/runner/<key>.sock``, a Unix socket in a 0700 folder, its peer checked to be this user) and
sends its standard input, output and error (the descriptors themselves), its arguments, working folder, whole
environment, ``umask`` and ``sys.path``. The runner forks a child that takes them and runs the same entry point
(:mod:`gradeflow.engine.runner`); the child's exit code comes back and the client exits with it (or dies of
the signal that ended the child). SIGINT, SIGTERM and SIGHUP sent to the client are passed to the child; a
client that goes away has its child interrupted, then killed.

The first such call starts the runner (detached, its own session, logging to ``runner.log`` beside the
socket) and waits for it to listen. The key changes with the installed code (gradeflow's files, the
interpreter, the folders of ``sys.path``, the ``PYTHON*`` and locale variables), so changed code gets a new
runner, which stops the old one. Everything here is the standard library: a call through the runner never
imports pydantic or Prefect in the client.

Nothing is lost to a runner: if none can be reached or started, or one refuses the call before running it,
:func:`through_runner` answers ``None`` and the caller runs the command in-process. A runner that ends after
it accepted the call is an ``InfraError`` (exit 3): the command may have run in part.

``GRADEFLOW_RUNNER=off`` runs everything in-process; ``GRADEFLOW_RUNNER_IDLE`` is how many seconds a runner
waits for a call before it exits (600). A malformed value of either is a ``SpecError`` naming it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from gradeflow.config import cache_dir
from gradeflow.errors import InfraError, SpecError

__all__ = [
    "IDLE_VARIABLE",
    "RUNNER_COMMANDS",
    "RUNNER_VARIABLE",
    "RunnerRecord",
    "code_key",
    "idle_seconds",
    "install_id",
    "live_runners",
    "runner_enabled",
    "runner_folder",
    "stop_runners",
    "through_runner",
]

RUNNER_COMMANDS = frozenset({"grade", "validate", "evaluate", "run", "task"})
"""The commands that run the engine (Prefect flows) and go through the runner; the others stay in-process: they
import no Prefect (``schema``, ``report``...) or are long-lived services of their own (``serve``, ``webhook``)."""
RUNNER_VARIABLE = "GRADEFLOW_RUNNER"
IDLE_VARIABLE = "GRADEFLOW_RUNNER_IDLE"
DEFAULT_IDLE = 600.0
START_TIMEOUT = 120.0
"""Seconds a new runner may take to import the engine and listen (tens on a loaded 2-core machine)."""
ACCEPT_TIMEOUT = 30.0
"""Seconds a runner may take to fork the call's child; after that the call runs in-process."""
MAGIC = b"GFR1"
FRAME = struct.Struct("!ci")
"""Messages after the request: a tag and a number. Runner to client: ``P`` pid (the child runs), ``X`` exit
code, ``K`` the signal that killed the child. Client to runner: ``S`` a signal to pass on."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def runner_enabled() -> bool:
    """``GRADEFLOW_RUNNER``: ``on`` (the default, also when empty) or ``off``; ``SpecError`` otherwise."""
    value = os.environ.get(RUNNER_VARIABLE, "").strip().lower() or "on"
    if value not in ("on", "off"):
        raise SpecError(f"{RUNNER_VARIABLE}: {value!r} is not one of on, off")
    return value == "on"


def idle_seconds() -> float:
    """``GRADEFLOW_RUNNER_IDLE``: seconds a runner waits for a call before it exits (600); ``SpecError`` unless
    a positive number."""
    value = os.environ.get(IDLE_VARIABLE, "").strip()
    if not value:
        return DEFAULT_IDLE
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise SpecError(f"{IDLE_VARIABLE}: {value!r} is not a positive number of seconds")
    return seconds


def runner_folder() -> Path:
    """``$GRADEFLOW_HOME/runner``: the runners' sockets, records, start lock and log; this user's only (0700)."""
    folder = cache_dir() / "runner"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise OSError(f"{folder} belongs to another user")
    folder.chmod(0o700)
    return folder


def code_key() -> str:
    """A digest that changes with the code a runner would have imported: gradeflow's files (names, sizes,
    modification times), the interpreter, the folders on ``sys.path`` (a package installed or removed changes
    its folder's time) and the ``PYTHON*`` and locale variables, which an interpreter reads as it starts."""
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0".encode())
    package = Path(__file__).resolve().parents[1]
    for folder, folders, files in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            found = os.stat(os.path.join(folder, name))
            digest.update(f"{folder}/{name}\0{found.st_size}\0{found.st_mtime_ns}\0".encode(errors="replace"))
    for entry in sys.path[1:]:
        with contextlib.suppress(OSError):
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode(errors="replace"))
    for name in sorted(os.environ):
        if name.startswith("PYTHON") or name in ("LANG", "LC_ALL", "LC_CTYPE"):
            digest.update(f"{name}={os.environ[name]}\0".encode(errors="replace"))
    return digest.hexdigest()[:16]


def through_runner(argv: list[str], serve: list[str], beside: list[str] | None = None) -> int | None:
    """Run the command ``argv`` (the arguments after ``gradeflow``) in the warm runner and return its exit
    code; ``None`` when no runner took it (the caller runs it in-process). ``serve`` is the command that
    starts a runner, given its key and the descriptor it writes ``1`` to once it listens; ``beside``, a
    command started with it when one must be started (the local Prefect server's start, which then overlaps
    the runner's imports). ``SpecError`` for a malformed setting, ``InfraError`` when the runner ended while
    the command ran."""
    if not runner_enabled():
        return None
    idle_seconds()
    if not hasattr(socket, "SO_PEERCRED"):  # not Linux: no peer check, no child that dies with its runner
        return None
    try:
        request = _request(argv)
        folder = runner_folder()
        conn = _connect_or_start(folder, code_key(), serve, beside)
    except OSError:
        return None
    if conn is None:
        return None
    with conn:
        return _converse(conn, request, folder)


def _request(argv: list[str]) -> bytes:
    """The call as JSON (lone surrogates of undecodable names kept as escapes): what the child takes over."""
    mask = os.umask(0o022)
    os.umask(mask)
    call = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask, "path": sys.path}
    return json.dumps(call).encode("ascii")


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """In ``folder`` for the block: socket names are used relative to it, short whatever the home's path."""
    back = os.open(".", os.O_RDONLY)
    try:
        os.chdir(folder)
        yield
    finally:
        os.fchdir(back)
        os.close(back)


def _connect(folder: Path, key: str) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _inside(folder):
            conn.connect(f"{key}.sock")
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
        if uid != os.getuid():
            raise OSError("the runner's socket is held by another user")
    except OSError:
        conn.close()
        return None
    return conn


def _connect_or_start(folder: Path, key: str, serve: list[str], beside: list[str] | None) -> socket.socket | None:
    conn = _connect(folder, key)
    if conn is not None:
        return conn
    with (folder / "start.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one call starts the runner; the others wait for it and connect
        conn = _connect(folder, key)
        if conn is None and _start(folder, key, serve, beside):
            conn = _connect(folder, key)
    return conn


def _start(folder: Path, key: str, serve: list[str], beside: list[str] | None) -> bool:
    """Start a runner for ``key`` (and ``beside`` with it) and wait until it listens (or ends, or
    :data:`START_TIMEOUT` passes)."""
    import subprocess

    (folder / f"{key}.sock").unlink(missing_ok=True)
    ready, told = os.pipe()
    try:
        with (folder / "runner.log").open("ab") as log:
            if beside is not None:
                detached = {"stdin": subprocess.DEVNULL, "stdout": log, "stderr": log, "start_new_session": True}
                subprocess.Popen(beside, **detached)  # type: ignore[call-overload]
            subprocess.Popen(
                [*serve, key, str(told)],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(told,),
                start_new_session=True,
            )
        os.close(told)
        told = -1
        answered, _, _ = select.select([ready], [], [], START_TIMEOUT)
        return bool(answered) and os.read(ready, 1) == b"1"
    finally:
        os.close(ready)
        if told >= 0:
            os.close(told)


def _standard_fds() -> list[int]:
    """Descriptors 0, 1 and 2, each replaced by ``/dev/null`` where this process has it closed."""
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def _converse(conn: socket.socket, request: bytes, folder: Path) -> int | None:
    """Send the call, then wait for its end, passing signals on; ``None`` when the runner did not take it."""
    forwarder = _Forwarder(conn)
    previous = {sig: signal.signal(sig, forwarder) for sig in FORWARDED}
    try:
        if not _send(conn, request):
            return None
        forwarder.pass_on()
        try:
            tag, number = _frame(conn)
        except OSError:
            tag, number = b"", 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for held in forwarder.held or ():  # the call stays here: so do the signals that came meanwhile
            os.kill(os.getpid(), held)
    if tag == b"X":
        return number
    if tag == b"K":
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return 128 + number
    raise InfraError(f"the warm runner ended while it ran the command; see {folder / 'runner.log'}")


def _send(conn: socket.socket, request: bytes) -> bool:
    """Send the descriptors and the call; whether the runner answered that the child runs."""
    fds = _standard_fds()
    try:
        conn.settimeout(ACCEPT_TIMEOUT)
        socket.send_fds(conn, [MAGIC + struct.pack("!I", len(request))], fds)
        conn.sendall(request)
        tag, _ = _frame(conn)
    except OSError:
        return False
    finally:
        for fd, standard in zip(fds, (0, 1, 2), strict=True):
            if fd != standard:
                os.close(fd)
    conn.settimeout(None)
    return tag == b"P"


class _Forwarder:
    """The handler of :data:`FORWARDED` while a call is out: a signal is held until the child runs, then
    passed on to it through the runner."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.held: list[int] | None = []
        """Signals that came before the child ran; ``None`` once they are passed on."""

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.held is not None:
            self.held.append(signum)
            return
        with contextlib.suppress(OSError):
            self.conn.sendall(FRAME.pack(b"S", signum))

    def pass_on(self) -> None:
        held, self.held = self.held or [], None
        for signum in held:
            self(signum, None)


def _frame(conn: socket.socket) -> tuple[bytes, int]:
    data = b""
    while len(data) < FRAME.size:
        chunk = conn.recv(FRAME.size - len(data))
        if not chunk:
            raise ConnectionResetError("the runner closed the connection")
        data += chunk
    tag, number = FRAME.unpack(data)
    return tag, number


class RunnerRecord:
    """A runner as its ``<key>.json`` has it: pid, key, the install it serves and when it started."""

    def __init__(self, path: Path, fields: dict[str, object]) -> None:
        self.path = path
        self.pid = int(str(fields["pid"]))
        self.key = str(fields["key"])
        self.install = str(fields.get("install", ""))
        self.started = float(str(fields.get("started", 0)))

    def alive(self) -> bool:
        """Whether the recorded process still runs and is this runner (this user's process with the runner's
        key among its arguments, not another process given its pid)."""
        try:
            command = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
            owner = os.stat(f"/proc/{self.pid}").st_uid
        except OSError:
            return False
        return owner == os.getuid() and self.key.encode() in command


def install_id() -> str:
    """Which installation a runner serves (the interpreter and gradeflow's folder): a newer runner of the
    same one replaces it."""
    package = Path(__file__).resolve().parents[1]
    return hashlib.sha256(f"{sys.executable}\0{package}".encode()).hexdigest()[:16]


def live_runners(folder: Path) -> list[RunnerRecord]:
    """The runners recorded in ``folder`` that still run; the records of dead ones are removed."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = RunnerRecord(path, json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError):
            continue
        if record.alive():
            found.append(record)
        else:
            path.unlink(missing_ok=True)
            (folder / f"{record.key}.sock").unlink(missing_ok=True)
    return found


def stop_runners(runners: list[RunnerRecord], wait: float = 10.0) -> None:
    """SIGTERM ``runners``: each stops listening at once and exits when the calls it runs have ended. Returns
    when their records are gone (or after ``wait`` seconds)."""
    for runner in runners:
        with contextlib.suppress(ProcessLookupError):
            os.kill(runner.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(r.path.exists() and r.alive() for r in runners):
        time.sleep(0.05)
