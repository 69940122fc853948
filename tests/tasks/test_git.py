"""gradeflow's git calls on its private repositories."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

from gradeflow.tasks._git import git, init_snapshot_repo


def _blob_id(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_a_commit_never_starts_garbage_collection(tmp_path: Path) -> None:
    # git packs loose objects after a commit once there are more than gc.auto (6700: a Django base has more),
    # in a process that outlives the call and removes .git/objects/?? while gradeflow copies the pristine base.
    # git estimates the count from .git/objects/17: three blobs there are over a repository's own gc.auto=1,
    # and without detaching that gc would finish before the commit returns.
    (tmp_path / "a.py").write_text("a = 1\n")
    init_snapshot_repo(tmp_path)
    git(tmp_path, "config", "gc.auto", "1")
    git(tmp_path, "config", "gc.autoDetach", "false")
    texts = (f"b = {n}\n" for n in itertools.count())
    for number, text in enumerate(itertools.islice((t for t in texts if _blob_id(t).startswith("17")), 3)):
        (tmp_path / f"b{number}.py").write_text(text)
    packs = sorted((tmp_path / ".git" / "objects" / "pack").glob("*.pack"))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "more")
    assert len(list((tmp_path / ".git" / "objects" / "17").iterdir())) >= 3
    assert sorted((tmp_path / ".git" / "objects" / "pack").glob("*.pack")) == packs


def test_a_snapshot_repository_keeps_its_objects_in_one_pack(tmp_path: Path) -> None:
    for number in range(20):
        (tmp_path / f"m{number}.py").write_text(f"m = {number}\n")
    init_snapshot_repo(tmp_path)
    objects = tmp_path / ".git" / "objects"
    assert sorted(p.name for p in objects.iterdir()) == ["info", "pack"]
    assert len(list((objects / "pack").glob("*.pack"))) == 1
    assert git(tmp_path, "ls-files").stdout.decode().count("\n") == 20
