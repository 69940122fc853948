"""The network of an isolated command that asks for one: a namespace of its own, slirp4netns its only way out.

bwrap makes the command's network namespace as it does for every command (a private loopback) and writes
the namespace's first process to ``--info-fd``. Once bwrap is done (the wrapper shell inside says so on a
pipe: slirp configuring the namespace while bwrap still sets its loopback up fails both), :class:`Uplink`
starts ``slirp4netns`` on it (a tap device ``tap0``, ``10.0.2.100/24``, the default route through slirp's
gateway ``10.0.2.2``) with ``--disable-host-loopback`` and no port forwarding, and only when slirp says
the network is up does the wrapper shell run the command.

What the command reaches goes out as connections slirp opens from the host: every address the host
reaches (a model's API; the host's own addresses on its interfaces too, so a host service listening on
all addresses is reachable, one bound to ``127.0.0.1`` is not), never the host's loopback (``10.0.2.2``,
slirp's gateway, refuses; the command's own ``127.0.0.1`` is its namespace's), never the host's abstract
unix sockets (they belong to a network namespace); nothing inside is reachable from outside.

When slirp4netns is missing or fails, the command never runs: the sandbox is unavailable, never the
host's network instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time

__all__ = ["SLIRP_HINT", "Uplink", "slirp_path", "uplink_problem"]

SLIRP_HINT = "install slirp4netns (Debian: apt-get install slirp4netns), or run without the network"
"""What the user can do when a command that asks for the network cannot have one."""
_READY_SECONDS = 10.0
_SLIRP_OPTIONS = ("--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox")


def slirp_path() -> str | None:
    """The slirp4netns executable on ``PATH``, if any."""
    return shutil.which("slirp4netns")


def uplink_problem() -> str | None:
    """Why a command cannot have its own network here (``None`` when it can)."""
    if slirp_path() is None:
        return f"the network was asked for and slirp4netns is not installed; {SLIRP_HINT}"
    return None


class Uplink:
    """One command's network: the descriptors bwrap and the wrapper shell use, and the slirp4netns process."""

    def __init__(self) -> None:
        self._info_read, self._info_write = os.pipe()
        self._inside_read, self._inside_write = os.pipe()
        self._go_read, self._go_write = os.pipe()
        self._slirp: subprocess.Popen[bytes] | None = None
        self._exit_write: int | None = None
        self.problem: str | None = None
        """Why the network could not be brought up (the command then never ran)."""

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return self._info_write, self._inside_write, self._go_read

    def bwrap_args(self) -> list[str]:
        """bwrap writes its namespaces' first process to this descriptor."""
        return ["--info-fd", str(self._info_write)]

    def wait_in_shell(self) -> str:
        """The wrapper shell's first step: say bwrap is done, wait for the network; end if none came."""
        inside, go = self._inside_write, self._go_read
        wait = f'IFS= read -r -n 1 go <&{go}; exec {go}<&-; [ "$go" = 1 ] || exit 125; '
        return f"printf 1 >&{inside}; exec {inside}>&-; {wait}"

    def start(self) -> None:
        """Bring the network up once bwrap started (or failed to); let the command run only if it came up."""
        for fd in (self._info_write, self._inside_write, self._go_read):
            os.close(fd)
        try:
            pid = self._child_pid()
            if not _one_byte(self._inside_read, _READY_SECONDS * 6):
                raise RuntimeError("bwrap did not finish making the namespace")
            self._bring_up(pid)
            os.write(self._go_write, b"1")
        except (OSError, ValueError, RuntimeError) as exc:
            self.problem = f"slirp4netns could not bring the network up: {exc}; {SLIRP_HINT}"
        finally:
            for fd in (self._go_write, self._info_read, self._inside_read):
                os.close(fd)

    def _child_pid(self) -> int:
        data = b""
        while chunk := os.read(self._info_read, 4096):
            data += chunk
        if not data:
            raise RuntimeError("bwrap ended before making the namespace")
        return int(json.loads(data)["child-pid"])

    def _bring_up(self, pid: int) -> None:
        slirp = slirp_path()
        if slirp is None:
            raise RuntimeError("slirp4netns is not installed")
        ready_read, ready_write = os.pipe()
        exit_read, self._exit_write = os.pipe()
        try:
            options = [*_SLIRP_OPTIONS, f"--ready-fd={ready_write}", f"--exit-fd={exit_read}"]
            self._slirp = subprocess.Popen(
                [slirp, *options, str(pid), "tap0"],
                pass_fds=(ready_write, exit_read),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(ready_write)
            os.close(exit_read)
        try:
            if not _one_byte(ready_read, _READY_SECONDS):
                raise RuntimeError(self._slirp_failure())
        finally:
            os.close(ready_read)

    def _slirp_failure(self) -> str:
        assert self._slirp is not None
        self.close()
        assert self._slirp.stderr is not None
        lines = self._slirp.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else f"not ready within {_READY_SECONDS:.0f} s"

    def close(self) -> None:
        """End slirp4netns (closing its exit descriptor; killed if it lingers). Idempotent."""
        if self._exit_write is not None:
            with contextlib.suppress(OSError):
                os.close(self._exit_write)
            self._exit_write = None
        slirp = self._slirp
        if slirp is None or slirp.returncode is not None:
            return
        deadline = time.monotonic() + 2.0
        while slirp.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if slirp.poll() is None:
            slirp.kill()
            slirp.wait()


def _one_byte(fd: int, seconds: float) -> bool:
    """Whether ``1`` arrives on ``fd`` within ``seconds`` (not on an end of file or a silence)."""
    readable, _, _ = select.select([fd], [], [], seconds)
    return bool(readable) and os.read(fd, 1) == b"1"
