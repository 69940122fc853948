"""An interpreter started through a link to a private environment's ``python`` runs as that environment's.

``tox --current-env`` (and any tool that links to ``sys.executable``) starts the tests through
``.tox/<name>/bin/python``, a link to the environment's ``python``, itself a link to the root's interpreter. Python
looks for ``pyvenv.cfg`` beside the link it was started by only, so such an interpreter would run without the
environment's packages. :data:`LINK_HOOK`, run at interpreter start in a root, starts it again through the link's
target (where ``pyvenv.cfg`` is found) with the same arguments, read from ``/proc/self/cmdline``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["LINK_HOOK", "PTH_TARGET", "link_hook_file"]

LINK_HOOK = """\
# An interpreter started through a link to a virtual environment's interpreter (tox-current-env's
# .tox/<name>/bin/python) finds no pyvenv.cfg beside the link and would run without that environment's packages:
# it starts again as the interpreter the link names, with the same arguments.
def _venv_through_link():
    import os
    import sys

    path = sys.executable
    if sys.prefix != sys.base_prefix or not path:
        return
    for _ in range(8):
        try:
            target = os.path.join(os.path.dirname(path), os.readlink(path))
        except (OSError, ValueError):
            return
        folder = os.path.dirname(target)
        if any(os.path.isfile(os.path.join(f, "pyvenv.cfg")) for f in (folder, os.path.dirname(folder))):
            try:
                with open("/proc/self/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\\0")[:-1]
            except OSError:
                return
            if argv:
                os.execv(target, [os.fsencode(target), *argv[1:]])
            return
        path = target


_venv_through_link()
del _venv_through_link
"""
"""What an interpreter of a root runs at start: the isolated sandbox puts it before the root's ``sitecustomize.py``,
the docker sandbox binds it in a ``.pth`` file of the root's ``dist-packages`` (:func:`link_hook_file`)."""


PTH_TARGET = "/usr/lib/python3/dist-packages/_venv_link.pth"
"""Where the docker sandbox binds :func:`link_hook_file` in a ``debian:`` root's container (named, as the hook's
lines are, without gradeflow: code under test sees them)."""


def link_hook_file(folder: Path) -> Path:
    """A ``.pth`` file in ``folder`` whose one line runs :data:`LINK_HOOK` (written once; named by its content)."""
    text = f"import sys; exec({LINK_HOOK!r})\n"
    path = folder / f"link-hook-{hashlib.sha256(text.encode()).hexdigest()[:12]}.pth"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_text(text)
        partial.chmod(0o644)
        partial.replace(path)
    return path
