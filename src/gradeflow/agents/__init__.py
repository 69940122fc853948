"""Launching agents: trials in the task's sandbox, repeated, graded and recorded (``gradeflow run``)."""

from gradeflow.agents.config import (
    BUILTIN_AGENTS,
    ISSUE_VARIABLE,
    SUMMARY_VARIABLE,
    AgentSummary,
    PlannedTrial,
    TrialConfig,
    parse_summary,
    trial_key,
)
from gradeflow.agents.flows import TrialOutcome, TrialRun, agent_trial, run_trials_flow
from gradeflow.agents.run import plan_trials, reference_beside, run_trials
from gradeflow.agents.trial import AgentRun

__all__ = [
    "BUILTIN_AGENTS",
    "ISSUE_VARIABLE",
    "SUMMARY_VARIABLE",
    "AgentRun",
    "AgentSummary",
    "PlannedTrial",
    "TrialConfig",
    "TrialOutcome",
    "TrialRun",
    "agent_trial",
    "parse_summary",
    "plan_trials",
    "reference_beside",
    "run_trials",
    "run_trials_flow",
    "trial_key",
]
