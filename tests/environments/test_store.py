"""``gradeflow env list`` and ``env prune`` on real folders: least recently used first, held or recent ones kept."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from gradeflow.cli import main
from gradeflow.environments.store import RECENT, prune, stored


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two roots and two bases of known sizes and last uses (days ago), under a private home."""
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    now = time.time()
    made = {}
    for kind, name, mib, days in [
        ("roots", "debian-bullseye-aaaa", 3, 9),
        ("roots", "debian-bookworm-bbbb", 2, 1),
        ("home/baselines", "calc-1111", 1, 5),
        ("home/baselines", "django-2222", 4, 2),
    ]:
        folder = tmp_path / kind / name
        (folder / "environment" if kind.endswith("baselines") else folder / "fs").mkdir(parents=True)
        (folder / "data.bin").write_bytes(os.urandom(mib * 1024 * 1024))
        (folder / "used").touch()
        os.utime(folder / "used", (now - days * 86400, now - days * 86400))
        made[name] = folder
    return made


def test_entries_are_listed_least_recently_used_first(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    names = [e.name for e in stored()]
    assert names == ["debian-bullseye-aaaa", "calc-1111", "django-2222", "debian-bookworm-bbbb"]
    assert main(["env", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["environment"]) for r in rows][:2] == [("root", False), ("base", True)]
    assert rows[0]["bytes"] >= 3 * 1024 * 1024


def test_prune_removes_the_least_recently_used_until_the_rest_fit(kept: dict[str, Path]) -> None:
    would = prune(max_bytes=int(7.5 * 1024 * 1024), dry_run=True)
    assert [e.name for e in would] == ["debian-bullseye-aaaa"] and kept["debian-bullseye-aaaa"].exists()
    removed = prune(max_bytes=int(6.5 * 1024 * 1024))
    assert [e.name for e in removed] == ["debian-bullseye-aaaa", "calc-1111"]
    assert not kept["debian-bullseye-aaaa"].exists() and not kept["calc-1111"].exists()
    assert kept["django-2222"].exists() and kept["debian-bookworm-bbbb"].exists()


def test_prune_by_age_keeps_what_is_held_or_just_used(
    kept: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # Another process is building the bullseye root: its lock is held, so it stays whatever its age.
    with (kept["debian-bullseye-aaaa"].parent / "debian-bullseye-aaaa.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert main(["env", "prune", "--unused-for", "3d"]) == 0
    assert "removed: 1 entries" in capsys.readouterr().out
    assert kept["debian-bullseye-aaaa"].exists() and not kept["calc-1111"].exists()
    (kept["django-2222"] / "used").touch()  # a grade took it just now: never pruned within RECENT seconds
    assert RECENT > 60
    assert [e.name for e in prune(max_bytes=0)] == ["debian-bullseye-aaaa", "debian-bookworm-bbbb"]
    assert kept["django-2222"].exists()


def test_bad_input_exits_2_with_one_line(kept: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "prune"]) == 2
    assert "give --max-size, --unused-for or both" in capsys.readouterr().err
    assert main(["env", "prune", "--unused-for", "soon"]) == 2
    assert "--unused-for: 'soon' is not a duration" in capsys.readouterr().err
    assert main(["env", "prune", "--max-size", "lots"]) == 2
    assert "--max-size:" in capsys.readouterr().err
    assert all(folder.exists() for folder in kept.values())
