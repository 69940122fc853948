"""Materializing the base from a git commit, a folder or an archive; reading a submission."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from builders import make_task
from gradeflow.errors import BaselineBroken, PatchDoesNotApply, PathEscape, SpecError
from gradeflow.models import TaskSpec
from gradeflow.tasks._patching import apply_patch, changed_files, graded_patch, stage_checkout
from gradeflow.tasks.repo import materialize, resolve_base


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "upstream"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("VERSION = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("VERSION = 2\n")
    (repo / "future.py").write_text("LEAK = True\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    return repo, first, _git(repo, "rev-parse", "HEAD").strip()


def test_a_git_base_is_the_pinned_commit_without_history(git_repo: tuple[Path, str, str], tmp_path: Path) -> None:
    repo, first, _second = git_repo
    task = TaskSpec.model_validate(make_task(repo=str(repo), base_revision=first[:7]))
    base = resolve_base(task)
    assert (base.kind, base.revision) == ("git", first)
    materialize(base, tmp_path / "ws")
    assert (tmp_path / "ws" / "a.py").read_text() == "VERSION = 1\n"
    assert not (tmp_path / "ws" / "future.py").exists()
    log = _git(tmp_path / "ws", "log", "--oneline")
    assert len(log.splitlines()) == 1  # later commits (the answer) are not reachable from the workspace


def test_a_git_base_is_a_checkout_not_an_export(tmp_path: Path) -> None:
    # setuptools-scm/hatch-vcs projects ship .git_archival.txt with export-subst; export-ignore drops files.
    repo = tmp_path / "upstream"
    (repo / "tests" / "data").mkdir(parents=True)
    (repo / ".gitattributes").write_text(".git_archival.txt export-subst\ntests/data/** export-ignore\n")
    (repo / ".git_archival.txt").write_text("node: $Format:%H$\n")
    (repo / "tests" / "data" / "fixture.json").write_text("{}\n")
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "__pycache__" / "shipped.txt").write_text("tracked by an sdist\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A", "-f")
    _git(repo, "commit", "-qm", "one")
    head = _git(repo, "rev-parse", "HEAD").strip()
    before = _git(repo, "status", "--porcelain", "--ignored")
    base = resolve_base(TaskSpec.model_validate(make_task(repo=str(repo), base_revision=head)))
    materialize(base, tmp_path / "ws")
    assert (tmp_path / "ws" / ".git_archival.txt").read_text() == "node: $Format:%H$\n"
    assert (tmp_path / "ws" / "tests" / "data" / "fixture.json").is_file()
    assert (tmp_path / "ws" / "pkg" / "__pycache__" / "shipped.txt").is_file()
    assert _git(repo, "status", "--porcelain", "--ignored") == before  # the user's repository only read


def test_a_checkout_that_tracks_a_cache_folder_changes_nothing_it_did_not_touch(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "__pycache__" / "shipped.txt").write_text("tracked by an sdist\n")
    (repo / "pkg" / "mod.py").write_text("X = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A", "-f")
    _git(repo, "commit", "-qm", "one")
    head = _git(repo, "rev-parse", "HEAD").strip()
    materialize(resolve_base(TaskSpec.model_validate(make_task(repo=str(repo), base_revision=head))), tmp_path / "ws")
    (repo / "pkg" / "mod.py").write_text("X = 2\n")  # the agent's change, in its checkout
    stage_checkout(tmp_path / "ws", repo)
    assert [(c.path, c.status) for c in changed_files(tmp_path / "ws")] == [("pkg/mod.py", "modified")]
    (repo / "pkg" / "__pycache__" / "shipped.txt").unlink()
    stage_checkout(tmp_path / "ws", repo)
    assert {c.path: c.status for c in changed_files(tmp_path / "ws")}["pkg/__pycache__/shipped.txt"] == "removed"


def test_a_commit_whose_file_content_is_missing_is_a_broken_baseline(tmp_path: Path) -> None:
    # A mirror that lists a large file and lacks its blob: git checks out the rest and exits 0.
    repo = tmp_path / "upstream"
    (repo / "data").mkdir(parents=True)
    (repo / "a.py").write_text("X = 1\n")
    (repo / "data" / "table.dat").write_text("a large data file\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    head = _git(repo, "rev-parse", "HEAD").strip()
    blob = _git(repo, "rev-parse", "HEAD:data/table.dat").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    base = resolve_base(TaskSpec.model_validate(make_task(repo=str(repo), base_revision=head)))
    with pytest.raises(BaselineBroken, match=r"lacks the content of 1 file\(s\) of .*: data/table.dat"):
        materialize(base, tmp_path / "ws")


def test_an_unknown_revision_is_a_spec_error(git_repo: tuple[Path, str, str]) -> None:
    task = TaskSpec.model_validate(make_task(repo=str(git_repo[0]), base_revision="0123456789abcdef"))
    with pytest.raises(SpecError, match="base_revision: 0123456789abcdef not found"):
        resolve_base(task)


def test_a_folder_base_is_pinned_by_content(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "x.txt").write_text("1")
    task = TaskSpec.model_validate(make_task(repo=str(folder)))
    first = resolve_base(task).revision
    (folder / "x.txt").write_text("2")
    assert resolve_base(task).revision != first


def test_an_archive_base_is_extracted_safely(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("X = 1\n")
    archive = tmp_path / "base.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "m.py", arcname="m.py")
    base = resolve_base(TaskSpec.model_validate(make_task(repo=str(archive))))
    assert base.kind == "archive"
    materialize(base, tmp_path / "ws")
    assert (tmp_path / "ws" / "m.py").read_text() == "X = 1\n"


def test_patches_report_renames_and_binaries(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "old.py").write_text("".join(f"line {i}\n" for i in range(20)))
    (folder / "img.bin").write_bytes(b"\x00\x01\x02")
    base = resolve_base(TaskSpec.model_validate(make_task(repo=str(folder))))
    work = tmp_path / "ws"
    materialize(base, work)
    (work / "new.py").write_text((work / "old.py").read_text() + "line 20\n")
    (work / "old.py").unlink()
    (work / "img.bin").write_bytes(b"\x00\x09\x02\x03")
    _git(work, "add", "-A")
    patch = graded_patch(work)
    fresh = tmp_path / "fresh"
    materialize(base, fresh)
    apply_patch(fresh, patch)
    changes = {c.path: c for c in changed_files(fresh)}
    assert changes["new.py"].status == "renamed" and changes["new.py"].old_path == "old.py"
    assert changes["new.py"].lines_added == 1
    assert changes["img.bin"].binary and (fresh / "img.bin").read_bytes() == b"\x00\x09\x02\x03"


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        ("--- a/../../etc/x\n+++ b/../../etc/x\n@@ -1 +1 @@\n-a\n+b\n", PathEscape),
        ("diff --git a/x b/x\nrename from x\nrename to /abs/y\n", PathEscape),
        (
            "diff --git a/nothere.py b/nothere.py\n--- a/nothere.py\n+++ b/nothere.py\n@@ -1 +1 @@\n-a\n+b\n",
            PatchDoesNotApply,
        ),
    ],
)
def test_hostile_or_stale_patches_are_refused(tmp_path: Path, patch: str, error: type[Exception]) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "x").write_text("a\n")
    work = tmp_path / "ws"
    materialize(resolve_base(TaskSpec.model_validate(make_task(repo=str(folder)))), work)
    with pytest.raises(error):
        apply_patch(work, patch)
    assert not (tmp_path.parent / "etc").exists()


def _repo_with(folder: Path, files: dict[str, str]) -> str:
    folder.mkdir(parents=True)
    _git(folder, "init", "-q")
    for name, text in files.items():
        (folder / name).write_text(text)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "one")
    return _git(folder, "rev-parse", "HEAD").strip()


def _add_submodule(repo: Path, source: Path, path: str) -> None:
    _git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), path)
    _git(repo, "commit", "-qm", f"add {path}")


def test_submodules_are_filled_from_local_repositories_at_the_pinned_commit(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    _repo_with(inner, {"deep.py": "DEEP = 1\n"})
    helpers = tmp_path / "helpers"
    _repo_with(helpers, {"helper.py": "PINNED = True\n"})
    _add_submodule(helpers, inner, "inner")
    other = tmp_path / "other"
    _repo_with(other, {"other.py": "X = 1\n"})
    repo = tmp_path / "upstream"
    _repo_with(repo, {"a.py": "import helper\n"})
    _add_submodule(repo, helpers, "helpers")
    _add_submodule(repo, other, "vendor/other")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (helpers / "helper.py").write_text("PINNED = False\n")  # a later commit of the submodule: not the base's
    _git(helpers, "commit", "-qam", "later")

    sources = {"helpers": str(helpers), "helpers/inner": str(inner)}
    task = TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base, submodules=sources))
    materialize(resolve_base(task), tmp_path / "ws")
    assert (tmp_path / "ws" / "helpers" / "helper.py").read_text() == "PINNED = True\n"
    assert (tmp_path / "ws" / "helpers" / "inner" / "deep.py").read_text() == "DEEP = 1\n"
    assert not (tmp_path / "ws" / "helpers" / ".git").exists()
    assert list((tmp_path / "ws" / "vendor" / "other").iterdir()) == []  # not listed: empty, as git leaves it
    tracked = _git(tmp_path / "ws", "ls-files").split()
    assert "helpers/inner/deep.py" in tracked  # the snapshot holds the submodules' files as its own

    without = TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base))
    materialize(resolve_base(without), tmp_path / "plain")
    assert list((tmp_path / "plain" / "helpers").iterdir()) == []

    wrong = TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base, submodules={"a.py": str(other)}))
    with pytest.raises(BaselineBroken, match=r"submodules names a\.py, which is not a submodule"):
        materialize(resolve_base(wrong), tmp_path / "wrong")
    stale = TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base, submodules={"helpers": str(other)}))
    with pytest.raises(BaselineBroken, match="does not hold the pinned commit"):
        materialize(resolve_base(stale), tmp_path / "stale")
    with pytest.raises(SpecError, match=r"submodules: helpers: .* is not a folder"):
        resolve_base(
            TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base, submodules={"helpers": "/nope"}))
        )
    with pytest.raises(ValueError, match="must be a relative path inside the repository"):
        TaskSpec.model_validate(make_task(repo=str(repo), base_revision=base, submodules={"../x": str(other)}))
