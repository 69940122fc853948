"""gradeflow's harness plugin for a plain pytest run of a test: written with a fixed config beside the run, and
its signed record read back (what ``Harness`` does for a grade, without a sandbox or a channel)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gradeflow.integrity.plugin_files import plugin_files

NAME = "_gradeflow_0c0ffee0"


def install_plugin(folder: Path, workspace: Path, **extra: object) -> list[str]:
    """The plugin written into ``folder`` (to be put on ``PYTHONPATH``) for a run of ``workspace``, its record and
    call log in ``folder``, ``extra`` added to its config; the pytest arguments that load it."""
    config = {
        "nonce": "0c0ffee0",
        "record": str(folder / "record.json"),
        "calls": str(folder / "calls.log"),
        "canary_file": "",
        "canaries": [],
        "must_fail": "",
        "select": None,
        "workspace": str(workspace),
        **extra,
    }
    for name, data in plugin_files(NAME, config).items():
        (folder / name).write_bytes(data)
    return ["-p", NAME]


def read_record(folder: Path) -> dict[str, Any]:
    """The record the plugin installed in ``folder`` wrote, its signature line left off."""
    record: dict[str, Any] = json.loads((folder / "record.json").read_text().split("\nhmac-sha256 ")[0])
    return record
