"""What the code under test sees of a docker run names no gradeflow: the twin of ``test_isolated_plain.py``.

The same test file (variables, working folder, command line, interpreter and path, host name, account, modules,
pytest's plugins, import hooks, the assertion rewriter's names and the files in every folder of the path) runs as
the pass_to_pass test of a real grade in the docker sandbox, on the default image and on a ``debian:`` root (whose
commands have a private environment). Nothing of the grader's installation is in a container, so no folder is
left out (the image's own files, python and pytest in Debian's folders, name no gradeflow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_isolated_plain import assert_plain_run

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize(
    "environment",
    [{"sandbox": "docker"}, {"sandbox": "docker", "root": "debian:bullseye", "packages": ["python3-pytest"]}],
    ids=["image", "root"],
)
def test_a_graded_docker_run_names_no_gradeflow(
    environment: dict[str, Any], tmp_path: Path, docker_client: Any, prefect: None, no_leftovers: None
) -> None:
    del docker_client, prefect, no_leftovers
    assert_plain_run(tmp_path, "docker", [], environment)
