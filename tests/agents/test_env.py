"""``RepoEnv`` on the real isolated sandbox: an episode's reward is what ``gradeflow grade --workspace`` gives."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from agents.conftest import CALC
from gradeflow.agents import InconclusiveGrade, Read, RepoEnv, Run, Submit, Write
from gradeflow.cli.main import main
from gradeflow.errors import SpecError
from gradeflow.sandbox.base import remove_tree
from gradeflow.spec import load_task

FIX = "sed -i 's/return None/raise ZeroDivisionError(\"division by zero is undefined\")/' src/calc.py"


@pytest.mark.usefixtures("prefect")
def test_an_episode_is_rewarded_like_grade_workspace(capsys: pytest.CaptureFixture[str]) -> None:
    env = RepoEnv(CALC, keep_workspace=True)
    try:
        observation, info = env.reset()
        assert "src/calc.py" in observation.files and info["task_id"] == "calc-divzero"
        assert not any("hidden" in f for f in observation.files)
        ran = env.step(Run(FIX))
        assert ran[0].exit_code == 0 and ran[1:4] == (0.0, False, False)
        env.step(Write("src/notes.py", '"""Notes."""\n'))
        assert "ZeroDivisionError" in env.step(Read("src/calc.py"))[0].output
        _, reward, terminated, truncated, info = env.step(Submit())
        assert (terminated, truncated) == (True, False)
        workspace = env.workspace
    finally:
        env.close()
    assert workspace is not None and (workspace / "src" / "notes.py").is_file()
    capsys.readouterr()
    main(["grade", str(CALC), "--workspace", str(workspace), "--json"])
    graded = json.loads(capsys.readouterr().out)
    assert reward == graded["score"] == info["result"].score
    assert info["result"].reason_codes == graded["reason_codes"]
    # Where the reward's time went; calc withholds its hidden tests' details: no tests step, no engine figure.
    assert {"bring_back", "snapshot", "constraints", "combine"} <= set(info["time"])
    assert "tests" not in info["time"] and "engine" not in info["time"]
    remove_tree(workspace.parent)


@pytest.mark.usefixtures("prefect")
def test_a_reward_says_where_its_time_went() -> None:
    calc = load_task(CALC)
    published = calc.tests.model_copy(update={"publish_hidden_details": True})
    with RepoEnv(calc.model_copy(update={"tests": published})) as env:
        env.reset()
        env.step(Run(FIX))
        _, reward, _, _, info = env.step(Submit())
    spent, timings = info["time"], info["result"].timings
    assert reward == 1.0 and {"bring_back", "tests", "engine"} <= set(spent)
    assert {name: spent[name] for name in timings} == {name: round(s, 3) for name, s in timings.items()}
    assert spent["tests"] > 0 and spent["engine"] >= 0


@pytest.mark.usefixtures("prefect")
def test_the_step_budget_truncates_and_close_removes_the_workspace() -> None:
    with RepoEnv(CALC, max_steps=2) as env:
        env.reset()
        assert env.step(Run("true"))[3] is False
        _, reward, terminated, truncated, _ = env.step(Run("cat /nonexistent"))
        assert (reward, terminated, truncated) == (0.0, False, True)
        with pytest.raises(RuntimeError, match="reset"):
            env.step(Submit())
        workspace = env.workspace
    assert workspace is not None and not Path(workspace).exists()


@pytest.mark.usefixtures("prefect")
def test_the_time_budget_stops_a_command_and_truncates() -> None:
    with RepoEnv(CALC, time_limit=1.0) as env:
        env.reset()
        observation, reward, terminated, truncated, info = env.step(Run("sleep 30"))
        assert info["timed_out"] and observation.exit_code is None
        assert (reward, terminated, truncated) == (0.0, False, True)


@pytest.mark.usefixtures("prefect")
def test_a_workspace_that_cannot_be_graded_has_no_reward(tmp_path: Path) -> None:
    """A broken base (its setup fails) makes the grade inconclusive: ``Submit`` raises, never rewards 0.0."""
    task_dir = tmp_path / "calc"
    shutil.copytree(CALC.parent, task_dir)
    spec = task_dir / "task.yaml"
    spec.write_text(spec.read_text().replace("setup: null", 'setup: "exit 3"'))
    with RepoEnv(spec) as env:
        env.reset()
        env.step(Run(FIX))
        with pytest.raises(InconclusiveGrade) as raised:
            env.step(Submit())
        with pytest.raises(RuntimeError, match="reset"):
            env.step(Run("true"))
    result = raised.value.result
    assert (result.status, result.score, result.reason_codes) == ("inconclusive", None, ["setup-failed"])
    assert raised.value.reason_code == "setup-failed" and raised.value.exit_code == 3


@pytest.mark.usefixtures("prefect")
def test_a_reward_dimension_the_grade_did_not_measure_is_an_error_not_zero(tmp_path: Path) -> None:
    """The profile declares ``speed`` (missing: skip), calc has no benchmark: ``Submit`` raises, never 0.0."""
    profile = tmp_path / "speedy.yaml"
    profile.write_text(
        "name: speedy\n"
        "dimensions:\n"
        "  behavior: {weight: 1.0, missing: skip, must_pass: true}\n"
        "  speed: {weight: 0.5, missing: skip}\n"
    )
    with RepoEnv(CALC, profile=str(profile), reward="speed") as env:
        env.reset()
        env.step(Run(FIX))
        with pytest.raises(SpecError, match=r"reward: 'speed' was not measured for task calc-divzero"):
            env.step(Submit())
    with RepoEnv(CALC, profile=str(profile), reward="behavior") as env:
        env.reset()
        env.step(Run(FIX))
        _, reward, terminated, _, info = env.step(Submit())
    assert (reward, terminated) == (1.0, True) and info["result"].dimensions == {"behavior": 1.0, "speed": None}


def _summaries(key: str) -> int:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return len(client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))))


@pytest.mark.usefixtures("prefect")
def test_a_rewards_artifacts_are_posted_after_it_returns_and_all_there_once_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gradeflow.tasks import artifacts

    assert artifacts.flush_artifacts()  # nothing an earlier test's episodes handed over is still to post
    released, posted = threading.Event(), list[str]()
    post = artifacts._post

    def held(batch: list[Any]) -> None:  # posts only once the test has its reward
        assert released.wait(120)
        post(batch)
        posted.extend(a.key for a in batch)

    monkeypatch.setattr(artifacts, "_post", held)
    key = "grade-calc-divzero-episode-summary"
    before = _summaries(key)
    with RepoEnv(CALC) as env:
        for _ in range(2):
            env.reset()
            env.step(Run(FIX))
            _, reward, _, _, _ = env.step(Submit())
            assert reward == 1.0 and posted == []  # the reward came before its artifacts
        released.set()
    # close waited for both episodes' artifacts: in Prefect, in order.
    assert posted == [f"{key[:-8]}-{part}" for _ in range(2) for part in ("components", "summary")]
    assert _summaries(key) == before + 2
