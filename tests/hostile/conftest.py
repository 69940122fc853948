"""Fixtures of the hostile corpus: every selected case graded once, concurrently, against cached baselines.

The first test of a module that asks for :func:`corpus` grades every (case, sandbox) pair the module's
selected tests name,
plus the unguarded runs, in a thread pool (each grade runs in a copy of the caller's context, so it
talks to the session's Prefect test server). Each task spec's baseline is warmed by one grade per
sandbox before the pool starts, so no two grades build the same baseline. Docker reuses the fixtures
of ``tests/sandbox/conftest.py``: docker cases skip without an engine, and fail under ``CI=true``.
A table of every grade is printed at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_corpus import Case, Corpus

from sandbox.conftest import _engine_problem, docker_client, own_containers

__all__ = ["corpus", "docker_client", "own_containers"]

collect_ignore = ["task", "patches"]

_CORPUS: list[Corpus] = []


def _selected(session: pytest.Session, module: Path) -> tuple[list[tuple[Case, str]], list[Case]]:
    """The (case, sandbox) pairs and unguarded cases the session's selected tests of ``module`` ask for.

    One module's at a time: the isolated and the docker grades are in two files, which pytest-xdist's
    ``--dist loadfile`` hands to two workers, each grading its own half."""
    docker_ready = _engine_problem()[1] is None
    pairs, unguarded = [], []
    for item in session.items:
        if item.path != module:
            continue
        params = getattr(item, "callspec", None)
        case = params.params.get("case") if params is not None else None
        if not isinstance(case, Case):  # another module's parameter of the same name
            continue
        sandbox = params.params.get("sandbox")
        if sandbox is None:
            unguarded.append(case)
        elif sandbox == "isolated" or docker_ready:
            pairs.append((case, sandbox))
    return pairs, unguarded


@pytest.fixture(scope="session")
def corpus_store(prefect: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """The session's corpus, empty until :func:`corpus` grades it."""
    del prefect
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME

    prefect_env = {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT_HOME": str(PREFECT_HOME.value()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    store = Corpus(tmp_path_factory.mktemp("hostile"), prefect_env)
    _CORPUS.append(store)
    yield store


@pytest.fixture
def corpus(corpus_store: Corpus, request: pytest.FixtureRequest) -> Corpus:
    """The corpus with every selected case graded."""
    corpus_store.grade_all(*_selected(request.session, request.node.path))
    return corpus_store


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The table of every grade: class, case, sandbox, expected, actual, seconds, verdict."""
    if not _CORPUS or not _CORPUS[0].outcomes:
        return
    store = _CORPUS[0]
    write = terminalreporter.write_line
    terminalreporter.section(f"hostile corpus: {len(store.outcomes)} grades in {store.seconds:.0f} s")
    for (_name, _sandbox), outcome in sorted(store.outcomes.items(), key=lambda kv: (kv[1].case.klass, kv[0])):
        case = outcome.case
        verdict = "ok" if not outcome.problems() else "UNEXPECTED"
        write(
            f"{case.klass} {case.name:34} {outcome.sandbox:6} expect {'|'.join(case.expected):30} "
            f"{outcome.seconds:5.1f}s {verdict:10} {outcome.actual()}"
        )
