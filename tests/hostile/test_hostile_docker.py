"""The hostile corpus in the docker sandbox (see ``test_hostile.py``): a file of its own, so that under
pytest-xdist's ``--dist loadfile`` its grades run on another worker than the isolated sandbox's."""

from __future__ import annotations

from typing import Any

import pytest
from hostile_corpus import Case, Corpus, check_grade, graded_params

from sandbox.conftest import own_containers

pytestmark = pytest.mark.usefixtures("prefect")


@pytest.mark.parametrize(("case", "sandbox"), graded_params("docker"))
def test_grade_is_as_expected(case: Case, sandbox: str, corpus: Corpus, request: pytest.FixtureRequest) -> None:
    check_grade(case, sandbox, corpus, request)


@pytest.mark.docker
def test_docker_corpus_leaves_no_container(corpus: Corpus, docker_client: Any) -> None:
    del corpus
    left = own_containers(docker_client)
    assert not left, f"sandbox containers left behind: {[c[:12] for c in left]}"
