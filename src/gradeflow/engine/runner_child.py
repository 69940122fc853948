"""A warm runner's child (:mod:`gradeflow.engine.runner`): it takes its caller's place, runs the entry point
and exits as an interpreter does.

Taking the caller's place (:func:`run_child`): the caller's descriptors as 0, 1 and 2, its folder,
environment, umask, ``sys.path`` and arguments; new ``sys.std*`` streams over them; default signal handlers
(signals held back by the runner until then); a process group of its own, so that a Ctrl-C reaches the
command's own children as a terminal's would; Prefect's settings and loggers read again, from the caller's
environment (Prefect reads them once, at import, and the runner imported it). Then the entry point runs, and
the child exits as an interpreter does: non-daemon threads joined, exit handlers run, streams flushed.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn, TypedDict

__all__ = ["Call", "Entry", "run_child"]

Entry = Callable[[list[str]], int]
"""The command line's entry point: the arguments after the program's name in, the exit code out."""


class Call(TypedDict):
    """A call as its client sends it (JSON)."""

    argv: list[str]
    """The arguments after ``gradeflow``."""
    cwd: str
    env: dict[str, str]
    """The client's whole environment."""
    umask: int
    path: list[str]
    """The client's ``sys.path``."""


def run_child(
    entry: Entry,
    call: Call,
    fds: list[int],
    mask: set[int | signal.Signals],
    parent: int,
    let_go: Callable[[], None],
) -> NoReturn:
    """In the forked child: take the caller's place (``call``: its arguments, folder, environment, umask and
    ``sys.path``; ``fds``: its descriptors 0-2; ``mask``: the signal mask to restore; ``let_go`` closes what is
    the runner's), run ``entry`` and exit with its code. Never returns into the runner (``parent``)."""
    code = 1
    try:
        code = _entry(entry, _become(call, fds, mask, parent, let_go))
        with contextlib.suppress(Exception):
            threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except KeyboardInterrupt:
        code = _interrupted()
    except BaseException:
        code = _failed()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


_INTERRUPTS: list[int] = []
"""SIGINTs the child took: an interrupt whose ``KeyboardInterrupt`` a library turned into another exception (pydantic's
serializer wraps it in its own error) is still an interrupt."""


def _interrupt(signum: int, frame: object) -> None:
    """Python's own SIGINT handler (raise ``KeyboardInterrupt``), noting that it ran."""
    _INTERRUPTS.append(signum)
    signal.default_int_handler(signum, frame)  # type: ignore[arg-type]


def _entry(entry: Entry, argv: list[str]) -> int:
    """``entry(argv)``'s exit code as the interpreter would make it: ``SystemExit``'s code, a traceback and 1
    for an exception; an interrupt as the command reports one, whatever exception it became on its way out."""
    try:
        return entry(argv)
    except SystemExit as exc:
        return _exit_code(exc)
    except KeyboardInterrupt:
        return _interrupted()
    except BaseException:
        return _failed()


def _failed() -> int:
    """The exit code of the exception being handled: an interrupt's when a SIGINT came first (whatever the
    exception it became), else 1 after the interpreter's traceback."""
    if _INTERRUPTS:
        return _interrupted()
    with contextlib.suppress(BaseException):
        sys.excepthook(*sys.exc_info())
    return 1


def _interrupted() -> int:
    """Ctrl-C before the command's own handling (the child still taking the caller's place): as the command says it."""
    with contextlib.suppress(Exception):
        print("gradeflow: interrupted", file=sys.stderr)
    return 130


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def _become(
    call: Call, fds: list[int], mask: set[int | signal.Signals], parent: int, let_go: Callable[[], None]
) -> list[str]:
    """Take the caller's place (see the module's docstring); the arguments to run. A runner that is killed
    takes the child with it."""
    _die_with(parent)
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, _interrupt)
    let_go()
    for fd, target in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, target)
        os.close(fd)
    argv = list(call["argv"])
    os.chdir(call["cwd"])
    os.umask(call["umask"])
    os.environ.clear()
    os.environ.update(call["env"])
    sys.path[:] = call["path"]
    sys.argv = ["gradeflow", *argv]
    _standard_streams()
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    _reread_prefect()
    return argv


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when ``parent`` ends (Linux's PR_SET_PDEATHSIG), or end it now if it
    already has: a killed runner's calls cannot report their end, so they do not run on unseen."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _standard_streams() -> None:
    """``sys.stdin``, ``stdout`` and ``stderr`` on descriptors 0-2 (now the caller's), buffered as an
    interpreter would buffer them there: stdout line by line on a terminal, stderr always, neither with the
    caller's ``PYTHONUNBUFFERED``."""
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    streams = []
    for fd, like in ((0, sys.__stdin__), (1, sys.__stdout__), (2, sys.__stderr__)):
        encoding = getattr(like, "encoding", None) or "utf-8"
        errors = getattr(like, "errors", None) or "strict"
        if fd == 0:
            streams.append(open(0, encoding=encoding, errors=errors, closefd=False))  # noqa: SIM115
            continue
        raw = open(fd, "wb", buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
        line = fd == 2 or os.isatty(fd)
        streams.append(io.TextIOWrapper(raw, encoding, errors, line_buffering=line, write_through=unbuffered))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]


def _reread_prefect() -> None:
    """Prefect reads its settings (and configures its loggers from them) once, at import: again here, from the
    caller's environment, with Prefect's chatter kept to warnings as the command line keeps it."""
    if "prefect.context" not in sys.modules:
        return
    from prefect.context import refresh_global_settings_context
    from prefect.logging.configuration import setup_logging

    from gradeflow.logs import quiet_prefect

    quiet_prefect()
    refresh_global_settings_context()
    setup_logging(incremental=False)
