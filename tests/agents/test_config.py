"""The agents package's exports, the summary file, agent codes and trial keys (no Prefect, no sandbox)."""

from __future__ import annotations

from pathlib import Path

import gradeflow.agents
from agents.conftest import CALC
from gradeflow.agents import TrialConfig, parse_summary, plan_trials, trial_key
from gradeflow.agents.trial import AgentRun, agent_codes
from gradeflow.models.reasons import BUILTIN_REASON_CODES
from gradeflow.spec import load_task


def test_exports_are_sorted_and_present() -> None:
    exported = gradeflow.agents.__all__
    assert exported == sorted(exported, key=lambda name: (not name.isupper(), name))
    assert {
        "RepoEnv",
        "Run",
        "Read",
        "Write",
        "Submit",
        "run_trials",
        "plan_trials",
        "TrialConfig",
        "AgentSummary",
    } <= set(exported)
    assert all(getattr(gradeflow.agents, name) is not None for name in exported)


def test_summary_file() -> None:
    assert parse_summary(b'{"tool_calls": 2, "input_tokens": 10, "extra": "x"}').tool_calls == 2
    for bad in (None, b"", b"not json", b'{"tool_calls": -1}', b"[1]", b" " * 70_000):
        assert parse_summary(bad).model_dump() == {"tool_calls": None, "input_tokens": None, "output_tokens": None}


def test_agent_codes_are_registered() -> None:
    cases = [(AgentRun(exit_code=0), []), (AgentRun(timed_out=True), ["agent-timeout"])]
    cases.append((AgentRun(exit_code=3), ["agent-failed"]))
    for run, codes in cases:
        assert agent_codes(run) == codes
    assert {"agent-timeout", "agent-failed"} <= set(BUILTIN_REASON_CODES)


def test_trial_keys_follow_the_configuration() -> None:
    task = load_task(CALC)
    key = trial_key(task, TrialConfig(agent="nop"), None)
    assert key == trial_key(task, TrialConfig(agent="nop", agent_dir="/opt"), None)
    for other in (
        TrialConfig(agent="oracle"),
        TrialConfig(agent="nop", model_id="m"),
        TrialConfig(agent="nop", prompt_revision="v2"),
    ):
        assert trial_key(task, other, None) != key
    assert trial_key(task, TrialConfig(agent="nop"), "strict") != key


def test_agent_network_comes_from_the_spec_or_the_flag_and_leaves_the_spec_hash_alone(tmp_path: Path) -> None:
    text = CALC.read_text().replace("repo: ./repo", f"repo: {CALC.parent / 'repo'}")
    text = text.replace("hidden: ./hidden_tests", f"hidden: {CALC.parent / 'hidden_tests'}")
    (tmp_path / "task.yaml").write_text(text + "agent:\n  network: true\n")
    networked, plain = load_task(tmp_path / "task.yaml"), load_task(CALC)
    assert networked.agent.network and not plain.agent.network
    assert networked.spec_hash() == plain.spec_hash()
    assert plan_trials([networked], TrialConfig(agent="nop"), 1)[0].network
    assert not plan_trials([networked], TrialConfig(agent="nop", network=False), 1)[0].network
    assert trial_key(networked, TrialConfig(agent="nop"), None) != trial_key(plain, TrialConfig(agent="nop"), None)
