"""The warm runner: one process per gradeflow home and installed code that imported the engine once and forks
a child for every one-shot call (the client side and the protocol: :mod:`gradeflow.engine.runner_client`).

The runner imports what the commands need (Prefect, gradeflow's flows, models and commands) and starts no
thread: a fork is only safe in a process with one thread, and :func:`serve` refuses to listen otherwise. It
then listens on ``<key>.sock`` in its folder (0600, peers of another user refused by their SO_PEERCRED),
records itself in ``<key>.json``, stops the runners of the same installation under another key (older code)
and answers calls in parallel, one child each, which becomes its caller's process as far as the command can
tell (:mod:`gradeflow.engine.runner_child`).

The runner watches each caller's connection: a signal the caller passes on goes to the child (SIGINT to its
whole process group, as a terminal's Ctrl-C would), and a caller that goes away has its child's group
interrupted, then killed :data:`KILL_AFTER` seconds later. The child's exit code (or the signal that ended
it) goes back to the caller.

It exits after ``GRADEFLOW_RUNNER_IDLE`` seconds without a call, when its socket is gone or replaced (the
home was removed), and on SIGTERM or SIGINT, which stop it listening at once: the calls running finish first.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gradeflow.engine.runner_child import Call, Entry, run_child
from gradeflow.engine.runner_client import FRAME, MAGIC, idle_seconds, install_id, live_runners, stop_runners

__all__ = ["serve"]

KILL_AFTER = 10.0
"""Seconds between interrupting the child of a caller that went away and killing its process group."""
TICK = 2.0
"""Seconds between checks that the socket is still there and the idle time not yet over."""
REQUEST_TIMEOUT = 10.0
HELD = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
"""The signals the runner handles itself (through its wake-up pair): held back while a child is forked."""


@dataclass
class _Running:
    """A call being run: its client's connection, its child and when that child's group is to be killed."""

    conn: socket.socket
    pid: int
    command: str
    kill_at: float | None = None


@dataclass
class _Runner:
    """The runner's state: what it listens on, its wake-up pair, the calls it runs, why it is stopping."""

    key: str
    entry: Entry
    folder: Path
    listener: socket.socket
    wake: socket.socket
    wake_write: socket.socket
    """The write end of the signal module's wake-up pair: held for as long as the runner runs."""
    selector: selectors.BaseSelector
    idle: float
    inode: int
    pid: int = field(default_factory=os.getpid)
    calls: dict[int, _Running] = field(default_factory=dict)
    stopping: str | None = None
    last_call: float = field(default_factory=time.monotonic)


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} runner {os.getpid()}: {message}", file=sys.stderr, flush=True)


def serve(key: str, entry: Entry, ready_fd: int, warm: Callable[[], None]) -> int:
    """Run the runner of ``key`` in the current folder: ``warm()`` imports the modules, then calls are served
    until the runner stops; ``"1"`` is written to ``ready_fd`` once it listens. The exit code of the process."""
    started = time.monotonic()
    warm()
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:
        _log(f"not serving: importing started threads {threads}; forking would copy them half-run")
        return 1
    import gc

    gc.freeze()  # the imported objects stay shared with the children, untouched by their collections
    runner = _listen(key, entry)
    _record(runner)
    with contextlib.suppress(OSError):
        os.write(ready_fd, b"1")
    os.close(ready_fd)
    _log(f"serving {key} (imports {time.monotonic() - started:.2f} s, idle exit after {runner.idle:g} s)")
    older = [r for r in live_runners(runner.folder) if r.key != key and r.install == install_id()]
    stop_runners(older, wait=0)
    _loop(runner)
    _log(f"exiting: {runner.stopping}")
    return 0


def _listen(key: str, entry: Entry) -> _Runner:
    folder = Path.cwd()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(f"{key}.sock")
    finally:
        os.umask(mask)
    listener.listen(64)
    listener.setblocking(False)
    wake, wake_write = socket.socketpair()
    wake.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    for sig in HELD:
        signal.signal(sig, lambda signum, frame: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake, selectors.EVENT_READ)
    inode = os.stat(f"{key}.sock").st_ino
    return _Runner(key, entry, folder, listener, wake, wake_write, selector, idle_seconds(), inode)


def _record(runner: _Runner) -> None:
    fields = {"pid": os.getpid(), "key": runner.key, "install": install_id(), "started": time.time()}
    staged = Path(f"{runner.key}.json.{os.getpid()}")
    staged.write_text(json.dumps(fields), encoding="utf-8")
    staged.replace(f"{runner.key}.json")


def _loop(runner: _Runner) -> None:
    next_check = 0.0
    while runner.stopping is None or runner.calls:
        for ready, _ in runner.selector.select(timeout=TICK):
            if ready.fileobj is runner.listener:
                _accept(runner)
            elif ready.fileobj is runner.wake:
                _signalled(runner)
            else:
                _from_caller(runner, ready.data)
        now = time.monotonic()
        if now >= next_check:
            next_check = now + TICK
            _check(runner, now)


