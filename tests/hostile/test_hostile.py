"""The hostile corpus (``cases.yaml``): no patch that fixes nothing passes, none makes its grade inconclusive.

Each case is graded through ``gradeflow.grade`` in the sandboxes it lists (here the isolated default;
``test_hostile_docker.py`` the docker sandbox), against the task spec a new
user writes from the README. A hostile grade must be ``graded``, not passed, carry the case's reason
code, and be ``rejected`` when that code is an integrity gate. The honest controls must pass, so the
corpus shows the defences do not reject everything. The unguarded runs show each attack is real: under
plain pytest, without gradeflow, it makes the fail_to_pass tests pass.
"""

from __future__ import annotations

import pytest
from hostile_corpus import CASES, PATCHES, Case, Corpus, check_grade, graded_params

pytestmark = pytest.mark.usefixtures("prefect")


@pytest.mark.parametrize(("case", "sandbox"), graded_params("isolated"))
def test_grade_is_as_expected(case: Case, sandbox: str, corpus: Corpus, request: pytest.FixtureRequest) -> None:
    check_grade(case, sandbox, corpus, request)


@pytest.mark.parametrize("case", [c for c in CASES if c.works_unguarded], ids=lambda c: c.name)
def test_attack_works_without_gradeflow(case: Case, corpus: Corpus) -> None:
    found = corpus.unguarded[case.name]
    if isinstance(found, BaseException):
        raise found
    works, what = found
    assert works, f"{case.name} is a dud under plain pytest ({what}): it tests no defence"


def test_cases_are_well_formed() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    diffs = {c.patch or c.name for c in CASES if c.build is None}
    assert diffs == {p.stem for p in PATCHES.glob("*.diff")}, "every diff has a case, every case its diff"
    hostile = [c for c in CASES if c.klass != 0]
    assert len(hostile) >= 30
    assert {c.klass for c in hostile} == {1, 2, 3, 4, 5, 6}
    assert all(set(c.sandboxes) <= {"isolated", "docker"} for c in CASES)
    # Only an attack on the grader's own interpreter (shared read-only by the isolated sandbox), the task
    # whose setup needs pip (the docker image has none), an attack on pluggy's newer class layout (the
    # image has pluggy 1.0), one on pytest 8+'s folder-by-folder collection (the image has pytest 7) and
    # those on the varied run's user, paths, /dev, root folders, /sys and disk (which only the isolated sandbox changes)
    # and the class claims pytest.raises believes from 8.4 on (the image has pytest 7, which checks the raised type)
    # skip docker; only class 5 (limits only a container has) skips isolated.
    isolated_only = {c.name for c in CASES if "docker" not in c.sandboxes}
    expected = {"c2-shadow-base-plugin", "c3-rt-hookcaller-call-swap", "c3-conftest-written-at-import"}
    expected |= {"c3-vw-sandbox-user", "c3-vw-workspace-path", "c3-vw-dev-entries", "c3-vw-run-folder"}
    expected |= {"c3-vw-var-folder", "c3-vw-mount-flags", "c3-vw-session-leader", "c3-vw-no-groups"}
    expected |= {"c3-vw-pid1-owner", "c3-vw-login-session", "c3-vw-hostname-file"}
    expected |= {"c3-vw-capability-bound", "c3-vw-root-device"}
    expected |= {"c3-vw-disk-size", "c3-vw-disk-empty", "c3-vw-sys-absent"}
    expected |= {"c3-class-spoof-getattribute", "c3-class-spoof-type-call"}
    expected |= {"c5-fill-tmp-then-delete"}  # docker's disk watcher polls: a fill undone within one poll can go unseen
    assert isolated_only == expected | {c.name for c in CASES if c.task == "editable"}
    assert {c.klass for c in CASES if "isolated" not in c.sandboxes} <= {5}


def test_a_tasks_setup_never_installs_into_gradeflows_environment(corpus: Corpus) -> None:
    import importlib.metadata
    import site
    from pathlib import Path

    graded = [name for (name, sandbox) in corpus.outcomes if sandbox == "isolated" and name.endswith("editable-fix")]
    if not graded:
        pytest.skip("no grade of the editable task was selected in this session")
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("calc")
    leftovers = [p for folder in site.getsitepackages() for p in Path(folder).glob("*editable*calc*")]
    assert leftovers == []
