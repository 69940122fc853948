"""The quality step's links: found on the measured paths wherever they lead."""

from __future__ import annotations

import os
from pathlib import Path

from gradeflow.tasks.quality import measured_links


def test_links_on_the_measured_paths_are_found_whatever_they_lead_to(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("X = 1\n")
    (tmp_path / "src" / "notes.txt").write_text("def f(): pass\n")
    os.symlink("notes.txt", tmp_path / "src" / "b.py")
    os.symlink("a.py", tmp_path / "src" / "c.py")
    os.symlink("nowhere", tmp_path / "src" / "d.py")
    os.symlink("a.py", tmp_path / "src" / "e.txt")
    assert measured_links(tmp_path, ["src/**/*.py"]) == ["src/b.py", "src/c.py", "src/d.py"]
