"""gradeflow's own table of SWE-bench's repositories and versions: how to build and test each one.

The table is package data (``swebench_repos.yaml`` beside this module; its header says how SWE-bench's
harness specs were carried over). Per repository and version it gives SWE-bench's Python version, the
gradeflow root that runs it, the Debian packages, one ``setup`` shell string for the sandbox's
environment, the test command's prefix, how the run is read (``report``) and how an instance's test
arguments come from its test patch (``directives``).

:func:`known` looks an entry up, :func:`directives` derives one instance's test arguments the way
SWE-bench's harness does, and :func:`command_for` puts the two together into the instance's command.
Every entry's setup installs from PyPI, so a task built from one needs ``environment.setup_network``.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from gradeflow.errors import SpecError

__all__ = [
    "ROOT_PYTHON",
    "TABLE_FILE",
    "RepoVersion",
    "command_for",
    "directives",
    "known",
    "patch_arguments",
    "versions",
]

TABLE_FILE = "swebench_repos.yaml"
ROOT_PYTHON: dict[str, str] = {"debian:bullseye": "3.9", "debian:bookworm": "3.11", "debian:trixie": "3.13"}
"""The roots an entry may name, with the Python version each release ships."""
NON_TEST_SUFFIXES = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
"""What SWE-bench drops from a test patch's files before passing them to the test command."""

Root = Literal["debian:bullseye", "debian:bookworm", "debian:trixie"]
Report = Literal["junit", "pytest-log", "django-log", "sympy-log"]
Directives = Literal["paths", "django-labels"]


class RepoVersion(BaseModel):
    """How one version of one SWE-bench repository is built and tested under gradeflow."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str = Field(pattern=r"^3\.\d+$")
    """SWE-bench's Python version for this repository and version, e.g. ``"3.9"``."""
    root: Root
    """The root that runs it (``environment.root``)."""
    python_note: str | None = None
    """Why the root's Python differs from :attr:`python`, and what that changed; ``None`` when they agree."""
    packages: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]{0,99}$")]] = Field(default_factory=list)
    """Debian packages of the root (``environment.packages``): SWE-bench's base image and apt steps."""
    shared_setup: str
    """The environment's part of the build, one shell command in the sandbox's environment (``python``/``pip`` on
    ``PATH``): the prelude and the pip steps with SWE-bench's pins (``environment.shared_setup``: built once for
    every instance whose command and :attr:`shared_inputs` agree, SWE-bench's environment image)."""
    shared_inputs: list[str] = Field(default_factory=list)
    """The repository's files :attr:`shared_setup` reads (its requirement files), found in its words."""
    setup: str
    """The instance's part: its last step, the repository's own install (SWE-bench's instance image)."""
    test_command: str
    """The test command without the instance's test arguments; holds ``{junit}`` exactly when
    :attr:`report` is ``junit``."""
    report: Report
    """How a run's outcome is read: ``junit`` (the ``{junit}`` file), else the log format of that runner."""
    directives: Directives
    """How the test arguments come from the test patch: its file ``paths``, or Django's ``django-labels``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the setup and the tests see (``env`` of the task spec)."""
    notes: list[str] = Field(default_factory=list)
    """Where this entry departs from SWE-bench's spec, or what a task author should know."""

    @model_validator(mode="after")
    def _consistent(self) -> RepoVersion:
        if (self.report == "junit") != ("{junit}" in self.test_command):
            raise ValueError("test_command must hold {junit} exactly when report is junit")
        differs = ROOT_PYTHON[self.root] != self.python
        if differs and not self.python_note:
            raise ValueError(f"root {self.root} has Python {ROOT_PYTHON[self.root]}, not {self.python}: say why")
        if not differs and self.python_note:
            raise ValueError(f"python_note is only for a root whose Python is not {self.python}")
        return self


def known(repo: str, version: str) -> RepoVersion | None:
    """The entry of ``repo`` (``owner/name``) at SWE-bench ``version``, or ``None`` when the table has none."""
    return _table().get(repo, {}).get(version)


def versions(repo: str) -> list[str]:
    """The versions of ``repo`` the table knows, in the table's order (empty for an unknown repository)."""
    return list(_table().get(repo, {}))


def directives(entry: RepoVersion, test_patch: str) -> list[str]:
    """The test arguments of one instance of ``entry``'s repository and version: :func:`patch_arguments`."""
    return patch_arguments(entry.directives, test_patch)


