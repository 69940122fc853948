"""``gradeflow run`` end to end: real subprocess agents in the real isolated sandbox, on examples/calc."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.conftest import CALC
from gradeflow.agents import TrialConfig, TrialRun, plan_trials, run_trials
from gradeflow.api import grade
from gradeflow.evaluation.ledger import Ledger
from gradeflow.evaluation.suite import patch_hash
from gradeflow.models import Submission
from gradeflow.spec import load_task

FIX = r"s/        return None/        raise ZeroDivisionError(\"division by zero is undefined\")/"
SED_AGENT = f"sed -i '{FIX}' src/calc.py"


def test_oracle_three_times_gives_three_passing_records(trials: Callable[..., TrialRun]) -> None:
    done = trials("oracle", repeat=3, concurrency=2, model_id="oracle-check")
    assert [r.run_id for r in done.records] == ["trial-1", "trial-2", "trial-3"]
    assert all(r.passed and r.status == "graded" and r.model_id == "oracle-check" for r in done.records)
    assert [t.exit_code for t in done.trials] == [0, 0, 0]
    assert (done.ran, done.skipped, done.failed) == (3, 0, [])
    stored = _stored_parameters(done.trials[0].flow_run_id)
    assert "calc-divzero" in stored and "clear message" not in stored  # the reference's text is not kept


def _stored_parameters(flow_run_id: str) -> str:
    """The parameters Prefect's API keeps for a flow run, as JSON."""
    import json
    from uuid import UUID

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return json.dumps(client.read_flow_run(UUID(flow_run_id)).parameters, default=str)


def test_nop_fails(trials: Callable[..., TrialRun]) -> None:
    (record,) = trials("nop").records
    assert record.status == "graded" and not record.passed
    assert "empty-patch" in record.reason_codes


def _same_diff_graded(tmp_path: Path) -> tuple[str, object]:
    """The diff the sed agent makes, made on the host and graded as a patch."""
    repo = tmp_path / "host-copy"
    shutil.copytree(CALC.parent / "repo", repo)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["sed", "-i", FIX, "src/calc.py"], cwd=repo, check=True)
    diff = subprocess.run(["git", "diff"], cwd=repo, check=True, capture_output=True, text=True).stdout
    return diff, grade(CALC, patch=diff, submission_id="same-diff")


def test_a_sed_agent_is_graded_like_the_same_diff(trials: Callable[..., TrialRun], tmp_path: Path) -> None:
    (record,) = trials(SED_AGENT).records
    diff, result = _same_diff_graded(tmp_path)
    assert record.passed and record.status == "graded"
    assert (record.score, record.passed, record.reason_codes) == (result.score, result.passed, result.reason_codes)  # type: ignore[attr-defined]
    assert record.patch_hash == patch_hash(Submission.of_patch("same-diff", diff))


def test_an_agent_past_its_timeout_is_recorded_and_graded_on_what_it_left(trials: Callable[..., TrialRun]) -> None:
    done = trials(f"{SED_AGENT} && sleep 60", timeout=3)
    (record,), (trial,) = done.records, done.trials
    assert trial.timed_out and trial.exit_code is None
    assert "agent-timeout" in record.reason_codes
    assert record.status == "graded" and record.score == 1.0


def test_a_failing_agent_is_recorded_agent_failed(trials: Callable[..., TrialRun]) -> None:
    done = trials(f"{SED_AGENT} && exit 7")
    (record,), (trial,) = done.records, done.trials
    assert trial.exit_code == 7 and "agent-failed" in record.reason_codes and record.score == 1.0


def test_the_summary_file_gives_tool_calls_and_tokens(trials: Callable[..., TrialRun]) -> None:
    summary = '{"tool_calls": 4, "input_tokens": 1200, "output_tokens": 300}'
    done = trials(f'test -s "$GRADEFLOW_ISSUE_FILE" || true; echo \'{summary}\' > "$GRADEFLOW_AGENT_SUMMARY"')
    (record,), (trial,) = done.records, done.trials
    assert (trial.tool_calls, trial.input_tokens, trial.output_tokens) == (4, 1200, 300)
    assert record.tool_calls == 4


