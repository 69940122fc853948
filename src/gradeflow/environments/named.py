"""Host folders a task names, shown read-only to the isolated sandbox; what it cannot see, refused at load.

A task may run on things of this host outside gradeflow's view: a virtual environment holding the
project's test dependencies (``/opt/venvs/proj/bin/python -m pytest``), an interpreter built elsewhere, a
data folder. The sandbox shows, read-only at their own paths:

- the folders in ``environment.mounts``;
- every absolute path a command of the task names (``tests.command``, ``tests.evidence_command``, ``setup``,
  ``environment.shared_setup``, ``perf.command``, ``perf.check``), as a word or in a variable's value
  (``PYTHONPATH=/a:/b``): a virtual
  environment by its whole folder (the one holding ``pyvenv.cfg``) and the interpreter it was made from;
  another file by its folder; a folder by itself.

Refused with one :class:`~gradeflow.errors.SpecError` line, before anything runs: a program the sandbox will
not see (absent on this host, on a ``host`` root), and any named folder that holds, or lies inside,
gradeflow's own state (its home, Prefect's home, the roots), the task's files (its folder, the hidden tests,
the repository it is copied from) or the host's sockets (``/run``).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from gradeflow.config import cache_dir
from gradeflow.environments.roots import roots_dir
from gradeflow.errors import SpecError
from gradeflow.models import TaskSpec

__all__ = ["Shown", "interpreter_site_folders", "named_interpreters", "shown_folders"]

_SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/dev", "/proc", "/sys")
"""Paths every sandbox has its own of: never bound from the host by name."""
_OWN = ("/tmp", "/var/tmp")
"""Folders every sandbox has its own of, though a folder inside them may be named (a venv under ``/tmp``)."""
_SOCKETS = ("/run", "/var/run")
_WRAPPERS = {"env", "exec", "nice", "time", "timeout", "nohup", "command", "xvfb-run", "stdbuf"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(.*)$", re.DOTALL)
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "\n", "|&"}


@dataclass(frozen=True)
class Shown:
    """What the isolated sandbox shows of this host for one task, beyond its own folders."""

    folders: tuple[str, ...]
    """Host folders bound read-only at their own paths."""
    interpreters: tuple[str, ...]
    """Python prefixes among them (virtual environments, standalone installs) whose interpreters get the
    harness's site folder (:func:`interpreter_site_folders`)."""


def _commands(task: TaskSpec) -> list[tuple[str, str]]:
    found = [("tests.command", task.tests.command), ("tests.evidence_command", task.tests.evidence_command)]
    found.append(("setup", task.setup))
    found.append(("environment.shared_setup", task.environment.shared_setup))
    if task.perf is not None:
        found += [("perf.command", task.perf.command), ("perf.check", task.perf.check)]
    return [(where, text) for where, text in found if text]


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the shell will say so; take the plain words
        return command.split()


def _named(command: str) -> list[tuple[str, bool]]:
    """``(absolute path, in a program's place)`` for every absolute path ``command`` names."""
    named: list[tuple[str, bool]] = []
    program_next, wrapper_seen, previous = True, False, ""
    for word in _words(command):
        if word in _SEPARATORS or set(word) <= set(";&|()"):
            program_next, wrapper_seen, previous = True, False, ""
            continue
        assigned = _ASSIGNMENT.match(word)
        if assigned:
            named += [(p, False) for p in assigned.group(1).split(":") if p.startswith("/")]
            continue
        if word.startswith("/") and "{" not in word and "$" not in word:
            named.append((os.path.normpath(word), program_next))
        # A wrapper's options (``env -u NAME``, ``timeout 60``) come before the program it runs.
        wrapped = word in _WRAPPERS or word.startswith("-") or previous in ("-u", "--unset") or word.isdigit()
        program_next = program_next and wrapped and (word in _WRAPPERS or wrapper_seen)
        wrapper_seen = wrapper_seen or word in _WRAPPERS
        previous = word
    return named


def _venv_of(path: Path) -> Path | None:
    """The virtual environment (or Python prefix) ``path`` lies in: the nearest folder up with ``pyvenv.cfg``."""
    for folder in [path, *path.parents][:6]:
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def _base_prefix(venv: Path) -> Path | None:
    """The prefix of the interpreter ``venv`` was made from (``home`` in its ``pyvenv.cfg``)."""
    for line in (venv / "pyvenv.cfg").read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            return Path(value.strip()).resolve().parent
    return None


def _python_prefix(program: Path) -> Path | None:
    """For ``…/bin/python3.9`` outside a venv, the install's prefix (where its ``lib/python3.*`` is)."""
    if not re.fullmatch(r"python[0-9.]*", program.name) or program.parent.name != "bin":
        return None
    prefix = program.resolve().parent.parent
    return prefix if any(prefix.glob("lib/python3*/site-packages")) else None