def _signalled(runner: _Runner) -> None:
    with contextlib.suppress(BlockingIOError):
        received = runner.wake.recv(64)
        if any(sig in received for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)):
            _stop_listening(runner, "asked to stop")
    _reap(runner)


def _check(runner: _Runner, now: float) -> None:
    for call in runner.calls.values():
        if call.kill_at is not None and now >= call.kill_at:
            with contextlib.suppress(OSError):
                os.killpg(call.pid, signal.SIGKILL)
            call.kill_at = None
    if runner.stopping is not None:
        return
    try:
        gone = os.stat(f"{runner.key}.sock").st_ino != runner.inode
    except OSError:
        gone = True
    if gone:
        _stop_listening(runner, "its socket is gone (the home was removed or another runner took its place)")
    elif not runner.calls and now - runner.last_call >= runner.idle:
        _stop_listening(runner, f"no call for {runner.idle:g} s")


def _stop_listening(runner: _Runner, why: str) -> None:
    if runner.stopping is not None:
        return
    runner.stopping = why
    runner.selector.unregister(runner.listener)
    with contextlib.suppress(OSError):
        if os.stat(f"{runner.key}.sock").st_ino == runner.inode:
            os.unlink(f"{runner.key}.sock")
            os.unlink(f"{runner.key}.json")
    runner.listener.close()


def _accept(runner: _Runner) -> None:
    try:
        conn, _ = runner.listener.accept()
    except BlockingIOError:
        return
    runner.last_call = time.monotonic()
    fds: list[int] = []
    try:
        peer = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        conn.settimeout(REQUEST_TIMEOUT)
        header, fds, _, _ = socket.recv_fds(conn, len(MAGIC) + 4, 3)
        if peer[1] != os.getuid() or len(fds) != 3 or len(header) != len(MAGIC) + 4 or header[:4] != MAGIC:
            raise ValueError("not a call from this user")
        call: Call = json.loads(_exactly(conn, struct.unpack("!I", header[4:])[0]).decode("ascii"))
    except (OSError, ValueError) as exc:
        _log(f"refused a connection: {type(exc).__name__}")
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    _fork(runner, conn, fds, call)


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ValueError("the call ended early")
        data += chunk
    return bytes(data)


def _fork(runner: _Runner, conn: socket.socket, fds: list[int], call: Call) -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # Signals wait until the child has its own handlers (and the runner's wake-up pair is no longer its own).
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    pid = os.fork()
    if pid == 0:
        run_child(runner.entry, call, fds, mask, runner.pid, lambda: _close_all(runner, conn))
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    with contextlib.suppress(OSError):  # the child does the same: whichever runs first
        os.setpgid(pid, pid)
    for fd in fds:
        os.close(fd)
    command = str(call["argv"][0]) if call.get("argv") else "?"
    runner.calls[pid] = _Running(conn, pid, command)
    _log(f"call {pid}: {command}")
    try:
        conn.settimeout(None)
        conn.sendall(FRAME.pack(b"P", pid))
    except OSError:
        _caller_gone(runner, runner.calls[pid])
        return
    conn.setblocking(False)
    runner.selector.register(conn, selectors.EVENT_READ, pid)


def _close_all(runner: _Runner, conn: socket.socket) -> None:
    """In a child: let go of the runner's selector and sockets (the listener, the wake-up pair, every call's)."""
    runner.selector.close()
    for sock in (runner.listener, runner.wake, runner.wake_write, conn, *(c.conn for c in runner.calls.values())):
        sock.close()


def _from_caller(runner: _Runner, pid: int) -> None:
    call = runner.calls[pid]
    try:
        data = call.conn.recv(FRAME.size)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if len(data) == FRAME.size and FRAME.unpack(data)[0] == b"S":
        signum = FRAME.unpack(data)[1]
        with contextlib.suppress(OSError):
            # Ctrl-C reaches a terminal's whole foreground group; the other signals only the process.
            os.killpg(pid, signum) if signum == signal.SIGINT else os.kill(pid, signum)
        return
    _caller_gone(runner, call)


def _caller_gone(runner: _Runner, call: _Running) -> None:
    with contextlib.suppress(KeyError, ValueError):
        runner.selector.unregister(call.conn)
    call.conn.close()
    if call.kill_at is None:
        _log(f"call {call.pid}: its caller went away; interrupting it")
        with contextlib.suppress(OSError):
            os.killpg(call.pid, signal.SIGINT)
        call.kill_at = time.monotonic() + KILL_AFTER


def _reap(runner: _Runner) -> None:
    while runner.calls:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        call = runner.calls.pop(pid, None)
        if call is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        _log(f"call {pid}: {call.command} exited {code}")
        runner.last_call = time.monotonic()
        with contextlib.suppress(KeyError, ValueError):
            runner.selector.unregister(call.conn)
        with contextlib.suppress(OSError):
            call.conn.setblocking(True)
            call.conn.sendall(FRAME.pack(b"X", code) if code >= 0 else FRAME.pack(b"K", -code))
        call.conn.close()
