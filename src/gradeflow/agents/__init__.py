"""Launching agents: trials in the task's sandbox, repeated, graded and recorded (``gradeflow run``), and
``RepoEnv``, the grader as an environment's reward."""

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
from gradeflow.agents.env import Action, InconclusiveGrade, Observation, Read, RepoEnv, Run, Submit, Write
from gradeflow.agents.flows import RecordedTrial, TrialOutcome, TrialRun, agent_trial, run_trials_flow
from gradeflow.agents.run import oracle_references, plan_trials, preflight, reference_beside, run_trials
from gradeflow.agents.trial import AgentRun

__all__ = [
    "BUILTIN_AGENTS",
    "ISSUE_VARIABLE",
    "SUMMARY_VARIABLE",
    "Action",
    "AgentRun",
    "AgentSummary",
    "InconclusiveGrade",
    "Observation",
    "PlannedTrial",
    "Read",
    "RecordedTrial",
    "RepoEnv",
    "Run",
    "Submit",
    "TrialConfig",
    "TrialOutcome",
    "TrialRun",
    "Write",
    "agent_trial",
    "oracle_references",
    "parse_summary",
    "plan_trials",
    "preflight",
    "reference_beside",
    "run_trials",
    "run_trials_flow",
    "trial_key",
]
