"""Starting grade runs through the Prefect API, for the webhook receiver."""

from __future__ import annotations

import asyncio
from uuid import UUID

from prefect.client.orchestration import PrefectClient, get_client

from gradeflow.service.params import GradeRequest

__all__ = ["PrefectStarter"]


class PrefectStarter:
    """Creates runs of the ``grade-submission`` deployment through the Prefect API (``PREFECT_API_URL``).

    One client and one deployment lookup for the receiver's lifetime, and at most ``limit`` creations in
    flight: a burst queues here instead of piling onto the server's database (SQLite locks under it).
    """

    def __init__(self, limit: int = 4) -> None:
        self._limit = limit
        self._gate: asyncio.Semaphore | None = None
        self._client: PrefectClient | None = None
        self._deployment_id: UUID | None = None

    async def __call__(self, request: GradeRequest, idempotency_key: str) -> str:
        from gradeflow.service.deployments import GRADE_DEPLOYMENT
        from gradeflow.service.flows import run_tags

        if self._gate is None or self._client is None:
            self._gate, self._client = asyncio.Semaphore(self._limit), await get_client().__aenter__()
        async with self._gate:
            if self._deployment_id is None:
                self._deployment_id = (await self._client.read_deployment_by_name(GRADE_DEPLOYMENT)).id
            run = await self._client.create_flow_run_from_deployment(
                self._deployment_id,
                parameters={"request": request.model_dump(mode="json")},
                name=f"grade-{request.task_id}-{request.submission_id}",
                idempotency_key=f"webhook:{idempotency_key}",
                tags=run_tags(request, None),
            )
        return str(run.id)

    async def aclose(self) -> None:
        """Close the client (at application shutdown)."""
        if self._client is not None:
            await self._client.__aexit__(None, None, None)
            self._client = None