def test_a_sandbox_that_cannot_start_is_inconclusive(trials: Callable[..., TrialRun], monkeypatch: object) -> None:
    import gradeflow.sandbox.isolated as isolated

    def refused(self: object, host_workspace: Path) -> object:
        raise isolated.SandboxUnavailable("isolated sandbox: bwrap refused (test)")

    monkeypatch.setattr(isolated.IsolatedSandboxFactory, "open", refused)  # type: ignore[attr-defined]
    done = trials("nop", sandbox="isolated")
    (record,) = done.records
    assert record.status == "inconclusive" and record.reason_codes == ["sandbox-unavailable"]


def _search_agent(tmp_path: Path) -> Path:
    """The searching agent's installation: its script and the Prefect API's port, in a folder shown read-only."""
    from urllib.parse import urlparse

    from prefect.settings import PREFECT_API_URL

    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(Path(__file__).parent / "search_agent.py", folder / "search_agent.py")
    (folder / "prefect-port").write_text(str(urlparse(PREFECT_API_URL.value() or "http://127.0.0.1:4200").port or 80))
    folder.chmod(0o755)
    return folder


def test_an_agent_searching_for_the_grader_s_secrets_finds_nothing(
    trials: Callable[..., TrialRun], tmp_path: Path
) -> None:
    folder = _search_agent(tmp_path)
    done = trials(f"python {folder}/search_agent.py", agent_dir=str(folder), timeout=300)
    (trial,) = done.trials
    assert trial.exit_code == 0


def test_the_same_search_reaches_the_prefect_api_from_the_local_sandbox(
    trials: Callable[..., TrialRun], tmp_path: Path
) -> None:
    """The search has teeth: where nothing isolates the agent, it reaches what the isolated sandbox hides."""
    folder = _search_agent(tmp_path)
    done = trials(f"python {folder}/search_agent.py", sandbox="local", timeout=300)
    (trial,) = done.trials
    assert trial.exit_code == 1


def _agent_artifact(flow_run_id: str) -> str:
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)]))
        )
    return "\n".join(str(a.data) for a in found if (a.key or "").startswith("agent-"))


def test_the_agent_s_output_is_a_redacted_artifact_and_never_in_the_ledger(
    trials: Callable[..., TrialRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cret-token-for-the-model-api-0451"
    monkeypatch.setenv("GF_MODEL_KEY", secret)
    done = trials('echo "key=$GF_MODEL_KEY"; echo visible-progress-line >&2', passed_env=("GF_MODEL_KEY",))
    (trial,), (record,) = done.trials, done.records
    shown = _agent_artifact(trial.flow_run_id)
    assert "visible-progress-line" in shown and "key=[redacted]" in shown and secret not in shown
    kept = trial.model_dump_json() + record.model_dump_json()
    assert "visible-progress-line" not in kept and secret not in kept


@pytest.mark.usefixtures("prefect")
def test_the_agent_gets_the_issue_read_only_and_its_identifiers(ledger: Ledger, tmp_path: Path) -> None:
    task_dir = tmp_path / "calc"
    shutil.copytree(CALC.parent, task_dir)
    spec = task_dir / "task.yaml"
    spec.write_text(spec.read_text() + 'issue: "calc.divide(x, 0) returns None; it should raise."\n')
    checks = [
        'grep -q "returns None; it should raise" "$GRADEFLOW_ISSUE_FILE"',
        '! (echo tampered >> "$GRADEFLOW_ISSUE_FILE") 2>/dev/null',
        'test "$GRADEFLOW_MODEL_ID/$GRADEFLOW_PROMPT_REVISION/$GRADEFLOW_TRIAL" = "m1/r2/trial-1"',
        'test "$GRADEFLOW_TASK_ID" = calc-divzero && test "$(git rev-list --count HEAD)" = 1',
    ]
    config = TrialConfig(agent=" && ".join(checks), model_id="m1", prompt_revision="r2")
    done = run_trials(plan_trials([load_task(spec)], config, 1), ledger, show_progress=False)
    assert done.trials[0].exit_code == 0
