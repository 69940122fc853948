"""An image's filesystem as the isolated sandbox's root: exported once, verified before use, rebuilt when edited."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gradeflow.environments.roots import RootRecipe, ensure_root, stat_digest


@pytest.mark.slow
@pytest.mark.docker
def test_an_image_root_is_exported_once_and_rebuilt_when_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_client: Any
) -> None:
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    recipe = RootRecipe.from_spec("docker:gradeflow-python:bookworm")
    assert recipe is not None
    root = ensure_root(recipe)
    assert root.python == "3.11" and (root.folder / "usr/bin/python3").exists()
    facts = json.loads((root.folder.parent / "root.json").read_text())
    assert facts["digest"] == root.digest and facts["bytes"] > 0
    marker = os.stat(root.folder.parent / "root.json").st_ino
    again = ensure_root(recipe)
    assert again.digest == root.digest and os.stat(root.folder.parent / "root.json").st_ino == marker  # not rebuilt
    (root.folder / "etc" / "debian_version").write_text("edited\n")
    rebuilt = ensure_root(recipe)
    assert (rebuilt.folder / "etc" / "debian_version").read_text() != "edited\n"
    assert stat_digest(rebuilt.folder) == rebuilt.digest
