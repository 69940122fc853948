"""The grader's cached state is checked before it is trusted, and its keys follow the files a spec names."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from builders import EXAMPLES
from gradeflow import grade
from gradeflow.spec import load_task

pytestmark = pytest.mark.slow

FIXED = "division by zero is undefined"


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    """A private copy of the calc example (its own task id, so its baseline is its own)."""
    shutil.copytree(EXAMPLES / "calc", tmp_path / "calc", symlinks=True)
    task = tmp_path / "calc" / "task.yaml"
    task.write_text(task.read_text().replace("task_id: calc-divzero", "task_id: calc-cached-state"))
    return task


def test_a_cached_base_edited_between_grades_is_rebuilt_and_the_grade_stays_right(
    calc: Path, gradeflow_home: Path, prefect: None
) -> None:
    del prefect
    first = grade(calc, patch=calc.parent / "reference.diff")
    assert first.passed and first.environment is not None and first.environment.rebuilt == []
    pristine = [p for p in gradeflow_home.glob("baselines/calc-cached-state-*/repo/src/calc.py")]
    assert len(pristine) == 1
    # Poison the cached base with the fix: a do-nothing patch would pass if it were trusted.
    reference_after = (calc.parent / "repo" / "src" / "calc.py").read_text()
    fixed = reference_after.replace("return None", f'raise ZeroDivisionError("{FIXED}")')
    assert fixed != reference_after
    pristine[0].write_text(fixed)
    nothing = grade(calc, patch=EXAMPLES / "empty.diff")
    assert nothing.status == "graded" and nothing.passed is False
    assert nothing.environment is not None and nothing.environment.rebuilt == ["pristine"]
    assert FIXED not in pristine[0].read_text()  # rebuilt from the base
    again = grade(calc, patch=EXAMPLES / "empty.diff")
    assert again.passed is False and again.environment is not None and again.environment.rebuilt == []


def test_a_hidden_test_edited_in_place_changes_the_keys(calc: Path) -> None:
    before = load_task(calc).spec_hash()
    hidden = next((calc.parent / "hidden_tests").rglob("*.py"))
    hidden.write_text(hidden.read_text() + "\n\ndef test_added_later():\n    assert True\n")
    assert load_task(calc).spec_hash() != before


def test_a_base_run_recorded_by_other_harness_code_is_not_reused(calc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline's cache key names the harness code that recorded the base run: an in-place upgrade under the
    same version number (an editable install) makes a new witness instead of judging with the old one."""
    from gradeflow.tasks import baseline
    from gradeflow.tasks.environment import pin_base

    spec = load_task(calc)
    fingerprint = baseline.EnvironmentFingerprint(
        sandbox="local",
        architecture="x",
        python_version="3",
        timezone="UTC",
        pythonhashseed="0",
        gradeflow_version="1",
        task_spec_hash=spec.spec_hash(),
    )
    parameters = {"task_spec": spec, "base": pin_base.fn(spec), "fingerprint": fingerprint}
    before = baseline._cache_key(None, parameters)
    assert baseline.harness_digest() in before
    monkeypatch.setattr(baseline, "harness_digest", lambda: "0123456789ab")
    assert baseline._cache_key(None, parameters) not in (before, "") and before != baseline._cache_key(None, parameters)


def test_an_edit_that_puts_size_and_times_back_is_still_seen(tmp_path: Path, gradeflow_home: Path) -> None:
    """The cached folders are checked by inode and times, not by reading every byte: an edit of the same size
    whose modification time is set back still changes the digest (its change time cannot be set back)."""
    del gradeflow_home
    from gradeflow.tasks._state import inode_digest

    folder = tmp_path / "cached"
    (folder / "src").mkdir(parents=True)
    (folder / ".git").mkdir()
    target = folder / "src" / "calc.py"
    target.write_text("return None\n")
    (folder / "src" / "link").symlink_to("calc.py")
    built = inode_digest(folder, skip_git=True)
    assert inode_digest(folder, skip_git=True) == built  # stable while nothing changes
    (folder / ".git" / "index").write_text("ignored")  # the repository's own files are checked by its tree
    assert inode_digest(folder, skip_git=True) == built != inode_digest(folder)
    times = target.stat()
    target.write_text("return 1.00\n")  # same size, as a forged file would be
    os.utime(target, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert target.stat().st_size == times.st_size and target.stat().st_mtime_ns == times.st_mtime_ns
    assert inode_digest(folder, skip_git=True) != built
    (folder / "src" / "link").unlink()
    (folder / "src" / "link").symlink_to("other.py")
    assert len({built, inode_digest(folder, skip_git=True), inode_digest(tmp_path / "absent")}) == 3
