"""What the service and the agent runs both stand on: gradeflow's local Prefect server, the service's
credentials (the private ledger's password), the trust check of a request's sandbox, and the name of the
global concurrency limit every sandbox slot is held under. Below ``service/`` and ``agents/``, so that
imports point one way."""

SANDBOX_LIMIT = "gradeflow-sandbox"
"""The global concurrency limit every service grade and agent trial holds one slot of while it uses a sandbox."""

__all__ = ["SANDBOX_LIMIT"]
