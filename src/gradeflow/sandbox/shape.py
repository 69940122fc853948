"""How a varied run's sandbox looks like a developer's machine instead of the grader's (:class:`Shape`).

The main run's sandbox carries marks of its own: a user ``sandbox`` with a uid over 200,000, the host name
``sandbox``, a workspace under ``/tmp/tmp*``, ``HOME`` under another ``/tmp/tmp*``, no ``/home``,
``PYTHONHASHSEED``, ``PYTHONDONTWRITEBYTECODE``, ``TZ`` and ``LC_ALL`` set, a file-size limit. Code that behaves
only where it sees them passes its tests and fixes nothing. A varied run (:mod:`gradeflow.tasks.varied`) opens
its sandbox through :meth:`~gradeflow.sandbox.base.SandboxFactory.shaped` with a :class:`Shape` drawn for that
run: each kind of sandbox changes what it can of these and nothing an honest test sees (the tree's content,
relative paths, the Python environment, the task's own variables):

- isolated: all of the above (user, uid, host name, ``/home/<user>`` as ``HOME``, the tree at
  ``/home/<user>/<folder>/<project>``, the variables; no file-size limit where cgroups bound the run; as root,
  process ids from a drawn number on and a network link beside ``lo``);
- docker: the host name and the variables (the image's user, ``HOME`` and ``/workspace`` stay);
- local (trusted code, no isolation): the variables only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

__all__ = ["UNSET_VARIABLES", "Shape"]

_USERS = (
    "alex", "anna", "ben", "carlos", "chen", "dana", "david", "elena", "emma", "felix", "hana", "ivan", "jakob",
    "julia", "kai", "laura", "leo", "lucas", "maria", "max", "mia", "nina", "omar", "paul", "priya", "raj",
    "sara", "sofia", "tom", "yuki",
)  # fmt: skip
_MACHINES = ("laptop", "desktop", "thinkpad", "workstation", "dev", "mbp", "xps", "box", "pc", "home")
_INTERFACES = ("eth0", "enp3s0", "enp0s31f6", "eno1", "wlp2s0", "wlan0")
_FOLDERS = ("src", "code", "projects", "work", "git", "dev", "repos")
UNSET_VARIABLES = ("PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "TZ", "LC_ALL")
"""Variables every sandbox sets for its runs that a shaped run leaves out (unless the task's ``env`` sets them):
Python then draws its own hash seed and caches bytecode (in the run's disposable copies), the time zone is the
system's, the locale ``LANG``'s."""


@dataclass(frozen=True)
class Shape:
    """What a varied run's sandbox looks like, drawn per run by :meth:`drawn`."""

    user: str
    """The user's name (``USER``, ``LOGNAME``, ``/etc/passwd``)."""
    uid: int
    """The user's uid and gid where the sandbox chooses them (isolated, as root): a person's range."""
    hostname: str
    folder: str
    """The folder of the user's home that holds the checkout (``src``, ``projects`` ...)."""
    project: str
    """The checkout's folder name."""
    first_pid: int = 4000
    """Where the sandbox numbers the run's processes from, where it can (isolated, as root): no longer 2, 3, 4."""
    interface: str = "eth0"
    """A network link the sandbox adds beside ``lo`` where it can (isolated, as root), leading nowhere."""

    @classmethod
    def drawn(cls, project: str) -> Shape:
        """New random values; ``project`` names the checkout (only letters, digits, ``-``, ``_`` and ``.`` kept)."""
        draw = secrets.SystemRandom()
        user = draw.choice(_USERS)
        hostname = draw.choice((f"{user}-{draw.choice(_MACHINES)}", f"{draw.choice(_MACHINES)}{draw.randrange(1, 99)}"))
        name = "".join(c for c in project if c.isalnum() or c in "-_.").strip(".") or "project"
        return cls(
            user=user,
            uid=draw.randrange(1000, 30000),
            hostname=hostname,
            folder=draw.choice(_FOLDERS),
            project=name[:40],
            first_pid=draw.randrange(1200, 30000),
            interface=draw.choice(_INTERFACES),
        )

    @property
    def home(self) -> str:
        return f"/home/{self.user}"

    @property
    def workspace(self) -> str:
        """Where the tree is inside a sandbox that can move it."""
        return f"{self.home}/{self.folder}/{self.project}"

    def variables(self, env: dict[str, str], given: dict[str, str]) -> dict[str, str]:
        """``env`` (a sandbox's variables for a command) as a developer's shell has them: the user named,
        :data:`UNSET_VARIABLES` left out unless the command's ``given`` variables set them."""
        shaped = {key: value for key, value in env.items() if key not in UNSET_VARIABLES or key in given}
        return {**shaped, "USER": self.user, "LOGNAME": self.user, "SHELL": "/bin/bash", **given}
