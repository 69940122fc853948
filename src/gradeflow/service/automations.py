"""The automation that marks a grade ``Crashed`` when the process running it disappears.

A worker killed with its flow run (a lost machine, an OOM kill of the whole container) reports nothing;
Prefect learns of it only from the missing heartbeats. This proactive trigger fires when a flow run
that sent a heartbeat sends neither another one nor a final state within ``within`` seconds, and sets
it ``Crashed`` so it can be retried. Workers must send heartbeats:
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY=30`` (Prefect's minimum) with ``within`` comfortably above it.
"""

from __future__ import annotations

from datetime import timedelta

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

__all__ = ["ZOMBIE_AUTOMATION", "ensure_zombie_automation", "zombie_automation"]

ZOMBIE_AUTOMATION = "gradeflow-crash-zombie-flow-runs"
_FINAL = ("Completed", "Failed", "Cancelled", "Crashed")


def zombie_automation(within: int = 90) -> AutomationCore:
    """The automation (not yet created): no heartbeat nor final state for ``within`` s → ``Crashed``."""
    return AutomationCore(
        name=ZOMBIE_AUTOMATION,
        description="Mark flow runs whose heartbeats stopped as Crashed (their process is gone).",
        trigger=EventTrigger(
            match={"prefect.resource.id": ["prefect.flow-run.*"]},
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", *(f"prefect.flow-run.{state}" for state in _FINAL)},
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=within),
        ),
        actions=[
            ChangeFlowRunState(
                name="Crashed",
                force=False,
                state=StateType.CRASHED,
                message=f"No heartbeat for {within} s: the process running this flow run was lost.",
            )
        ],
    )


def ensure_zombie_automation(within: int = 90) -> None:
    """Create the automation unless one with its name exists (an operator's edits are kept)."""
    with get_client(sync_client=True) as client:
        if not client.read_automations_by_name(ZOMBIE_AUTOMATION):
            client.create_automation(zombie_automation(within))
