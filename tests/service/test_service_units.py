"""The service's pieces without a server: config, tags, task folder, delivery store, deployments, runners."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from service_procs import EXAMPLES

from gradeflow.cli import main
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import Ledger
from gradeflow.service.automations import ZOMBIE_AUTOMATION, zombie_automation
from gradeflow.service.config import DEFAULT_SCHEDULE, load_service_config
from gradeflow.service.deliveries import DeliveryStore, request_key
from gradeflow.service.deployments import build_deployments
from gradeflow.service.flows import run_tags
from gradeflow.service.params import EvaluateRequest, GradeRequest
from gradeflow.service.runners import task_runner
from gradeflow.service.tasks_dir import find_task_specs


def test_without_a_file_every_default_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADEFLOW_CONFIG", raising=False)
    config = load_service_config()
    assert (config.schedule, config.timezone, config.sandbox_slots, config.crash_after) == (
        DEFAULT_SCHEDULE,
        "UTC",
        4,
        90,
    )
    assert config.suite == str(tmp_path / "suite.yaml")


def test_the_suite_resolves_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    file = tmp_path / "conf" / "gradeflow.yaml"
    file.write_text("schedule: '15 1 * * *'\nsuite: ../suites/s.yaml\ngithub: {repos: {a/b: t1}}\n")
    config = load_service_config(file)
    assert config.schedule == "15 1 * * *"
    assert config.suite == str(tmp_path / "suites" / "s.yaml")
    assert config.github.repos == {"a/b": "t1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [("shedule: x\n", "unknown key 'shedule'"), ("sandbox_slots: 0\n", "sandbox_slots"), ("- a\n", "YAML mapping")],
)
def test_a_bad_config_names_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "gradeflow.yaml"
    file.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_service_config(file)


def test_run_tags_name_the_task_model_profile_and_decision() -> None:
    request = GradeRequest(task_id="t1", task_path="t.yaml", submission_id="s", patch="", metadata={"model": "gpt x"})
    assert run_tags(request, None) == ["task:t1", "model:gpt-x"]


def test_task_specs_are_found_by_task_id(tmp_path: Path) -> None:
    found = find_task_specs(EXAMPLES)
    assert found["calc-divzero"] == (EXAMPLES / "calc" / "task.yaml").resolve()
    assert "suite" not in "".join(found)


def test_two_task_specs_with_one_id_are_refused(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        text = (
            (EXAMPLES / "calc" / "task.yaml").read_text().replace("repo: ./repo", f"repo: {EXAMPLES / 'calc' / 'repo'}")
        )
        text = text.replace("hidden: ./hidden_tests", f"hidden: {EXAMPLES / 'calc' / 'hidden_tests'}")
        (tmp_path / name / "task.yaml").write_text(text)
    with pytest.raises(SpecError, match="also used by"):
        find_task_specs(tmp_path)


def test_the_delivery_store_claims_once_and_survives_a_reopen(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path / "d" / "deliveries.db")
    assert store.claim("x") and not store.claim("x")
    store.release("x")
    assert store.claim("x")
    store.record("x", "run-1")
    store.release("x")  # a recorded delivery is never released
    store.close()
    reopened = DeliveryStore(tmp_path / "d" / "deliveries.db")
    assert not reopened.claim("x")
    assert reopened.flow_run_of("x") == "run-1"
    reopened.close()


def test_a_request_key_changes_with_each_thing_graded_and_nothing_else() -> None:
    base = ("spec", "s-1", "patch", "default")
    keys = {request_key(*base)}
    for i in range(4):
        changed = list(base)
        changed[i] += "'"
        keys.add(request_key(*changed))
    assert len(keys) == 5 and request_key(*base) == request_key(*base)


def test_webhook_profiles_resolve_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    file = tmp_path / "conf" / "gradeflow.yaml"
    file.write_text("webhook: {profiles: [../p/mine.yaml], body_timeout: 3}\n")
    config = load_service_config(file)
    assert config.webhook.profiles == [str(tmp_path / "p" / "mine.yaml")]
    assert config.webhook.body_timeout == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("webhook: {body_timeout: 0}\n", "webhook.body_timeout"),
        ("webhook: {body_timeout: .inf}\n", "webhook.body_timeout"),
        ("webhook: {profile: [a]}\n", "unknown key 'webhook.profile'"),
        ("schedule: '1 * * * *'\nschedule: '2 * * * *'\n", "gradeflow.yaml:2:1: duplicate key 'schedule'"),
    ],
)
def test_a_bad_webhook_config_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "gradeflow.yaml"
    file.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_service_config(file)


def test_the_deployments_carry_the_schedule_and_the_form(tmp_path: Path) -> None:
    file = tmp_path / "gradeflow.yaml"
    file.write_text("schedule: '0 4 * * 1'\ntimezone: Europe/Paris\nconcurrency: 3\n")
    grade, evaluate, review, trials = build_deployments(load_service_config(file), work_pool="p")
    assert (grade.name, evaluate.name, review.name) == ("grade-submission", "evaluate-suite", "ask-reviewer")
    assert (trials.name, trials.entrypoint) == ("agent-trials", "gradeflow.agents.service.run_trials_request")
    assert trials.schedules == [] and "TrialsRequest" in str(trials._parameter_openapi_schema.model_dump())
    assert review.entrypoint == "gradeflow.service.review.review_grade" and review.schedules == []
    assert grade.entrypoint == "gradeflow.service.flows.grade_request"
    assert grade.schedules == [] and grade.work_pool_name == "p"
    schedule = evaluate.schedules[0].schedule
    assert (getattr(schedule, "cron", None), getattr(schedule, "timezone", None)) == ("0 4 * * 1", "Europe/Paris")
    assert evaluate.parameters["request"]["concurrency"] == 3
    form = grade._parameter_openapi_schema.model_dump()
    assert "GradeRequest" in str(form)


def test_the_crash_automation_watches_heartbeats() -> None:
    automation = zombie_automation(60)
    assert automation.name == ZOMBIE_AUTOMATION
    trigger = automation.trigger
    assert getattr(trigger, "after", None) == {"prefect.flow-run.heartbeat"}
    assert getattr(trigger, "within", None).total_seconds() == 60  # type: ignore[union-attr]


def test_a_ledger_pickles_as_its_url(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path / "l.db"))
    copy = pickle.loads(pickle.dumps(ledger))
    assert isinstance(copy, Ledger) and copy.url == ledger.url
    ledger.close()
    copy.close()


def test_the_task_runner_is_dask_only_with_an_address() -> None:
    assert type(task_runner(EvaluateRequest(suite="s.yaml"))).__name__ == "ThreadPoolTaskRunner"
    assert type(task_runner(EvaluateRequest(suite="s.yaml", dask_address="tcp://h:8786"))).__name__ == "DaskTaskRunner"


@pytest.mark.parametrize("command", ["serve", "deploy", "webhook"])
def test_the_service_commands_are_registered(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert "--config" in capsys.readouterr().out


def test_webhook_without_a_secret_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GRADEFLOW_WEBHOOK_SECRET", raising=False)
    assert main(["webhook", "--tasks", str(EXAMPLES)]) == 2
    assert "GRADEFLOW_WEBHOOK_SECRET" in capsys.readouterr().err