def _protected(task: TaskSpec) -> list[tuple[str, str]]:
    places = [(str(cache_dir().resolve()), "gradeflow's home"), (str(roots_dir().resolve()), "gradeflow's roots")]
    if os.environ.get("PREFECT_HOME"):
        places.append((str(Path(os.environ["PREFECT_HOME"]).resolve()), "Prefect's home"))
    places.append((str((Path.home() / ".prefect").resolve()), "Prefect's home"))
    for path, what in (
        (task.repo, "the task's repository"),
        (task.tests.hidden, "the hidden tests"),
        (task.tests.hidden_patch, "the hidden tests"),
        (task.issue_file, "the task's files"),
    ):
        if path and path.startswith("/"):
            places.append((str(Path(path).resolve()), what))
    places += [(s, "the host's sockets") for s in _SOCKETS]
    return places


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _system(path: str) -> bool:
    return path in _OWN or any(_overlaps_down(path, s) for s in _SYSTEM)


def _overlaps_down(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder + "/")


def shown_folders(task: TaskSpec, *, host_root: bool = True, visible: tuple[str, ...] = ()) -> Shown:
    """The host folders the isolated sandbox shows for ``task``; ``SpecError`` naming what and where.

    ``host_root``: commands run on this host's system (a program named in a command must exist here);
    ``visible``: folders the sandbox shows anyway (gradeflow's interpreter), not bound again.
    """
    folders: dict[str, str] = {}
    interpreters: dict[str, None] = {}
    for folder in task.environment.mounts:
        if not Path(folder).is_dir():
            raise SpecError(f"environment.mounts: {folder} is not a folder on this host (task {task.task_id})")
        folders[str(Path(folder).resolve())] = "environment.mounts"
    for where, command in _commands(task):
        for path, program in _named(command):
            if _system(path) or any(_overlaps_down(path, v) for v in visible):
                continue
            host = Path(path)
            if not host.exists():
                if program and host_root:
                    raise SpecError(
                        f"{where}: runs {path}, which does not exist on this host, so the sandbox cannot show it "
                        f"(task {task.task_id}); create it, fix the path, or give the task a root that has it "
                        "(environment.root)"
                    )
                continue
            venv = _venv_of(host) if program else None
            prefix = venv or (_python_prefix(host) if program else None)
            if prefix is not None:
                interpreters[str(prefix.resolve())] = None
                folders[str(prefix.resolve())] = where
                base = _base_prefix(prefix) if venv is not None else None
                if base is not None and not _system(str(base)):
                    folders[str(base)] = where
            else:
                shown = host.resolve() if host.is_dir() else host.resolve().parent
                folders[str(shown)] = where
    _refuse_protected(task, folders)
    kept = sorted(f for f in folders if not any(_overlaps_down(f, o) for o in folders if o != f))
    kept = [f for f in kept if not any(_overlaps_down(f, v) for v in visible)]
    return Shown(folders=tuple(kept), interpreters=tuple(sorted(interpreters)))


def _refuse_protected(task: TaskSpec, folders: dict[str, str]) -> None:
    protected = _protected(task)
    for folder, where in folders.items():
        if folder == "/":
            raise SpecError(f"{where}: names / (the whole host), which the sandbox never shows (task {task.task_id})")
        for place, what in protected:
            if _overlaps(folder, place):
                raise SpecError(
                    f"{where}: names {folder}, which holds or lies in {what}; the sandbox never shows it "
                    f"(task {task.task_id})"
                )


def named_interpreters(task: TaskSpec, *, visible: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Python prefixes of this host (virtual environments, standalone installs) whose interpreters ``task``'s
    commands run by path, outside the ``visible`` folders (gradeflow's own interpreter): the ones the local sandbox
    joins to the harness (the isolated sandbox finds them in :attr:`Shown.interpreters`)."""
    found: dict[str, None] = {}
    for _, command in _commands(task):
        for path, program in _named(command):
            if not program or _system(path) or any(_overlaps_down(path, v) for v in visible):
                continue
            host = Path(path)
            prefix = (_venv_of(host) or _python_prefix(host)) if host.exists() else None
            if prefix is not None:
                found[str(prefix.resolve())] = None
    return tuple(sorted(found))


def interpreter_site_folders(prefix: str) -> list[str]:
    """The site-packages folders of the Python prefix or virtual environment ``prefix``."""
    return sorted(str(p) for p in Path(prefix).glob("lib/python3*/site-packages") if p.is_dir())
