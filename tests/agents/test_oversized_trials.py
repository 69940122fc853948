"""What an agent leaves comes back to the host counted as it is copied: a tree over the checkout's limits (a
sparse file by its apparent size) stops the copy and is graded 0 as ``submission-too-large``, and the host
disk holds no more than the limit."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.conftest import CALC
from gradeflow.agents import RepoEnv, Run, Submit, TrialRun
from gradeflow.agents import trial as trial_steps
from gradeflow.sandbox.base import OutputTooLarge, archive_tree
from sandbox.conftest import docker_client  # noqa: F401  (the fixture: a live engine, skipped without one)

SPARSE_AGENT = "truncate -s 64M src/big.bin"


def test_an_archive_stops_at_its_limit_and_a_sparse_file_counts_whole(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    with (tree / "big.bin").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # 64 MiB apparent, no block on disk
    assert os.stat(tree / "big.bin").st_blocks == 0
    with pytest.raises(OutputTooLarge, match="over 1048576 bytes"):
        archive_tree(tree, tmp_path / "capped.tar", max_bytes=1024 * 1024)
    assert (tmp_path / "capped.tar").stat().st_size <= 1024 * 1024
    archive_tree(tree, tmp_path / "whole.tar", max_bytes=None)
    assert (tmp_path / "whole.tar").stat().st_size > 64 * 1024 * 1024


@pytest.mark.docker
@pytest.mark.usefixtures("docker_client")
def test_a_docker_agent_leaving_more_than_a_checkout_holds_is_graded_too_large(
    trials: Callable[..., TrialRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real limit is the checkout's 4 GiB and then some: 8 MiB here, so the copy stops after 8 MiB of zeros.
    monkeypatch.setattr(trial_steps, "EXPORT_LIMIT", 8 * 1024 * 1024)
    done = trials(SPARSE_AGENT, sandbox="docker", model_id="docker-sparse")
    (record,), (run,) = done.records, done.trials
    assert run.exit_code == 0
    assert record.status == "graded" and not record.passed and record.score == 0.0
    assert "submission-too-large" in record.reason_codes, record.reason_codes
    # An honest agent under the same limit comes back and passes: the limit is on size, not on trials.
    honest = trials("oracle", sandbox="docker", model_id="docker-oracle-small")
    assert honest.records[0].passed, honest.records[0].reason_codes


@pytest.mark.docker
@pytest.mark.usefixtures("docker_client", "prefect")
def test_a_docker_episode_leaving_more_than_a_checkout_holds_is_rewarded_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trial_steps, "EXPORT_LIMIT", 8 * 1024 * 1024)
    with RepoEnv(CALC, sandbox="docker") as env:
        env.reset()
        assert env.step(Run(SPARSE_AGENT))[0].exit_code == 0
        _, reward, terminated, _, info = env.step(Submit())
        workspace = env.workspace
        assert workspace is not None and not (workspace / "src" / "big.bin").exists()  # nothing of it came back
    assert terminated and reward == 0.0
    assert info["result"].reason_codes == ["submission-too-large"]
