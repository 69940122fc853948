"""Builders shared by the tests (imported as ``builders``; pytest puts this folder on sys.path)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def make_task(**overrides: Any) -> dict[str, Any]:
    """A minimal valid task spec as a dict, with ``overrides`` merged at the top level."""
    spec: dict[str, Any] = {
        "task_id": "t1",
        "type": "bugfix",
        "repo": "/nonexistent",
        "tests": {"command": "pytest --junitxml={junit}", "fail_to_pass": [], "pass_to_pass": []},
    }
    spec.update(overrides)
    return spec


def committed_repo(folder: Path, files: dict[str, str]) -> Path:
    """A git repository at ``folder`` holding ``files`` (path -> text) in one commit; ``folder``."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder


def calc_with_tests(folder: Path, task_id: str, tests: dict[str, str], pass_to_pass: list[str], **spec: Any) -> Path:
    """The calc example copied into ``folder`` as ``task_id``: ``tests`` (file name -> text) added to its ``tests/``,
    ``pass_to_pass`` appended to its list, ``spec`` set at the top level. Returns the task file's path."""
    shutil.copytree(EXAMPLES / "calc", folder / "calc")
    for name, text in tests.items():
        (folder / "calc" / "repo" / "tests" / name).write_text(text)
    task = folder / "calc" / "task.yaml"
    loaded = yaml.safe_load(task.read_text())
    loaded["task_id"] = task_id
    loaded["tests"]["pass_to_pass"] += pass_to_pass
    task.write_text(yaml.safe_dump({**loaded, **spec}))
    return task


THROUGH_A_LINK = (
    'python -c "import sys; print(sys.prefix)" && mkdir -p .tox/py39/bin && '
    'ln -s "$(command -v python)" .tox/py39/bin/python && .tox/py39/bin/python -X dev -c '
    '"import sys; print(sys.prefix != sys.base_prefix, sys.prefix, sys.flags.dev_mode, sys.argv[1:])" '
    'one "two words" && /usr/bin/python3.9 -c "import sys; print(sys.prefix)"'
)
"""As ``tox --current-env`` runs the tests: through ``.tox/py39/bin/python``, a link to the environment's ``python``
(with an option and arguments, each kept); printed: the environment's prefix, what the linked interpreter saw, the
root's own interpreter's prefix (see :func:`through_a_link_seen`)."""


def through_a_link_seen(prefix: str) -> list[str]:
    """The lines :data:`THROUGH_A_LINK` prints when the link runs as the environment at ``prefix``."""
    return [prefix, f"True {prefix} True ['one', 'two words']", "/usr"]


FALSE_ALARMS_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "false_alarms.py"


def false_alarms_script() -> ModuleType:
    """``scripts/false_alarms.py`` as a module: its PyPI sdist download-and-cache helpers serve every test on
    released projects, so they share one cache."""
    spec = importlib.util.spec_from_file_location("false_alarms", FALSE_ALARMS_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
