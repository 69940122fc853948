"""Perf fakes graded end to end in docker, and the fresh container every timed run gets.

The task, its benchmark and the fakes are those of ``tests/tasks/test_perf_integrity.py``; docker adds
one fake that keeps its cache outside the tree (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``HOME``), which
only a fresh container per run defeats.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gradeflow import grade
from gradeflow.models import GradeComponent
from gradeflow.sandbox import DockerSandboxFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks"))
from test_perf_integrity import (
    FAKES,
    HONEST,
    WORK,
    assert_faked_out,
    assert_honest_2x,
    patch_of,
    perf_task,
    steady_honest_grade,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timing]

OUTSIDE_CACHE = {
    "src/work.py": WORK.replace(
        "    first = _pass(n)\n",
        "    import glob, os\n"
        "    places = ['/tmp', '/var/tmp', '/dev/shm', os.path.expanduser('~')]\n"
        "    for hit in glob.glob('/tmp/.total-*') + glob.glob('/var/tmp/.total-*') + glob.glob('/dev/shm/.total-*')"
        " + glob.glob(os.path.expanduser('~/.total-*')):\n"
        "        return int(open(hit).read())\n"
        "    first = _pass(n)\n"
        "    _pass(n)\n"
        "    for place in places:\n"
        "        try:\n"
        "            open(os.path.join(place, '.total-cache'), 'w').write(str(first))\n"
        "        except OSError:\n"
        "            pass\n",
    )
}
"""A fake of our own: the first run leaves its result in every writable place outside the tree."""

DOCKER_FAKES = {**FAKES, "outside-cache": (OUTSIDE_CACHE, "perf-below-noise-floor")}


@pytest.fixture
def grade_in_docker(
    tmp_path: Path, docker_client: Any, prefect: None, no_leftovers: None
) -> Callable[..., GradeComponent]:
    del docker_client, prefect, no_leftovers

    def run(files: dict[str, str], **perf: Any) -> GradeComponent:
        task = perf_task(tmp_path / "repo", sandbox="docker", **perf)
        result = grade(task, patch=patch_of(files), sandbox="docker")
        assert result.status == "graded", result.messages
        return result.component("perf")

    return run


@pytest.mark.parametrize("name", sorted(DOCKER_FAKES))
def test_a_perf_fake_scores_zero_in_docker(name: str, grade_in_docker: Callable[..., GradeComponent]) -> None:
    files, reason = DOCKER_FAKES[name]
    perf = grade_in_docker(files, runs=3)
    assert_faked_out(perf, reason)


def test_an_honest_2x_patch_scores_the_formula_in_docker(grade_in_docker: Callable[..., GradeComponent]) -> None:
    assert_honest_2x(steady_honest_grade(lambda: grade_in_docker(HONEST, runs=8)))


def test_every_import_is_a_fresh_container(tmp_path: Path, docker_client: Any, no_leftovers: None) -> None:
    del docker_client, no_leftovers
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "kept.txt").write_text("base\n")
    with DockerSandboxFactory().open(tmp_path / "ws") as box:
        box.run("echo setup > made.txt && echo home > $HOME/h", env={}, timeout=20)
        box.export_workspace(tmp_path / "tree.tar")
        left = "echo x > kept.txt; echo r > left.txt; echo r >> $HOME/h; "
        left += "for d in /tmp /var/tmp /dev/shm; do echo r > $d/r; done"
        box.run(f"{left}; sleep 300 & echo started", env={}, timeout=20)
        box.import_workspace(tmp_path / "tree.tar")
        seen = box.run(
            "ls; cat kept.txt $HOME/h; ls -A /tmp /var/tmp /dev/shm | wc -w; "
            "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 30[0]'; stat -c %u made.txt",
            env={},
            timeout=20,
        )
    assert seen.stdout.split() == ["kept.txt", "made.txt", "base", "home", "3", "0", "1000"], seen
