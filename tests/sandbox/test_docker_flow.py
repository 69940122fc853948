"""The docker sandbox through the grade-submission flow: parity with local, unavailability, cleanup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gradeflow import grade, load_task
from gradeflow.cli import main
from gradeflow.errors import SandboxUnavailable
from gradeflow.models import GradeResult, TaskSpec
from gradeflow.sandbox import DockerSandbox

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("prefect")]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _verdict(result: GradeResult) -> dict[str, Any]:
    return {
        "status": result.status,
        "score": result.score,
        "passed": result.passed,
        "decision": result.decision,
        "reasons": result.reason_codes,
        "components": [(c.name, c.role, round(c.score, 6), c.passed, c.reason_codes) for c in result.components],
    }


@pytest.mark.parametrize("example", ["calc", "tidy", "perf"])
def test_examples_grade_identically_under_local_and_docker(
    example: str, docker_client: Any, no_leftovers: None
) -> None:
    del docker_client, no_leftovers
    task = load_task(EXAMPLES / example / "task.yaml")
    for patch in ("reference.diff", "bad.diff"):
        local = grade(task, patch=EXAMPLES / example / patch, sandbox="local")
        docker = grade(task, patch=EXAMPLES / example / patch, sandbox="docker")
        assert _verdict(docker) == _verdict(local), patch
        assert docker.environment is not None and docker.environment.sandbox == "docker"
        assert local.environment is not None and docker.environment.key() != local.environment.key()
    assert local.status == "graded" and not local.passed


def _missing_image_task(tmp_path: Path, hostile_task: Callable[..., TaskSpec]) -> Path:
    spec = hostile_task(environment={"image": "does-not-exist:1"}).model_dump(mode="json")
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_missing_image_is_an_inconclusive_grade_and_exit_code_3(
    tmp_path: Path, hostile_task: Callable[..., TaskSpec], docker_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    del docker_client
    task = _missing_image_task(tmp_path, hostile_task)
    result = grade(task, patch="")
    assert (result.status, result.score, result.decision) == ("inconclusive", None, "inconclusive")
    assert result.reason_codes == ["sandbox-unavailable"]
    assert any("does-not-exist:1" in m and "scripts/build-image.sh" in m for m in result.messages)
    (tmp_path / "empty.diff").write_text("")
    assert main(["grade", str(task), "--patch", str(tmp_path / "empty.diff"), "--sandbox", "docker"]) == 3
    assert "INCONCLUSIVE (sandbox-unavailable)" in capsys.readouterr().out


def test_containers_are_removed_when_a_step_keeps_failing(
    grade_candidate: Callable[..., GradeResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    def engine_gone(self: DockerSandbox, name: str, max_bytes: int) -> None:
        raise SandboxUnavailable("docker sandbox: the engine went away")

    monkeypatch.setattr(DockerSandbox, "read_output", engine_gone)
    result = grade_candidate({"src/mod.py": 'def f():\n    return "ok"\n'})
    assert (result.status, result.reason_codes) == ("inconclusive", ["sandbox-unavailable"])


def test_containers_are_removed_when_a_step_crashes(
    grade_candidate: Callable[..., GradeResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(self: DockerSandbox, name: str, max_bytes: int) -> None:
        raise RuntimeError("a bug in gradeflow")

    monkeypatch.setattr(DockerSandbox, "read_output", crash)
    result = grade_candidate({"src/mod.py": 'def f():\n    return "ok"\n'})
    assert result.status == "inconclusive" and any("a bug in gradeflow" in m for m in result.messages)