def patch_arguments(kind: Directives, test_patch: str) -> list[str]:
    """The test arguments of one instance: the files its test patch adds or changes, as SWE-bench takes them.

    Deleted files and files with a data suffix SWE-bench drops (``.json``, ``.txt``, ``.yaml``, ...) are
    left out; a renamed file counts under its new path. For ``django-labels`` each path becomes a test
    label (``tests/`` and ``.py`` dropped, slashes as dots: ``tests/admin_views/tests.py`` is
    ``admin_views.tests``). ``SpecError`` when the test patch is not a unified diff.
    """
    try:
        patch = PatchSet(test_patch)
    except UnidiffParseError as exc:
        raise SpecError(f"the test patch is not a unified diff: {exc}") from None
    files = [f.path for f in patch if not f.is_removed_file and not f.path.endswith(NON_TEST_SUFFIXES)]
    if kind == "django-labels":
        files = [path.removesuffix(".py").removeprefix("tests/").replace("/", ".") for path in files]
    return list(dict.fromkeys(files))


def command_for(entry: RepoVersion, test_patch: str) -> str:
    """The full test command of one instance: the entry's command, then its shell-quoted test arguments."""
    return " ".join([entry.test_command, *(shlex.quote(arg) for arg in directives(entry, test_patch))])


@cache
def _table() -> dict[str, dict[str, RepoVersion]]:
    text = resources.files("gradeflow.authoring").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    common = {"prelude": data["prelude"], "base_packages": data["base_packages"]}
    return {repo: _repo_versions(repo, fields, common) for repo, fields in data["repos"].items()}


def _repo_versions(repo: str, fields: dict[str, Any], common: dict[str, Any]) -> dict[str, RepoVersion]:
    shared = {key: value for key, value in fields.items() if key != "groups"}
    entries: dict[str, RepoVersion] = {}
    for group in fields["groups"]:
        own = {key: value for key, value in group.items() if key != "versions"}
        for version in group["versions"]:
            if version in entries:
                raise SpecError(f"{TABLE_FILE}: {repo} {version} is in two groups")
            entries[version] = _entry(repo, version, shared, own, common)
    return entries


def _entry(repo: str, version: str, shared: dict[str, Any], own: dict[str, Any], common: dict[str, Any]) -> RepoVersion:
    """One version's entry: the repository's fields, the group's over them (see the table's header)."""
    fields = {**shared, **own}
    env = {**shared.get("env", {}), **own.get("env", {})}
    fields["env"] = {name: str(value).replace("{version}", version.removeprefix("v")) for name, value in env.items()}
    fields["packages"] = list(
        dict.fromkeys([*common["base_packages"], *shared.get("packages", []), *own.get("packages", [])])
    )
    fields["notes"] = [*shared.get("notes", []), *own.get("notes", [])]
    steps = [common["prelude"], *fields.get("setup", [])]
    split = next((at for at, step in enumerate(steps) if _instance_step(step)), len(steps) - 1)
    fields["shared_setup"] = " && ".join(steps[:split])
    fields["shared_inputs"] = _read_files(steps[:split])
    fields["setup"] = " && ".join(steps[split:])
    try:
        return RepoVersion.model_validate(fields)
    except ValidationError as exc:
        raise SpecError(f"{TABLE_FILE}: {repo} {version}: {exc}") from None


_REPOSITORY_FILE = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\.(txt|in|cfg|toml|yml|yaml)$")
"""A word of a step that names a file of the repository (``tests/requirements/py3.txt``), not a pin or a path of
the root."""


def _instance_step(step: str) -> bool:
    """Whether a setup step belongs to the instance, not to its environment: it installs the repository itself
    (``-e``, a ``.`` target) or edits its files (``sed -i``); it and every step after it are the task's ``setup``."""
    words = _words(step)
    return bool(words) and (
        words[0] == "sed" or any(w in ("-e", "--editable") or re.match(r"^\.(\[.*\])?$", w) for w in words)
    )


def _words(step: str) -> list[str]:
    try:
        return shlex.split(step)
    except ValueError:
        return step.split()


def _read_files(steps: list[str]) -> list[str]:
    """The repository files named in ``steps`` (their shell words that look like one), in order."""
    found: list[str] = []
    for step in steps:
        found += [word for word in _words(step) if _REPOSITORY_FILE.match(word) and word not in found]
    return found
