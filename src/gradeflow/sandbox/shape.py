"""How a varied run's sandbox looks like a developer's machine instead of the grader's (:class:`Shape`).

The main run's sandbox carries marks of its own: a user ``sandbox`` with a uid over 200,000, the host name
``sandbox``, a workspace under ``/tmp/tmp*``, ``HOME`` under another ``/tmp/tmp*``, no ``/home``,
``PYTHONHASHSEED``, ``PYTHONDONTWRITEBYTECODE``, ``TZ`` and ``LC_ALL`` set, a dozen variables where a developer's
shell has thirty and more, a ``/dev`` of 14 entries, a file-size limit. Code that behaves
only where it sees them passes its tests and fixes nothing. A varied run (:mod:`gradeflow.tasks.varied`) opens
its sandbox through :meth:`~gradeflow.sandbox.base.SandboxFactory.shaped` with a :class:`Shape` drawn for that
run: each kind of sandbox changes what it can of these and nothing an honest test sees (the tree's content,
relative paths, the Python environment, the task's own variables):

- isolated: all of the above (user, uid, host name, ``/home/<user>`` as ``HOME``, the tree at
  ``/home/<user>/<folder>/<project>``, the variables, a machine's ``/dev`` listing (:attr:`Shape.devices`) and
  root folders (``/run``, ``/mnt``, ``/sys``: :data:`MACHINE_FOLDERS`); no
  file-size limit where cgroups bound the run; as root,
  process ids from a drawn number on, a network link beside ``lo``, mounts that are not ``nosuid`` (nor ``nodev``
  where nothing of the run's was written), a login's session (its own session, groups, login uid,
  ``/run/user/<uid>``, 1,024 open files, a root-owned pid 1), and a disk of the host's size (the file
  system under the workspace's host folder: where the main run's is ``environment.disk``) that holds ``/``,
  ``/tmp`` and ``HOME`` too, as a machine's one disk does);
- docker: the host name and the variables (the image's user, ``HOME`` and ``/workspace`` stay);
- local (trusted code, no isolation): the variables only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

__all__ = ["MACHINE_FOLDERS", "UNSET_VARIABLES", "Shape"]

_USERS = (
    "alex", "anna", "ben", "carlos", "chen", "dana", "david", "elena", "emma", "felix", "hana", "ivan", "jakob",
    "julia", "kai", "laura", "leo", "lucas", "maria", "max", "mia", "nina", "omar", "paul", "priya", "raj",
    "sara", "sofia", "tom", "yuki",
)  # fmt: skip
_MACHINES = ("laptop", "desktop", "thinkpad", "workstation", "dev", "mbp", "xps", "box", "pc", "home")
_INTERFACES = ("eth0", "enp3s0", "enp0s31f6", "eno1", "wlp2s0", "wlan0")
_FOLDERS = ("src", "code", "projects", "work", "git", "dev", "repos")
_PATH_TAIL = ("/usr/games", "/usr/local/games", "/snap/bin", "~/.local/bin", "~/bin")
_EDITORS = ("vim", "nvim", "nano", "emacs", "code --wait")
_TERMS = ("xterm-256color", "xterm-256color", "screen-256color", "tmux-256color", "alacritty", "xterm-kitty")
_LS_COLORS = (
    "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:"
    "su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.zip=01;31:"
    "*.gz=01;31:*.bz2=01;31:*.xz=01;31:*.zst=01;31:*.deb=01;31:*.rpm=01;31:*.jpg=01;35:*.png=01;35:"
    "*.gif=01;35:*.svg=01;35:*.mp4=01;35:*.mkv=01;35:*.mp3=00;36:*.flac=00;36:*.ogg=00;36:*.wav=00;36:"
)
_DEVICE_FOLDERS = (
    "block", "bsg", "bus", "char", "cpu", "disk", "dma_heap", "dri", "hugepages", "input", "mapper", "mqueue", "net",
    "snd", "vfio",
)  # fmt: skip
_DEVICE_NAMES = (
    "autofs", "btrfs-control", "cpu_dma_latency", "cuse", "ecryptfs", "fb0", "fuse", "hpet", "hwrng", "kmsg",
    "kvm", "mcelog", "mem", "port", "ppp", "psaux", "rfkill", "snapshot", "tpm0", "tpmrm0", "udmabuf", "uhid",
    "uinput", "userfaultfd", "vcs", "vcsa", "vcsu", "vga_arbiter", "vhci", "vhost-net", "vhost-vsock", "zfs",
)  # fmt: skip
MACHINE_FOLDERS: tuple[tuple[str, bool], ...] = (
    ("/run", True),
    ("/run/lock", False),
    ("/run/user", False),
    ("/mnt", False),
    ("/media", False),
    ("/srv", False),
    ("/opt", False),
    ("/boot", False),
    ("/var", False),
    *((f"/var/{name}", False) for name in ("backups", "cache", "lib", "local", "log", "mail", "opt", "spool", "tmp")),
    ("/sys", False),
)
"""``(folder, whether a tmpfs of its own)``: folders every machine's root has (the Filesystem Hierarchy Standard's
top folders and ``/var``'s) and the isolated sandbox's lacks, made empty in a shaped run, in this order: code that
behaves only while ``/run`` or ``/var`` is missing sees it there, as on a developer's machine. ``/sys`` is then a
read-only sysfs of the run's own network namespace where the sandbox numbers its processes (as root, without the
network: :attr:`~gradeflow.sandbox._bwrap.View.machine`)."""
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
    session: tuple[tuple[str, str], ...] = ()
    """What a developer's login shell adds to the variables (:func:`session_variables`), drawn per run: none
    of it names anything a command could use (no display, bus, agent socket or tool's settings)."""

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
            session=session_variables(draw),
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
        session = {key: value.replace("~", self.home) for key, value in self.session}
        if "PATH" in shaped:
            shaped["PATH"] = self.path(shaped["PATH"])
        named = {"USER": self.user, "LOGNAME": self.user, "SHELL": "/bin/bash", "MAIL": f"/var/mail/{self.user}"}
        return {**session, **shaped, **named, **given}

    @property
    def devices(self) -> tuple[tuple[str, str | None], ...]:
        """What ``/dev`` lists besides a sandbox's few devices, as on a machine with hardware: ``(name, None)`` an
        empty folder, ``(name, target)`` a symbolic link to nothing (``os.path.exists`` is false, opening fails:
        no device is reachable that was not). Names that device-listing code globs for (serial ports, disks,
        loop devices, cameras, sound) are left out, so what it finds is what it found in the main run."""
        links = [(f"tty{n}", f"vc/{n}") for n in range(64)]
        links += [(name, f"char/{name}") for name in _DEVICE_NAMES]
        links += [("log", "/run/systemd/journal/dev-log"), ("initctl", "/run/initctl"), ("rtc", "rtc0")]
        return (*((name, None) for name in _DEVICE_FOLDERS), *links)

    def path(self, path: str) -> str:
        """``path`` (a sandbox's ``PATH``) as a developer's: the folders a login shell adds, after the
        sandbox's own, and none that a sandbox's root fills (a command found before is found first still)."""
        return ":".join((path, *(folder.replace("~", self.home) for folder in _PATH_TAIL)))


def session_variables(draw: secrets.SystemRandom) -> tuple[tuple[str, str], ...]:
    """A login shell's variables, over ssh or in a terminal of a desktop (``~`` stands for ``HOME``): some 35
    with the sandbox's, as in a developer's shell (a grader's command sees a dozen). Left out: what a command
    could act on and find nothing behind (``DISPLAY``, ``DBUS_SESSION_BUS_ADDRESS``, ``SSH_AUTH_SOCK``,
    ``XDG_RUNTIME_DIR``), what changes a tool's behaviour (``PIP_*``, ``VIRTUAL_ENV``, ``PYTHON*``, ``LANGUAGE``,
    ``LC_*``) and ``TERM=dumb``."""
    editor, number = draw.choice(_EDITORS), draw.randrange(1, 40)
    own = [
        ("TERM", draw.choice(_TERMS)),
        ("EDITOR", editor),
        ("VISUAL", editor),
        ("PAGER", "less"),
        ("LESS", "-R"),
        ("LESSOPEN", "| /usr/bin/lesspipe %s"),
        ("LESSCLOSE", "/usr/bin/lesspipe %s %s"),
        ("LS_COLORS", _LS_COLORS),
        ("HISTSIZE", str(draw.choice((1000, 5000, 10000, 100000)))),
        ("HISTFILESIZE", str(draw.choice((2000, 10000, 200000)))),
        ("HISTCONTROL", "ignoreboth"),
        ("SHLVL", str(draw.randrange(1, 3))),
        ("OLDPWD", "~"),
        ("XDG_SESSION_CLASS", "user"),
        ("XDG_SESSION_ID", str(number)),
        ("XDG_DATA_DIRS", "/usr/local/share:/usr/share:/var/lib/snapd/desktop"),
        ("XDG_CONFIG_DIRS", "/etc/xdg"),
        ("GPG_TTY", f"/dev/pts/{number % 8}"),
    ]
    if draw.random() < 0.5:
        client = f"192.168.{draw.randrange(0, 3)}.{draw.randrange(2, 250)}"
        port = draw.randrange(40000, 65000)
        own += [
            ("XDG_SESSION_TYPE", "tty"),
            ("MOTD_SHOWN", "pam"),
            ("SSH_CLIENT", f"{client} {port} 22"),
            ("SSH_CONNECTION", f"{client} {port} 192.168.1.{draw.randrange(2, 250)} 22"),
            ("SSH_TTY", f"/dev/pts/{number % 8}"),
        ]
    else:
        own += [
            ("XDG_SESSION_TYPE", draw.choice(("wayland", "x11"))),
            ("XDG_CURRENT_DESKTOP", draw.choice(("ubuntu:GNOME", "GNOME", "KDE", "XFCE"))),
            ("XDG_SESSION_DESKTOP", draw.choice(("ubuntu", "gnome", "KDE", "xfce"))),
            ("DESKTOP_SESSION", draw.choice(("ubuntu", "gnome", "plasma", "xfce"))),
            ("COLORTERM", "truecolor"),
            ("VTE_VERSION", str(draw.choice((6800, 7006, 7401)))),
        ]
    return tuple(own)
