"""What of gradeflow's own Python environment a task's commands see: everything installed there except gradeflow
and what only gradeflow needs.

The local and isolated sandboxes run a task's ``python`` in a private environment layered over the interpreter
running gradeflow, so that ``pytest``, ``pip`` and whatever the user installed beside gradeflow (``tox``, a
plugin, the project's test dependencies) need no install per run. Shown whole, that layer also held the grader's
engine: Prefect, its server's and client's libraries, gradeflow itself. A task's code could then import them, tests
could pass only where they happen to be installed, and pytest loaded every ``pytest11`` plugin among them at each
start (``anyio``'s alone cost about 0.05 s of CPU per pytest run on an idle machine, twice a grade and more: see
``costs.md``).

So the private environment names a *view* of the site folder instead (:func:`view_folder`): a folder of links to
its entries, minus those of the distributions that only gradeflow's own requirements reach (the closure of
``gradeflow``'s requirements, extras left out, minus the closure of every other distribution installed there).
A distribution both need (``packaging``, ``PyYAML`` when ``mkdocs`` is installed) stays; entries no distribution
records stay. The view is made once per state of the site folder (the names of its entries: a package installed,
removed or upgraded changes them) in gradeflow's home, and every sandbox shares it, shown beside its private environment
(the local sandbox links to it, the isolated sandbox binds it read-only there: its path names nothing of
gradeflow's home); :func:`view_digest` names it in the sandbox's description, so a cached environment built over
another view is not reused.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import os
import shutil
import sys
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gradeflow.config import cache_dir

__all__ = ["VIEW_NAME", "hidden_distributions", "view_digest", "view_folder"]

OWN = "gradeflow"
VIEW_NAME = "host-site-packages"
"""Where a sandbox shows the view, beside its private environment (named so that the harness's tests for installed
code, which look for ``site-packages`` in a file's path, read it as one)."""


def site_folders() -> tuple[str, ...]:
    """gradeflow's site folders (purelib, platlib), once each, in ``sys.path`` order."""
    return tuple(dict.fromkeys(p for p in (sysconfig.get_path("purelib"), sysconfig.get_path("platlib")) if p))


def hidden_distributions(folder: str) -> set[str]:
    """Names of the distributions in ``folder`` that only gradeflow's own requirements reach."""
    return _hidden(list(metadata.distributions(path=[folder])))


def _hidden(distributions: list[metadata.Distribution]) -> set[str]:
    found = {_name(d): d for d in distributions}
    own = _closure(found, [canonicalize_name(OWN)])
    others = _closure(found, [name for name in found if name not in own])
    return own - others


def _closure(found: dict[str, metadata.Distribution], roots: list[str]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in found:
            continue
        seen.add(name)
        for line in found[name].requires or []:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                stack.append(canonicalize_name(requirement.name))
    return seen


def _entries(distribution: metadata.Distribution) -> set[str]:
    """The site folder's top-level entries ``distribution`` installed (its record; else its ``top_level.txt``)."""
    files = distribution.files
    if files is None:
        return {line.strip() for line in (distribution.read_text("top_level.txt") or "").splitlines() if line.strip()}
    return {file.parts[0] for file in files if file.parts and file.parts[0] != ".."}


def _name(distribution: metadata.Distribution) -> str:
    return canonicalize_name(distribution.metadata["Name"] or "")


def _split(folder: str) -> list[str]:
    """The entries of ``folder`` a task sees, sorted (its distributions' metadata read once)."""
    distributions = list(metadata.distributions(path=[folder]))
    hidden_names = _hidden(distributions)
    hidden: set[str] = set()
    kept: set[str] = set()
    for distribution in distributions:
        (hidden if _name(distribution) in hidden_names else kept).update(_entries(distribution))
    return sorted(entry for entry in os.listdir(folder) if entry not in hidden or entry in kept)


def _state_key(folders: tuple[str, ...]) -> str:
    """Names one state of ``folders`` by their entries' names (a package installed, removed or upgraded adds or
    removes one: its ``.dist-info`` folder carries its version). A tenth of a millisecond per hundred entries."""
    digest = hashlib.sha256(sys.version.encode())
    for folder in folders:
        digest.update(f"\0{folder}\0{chr(0).join(sorted(os.listdir(folder)))}".encode())
    return digest.hexdigest()[:12]


def view_folder() -> Path:
    """The view of gradeflow's site folders in their present state: a folder of links in gradeflow's home, made
    once per state (computing it reads every distribution's metadata, a tenth of a second) and shared read-only
    by every sandbox (no file is made per sandbox); made again where it is gone (a home cleaned, another home
    chosen). Each visible entry is a link to the first site folder's that holds it."""
    folders = site_folders()
    key = _state_key(folders)
    view = cache_dir() / "host-packages" / key
    if view.is_dir():
        return view
    view.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=view.parent))
    for entry, folder in _visible(folders, key).items():
        (staging / entry).symlink_to(os.path.join(folder, entry))
    staging.chmod(0o755)
    try:
        staging.rename(view)
    except OSError:  # another process made it first: theirs is the same
        shutil.rmtree(staging, ignore_errors=True)
    return view


@cache
def _visible(folders: tuple[str, ...], key: str) -> dict[str, str]:
    """Each visible entry and the first of ``folders`` that holds it (computed once a process per state ``key``)."""
    del key
    found: dict[str, str] = {}
    for folder in folders:
        for entry in _split(folder):
            found.setdefault(entry, folder)
    return found


def view_digest() -> str:
    """Names what the view shows (in the sandbox's description, so part of every cache key)."""
    return view_folder().name
