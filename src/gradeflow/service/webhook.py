"""The signed-webhook receiver: ``POST /hooks/grade`` and ``POST /hooks/github`` start grades through Prefect.

Every delivery is checked in this order, each failure answered with a JSON ``{"error", "detail"}``:

1. body larger than 1 MiB, counted while reading (``Content-Length`` is not trusted) → 413;
2. ``X-Hub-Signature-256: sha256=<hex>`` missing → 401, not the HMAC-SHA256 of the raw body under
   ``GRADEFLOW_WEBHOOK_SECRET`` (constant-time comparison) → 401;
3. not JSON → 400; a field missing or invalid, an unknown task or repository → 422;
4. a delivery id seen before (``X-GitHub-Delivery``; for ``/hooks/grade`` without it, the body's
   SHA-256) → 409, and no second run;
5. otherwise a flow run of the ``grade-submission`` deployment is created through the Prefect API,
   with the delivery id as its idempotency key, and the answer is 202 ``{"flow_run_id": "<uuid>"}``.
   When the Prefect API cannot be reached, or does not answer within 8 s, the answer is 503 and the
   delivery may be sent again: should the run have been created after all, the redelivery's identical
   idempotency key makes Prefect return that run instead of creating a second one.

The grade never runs inside the request: a worker or ``gradeflow serve`` picks the run up.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gradeflow.config import cache_dir
from gradeflow.errors import SpecError
from gradeflow.service.config import ServiceConfig
from gradeflow.service.deliveries import DeliveryStore
from gradeflow.service.github import GRADED_ACTIONS, DiffUnavailable, fetch_diff, parse_pull_request
from gradeflow.service.params import GradeRequest
from gradeflow.service.starter import PrefectStarter
from gradeflow.service.tasks_dir import find_task_specs

__all__ = ["MAX_BODY_BYTES", "PrefectStarter", "Receiver", "RunStarter", "create_app", "run_webhook", "sign"]

MAX_BODY_BYTES = 1 << 20
RunStarter = Callable[[GradeRequest, str], Awaitable[str]]
"""Creates the flow run of one request under an idempotency key and returns its id (:class:`PrefectStarter`)."""
DiffFetcher = Callable[[str], Awaitable[str]]


class Rejection(Exception):
    """A delivery refused with ``status`` and a short machine-readable ``error`` code."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.error, self.detail = status, error, detail


@dataclass
class Receiver:
    """Everything the routes need; built once by :func:`create_app`."""

    secret: bytes
    tasks: dict[str, Path]
    store: DeliveryStore
    config: ServiceConfig
    start_run: RunStarter
    fetch: DiffFetcher
    deadline: float = 8.0
    """Seconds a run creation may take before the answer is 503 (GitHub gives up on a hook after 10 s)."""


def sign(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` header value of ``body`` (what a sender computes)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


async def _read_body(request: Request) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise Rejection(413, "too-large", f"body larger than {MAX_BODY_BYTES} bytes")
    return bytes(body)


def _verify(secret: bytes, body: bytes, header: str | None) -> None:
    if not header:
        raise Rejection(401, "unsigned", "X-Hub-Signature-256 header is missing")
    if not hmac.compare_digest(sign(secret, body).encode(), header.strip().encode()):
        raise Rejection(401, "bad-signature", "X-Hub-Signature-256 does not match the body")


async def _signed_json(receiver: Receiver, request: Request) -> Any:
    body = await _read_body(request)
    _verify(receiver.secret, body, request.headers.get("x-hub-signature-256"))
    try:
        return json.loads(body), body
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejection(400, "malformed", f"body is not JSON: {exc}") from None


async def _accept(receiver: Receiver, delivery: str, build: Callable[[], Awaitable[GradeRequest]]) -> JSONResponse:
    if not receiver.store.claim(delivery):
        raise Rejection(409, "replayed", f"delivery {delivery} was accepted before")
    try:
        grade = await build()
        run_id = await asyncio.wait_for(receiver.start_run(grade, delivery), receiver.deadline)
    except Rejection:
        receiver.store.release(delivery)
        raise
    except Exception as exc:  # the API boundary: any failure to start is the sender's cue to redeliver
        # Safe even if the run was created after all: a redelivery carries the same Prefect idempotency key.
        receiver.store.release(delivery)
        reason = "no answer within the deadline" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        raise Rejection(503, "prefect-unavailable", reason) from None
    receiver.store.record(delivery, run_id)
    return JSONResponse({"flow_run_id": run_id}, status_code=202)


def _grade_request(receiver: Receiver, task_id: Any, **fields: Any) -> GradeRequest:
    path = receiver.tasks.get(str(task_id))
    if path is None:
        raise Rejection(422, "unknown-task", f"no task spec with task_id {task_id!r}")
    try:
        return GradeRequest(task_id=str(task_id), task_path=str(path), ledger=receiver.config.ledger, **fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Rejection(422, "invalid", f"{where}: {first['msg']}") from None


async def grade_hook(request: Request) -> JSONResponse:
    """``POST /hooks/grade``: ``{"task_id", "submission_id", "patch", "metadata"}``."""
    receiver: Receiver = request.app.state.receiver
    payload, body = await _signed_json(receiver, request)
    if not isinstance(payload, dict):
        raise Rejection(422, "invalid", "the payload is a JSON object")
    missing = [key for key in ("task_id", "submission_id", "patch") if key not in payload]
    if missing:
        raise Rejection(422, "invalid", f"missing field(s): {', '.join(missing)}")
    known = {"submission_id", "patch", "metadata", "profile"}
    fields = {key: value for key, value in payload.items() if key in known}
    grade = _grade_request(receiver, payload["task_id"], **fields)
    delivery = request.headers.get("x-github-delivery") or "sha256:" + hashlib.sha256(body).hexdigest()

    async def build() -> GradeRequest:
        return grade

    return await _accept(receiver, delivery, build)


async def github_hook(request: Request) -> JSONResponse:
    """``POST /hooks/github``: a ``pull_request`` event (``opened``/``reopened``/``synchronize``)."""
    receiver: Receiver = request.app.state.receiver
    payload, _ = await _signed_json(receiver, request)
    event, delivery = request.headers.get("x-github-event", ""), request.headers.get("x-github-delivery")
    if not delivery:
        raise Rejection(400, "no-delivery-id", "X-GitHub-Delivery header is missing")
    if event != "pull_request":
        return JSONResponse({"ignored": f"event {event or '(none)'}"}, status_code=200)
    try:
        pr = parse_pull_request(payload)
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise Rejection(422, "invalid", f"not a pull_request event: missing or bad {exc}") from None
    if pr.action not in GRADED_ACTIONS:
        return JSONResponse({"ignored": f"action {pr.action}"}, status_code=200)
    task_id = receiver.config.github.repos.get(pr.repo)
    if task_id is None:
        raise Rejection(422, "unknown-repo", f"repository {pr.repo} is not mapped to a task (config github.repos)")

    async def build() -> GradeRequest:
        if not receiver.config.github.fetch_diffs:
            raise Rejection(422, "no-diff", "fetching diffs is disabled (config github.fetch_diffs)")
        try:
            patch = await receiver.fetch(pr.diff_url)
        except DiffUnavailable as exc:
            raise Rejection(502, "diff-unavailable", str(exc)) from None
        return _grade_request(receiver, task_id, submission_id=pr.submission_id, patch=patch, metadata=pr.metadata())

    return await _accept(receiver, delivery, build)


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "tasks": sorted(request.app.state.receiver.tasks)})


async def _rejected(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Rejection)
    return JSONResponse({"error": exc.error, "detail": exc.detail}, status_code=exc.status)


def _lifespan(starter: RunStarter) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if isinstance(starter, PrefectStarter):
            await starter.aclose()
        app.state.receiver.store.close()

    return lifespan


def create_app(
    tasks_dir: str | Path,
    config: ServiceConfig | None = None,
    *,
    secret: str | None = None,
    store_path: Path | None = None,
    start_run: RunStarter | None = None,
    fetch: DiffFetcher | None = None,
) -> Starlette:
    """The receiver app; ``SpecError`` when no secret is set or the task folder holds no task spec."""
    secret = secret if secret is not None else os.environ.get("GRADEFLOW_WEBHOOK_SECRET", "")
    if not secret:
        raise SpecError("GRADEFLOW_WEBHOOK_SECRET is not set: the receiver refuses to run without a secret")
    config = config or ServiceConfig()
    starter = start_run or PrefectStarter()
    receiver = Receiver(
        secret=secret.encode(),
        tasks=find_task_specs(Path(tasks_dir)),
        store=DeliveryStore(store_path or cache_dir() / "webhook-deliveries.db"),
        config=config,
        start_run=starter,
        fetch=fetch or (lambda url: fetch_diff(url, config.github.token_env)),
    )
    app = Starlette(
        routes=[
            Route("/hooks/grade", grade_hook, methods=["POST"]),
            Route("/hooks/github", github_hook, methods=["POST"]),
            Route("/healthz", health, methods=["GET"]),
        ],
        exception_handlers={Rejection: _rejected},
        lifespan=_lifespan(starter),
    )
    app.state.receiver = receiver
    return app


def run_webhook(app: Starlette, host: str = "127.0.0.1", port: int = 8787) -> None:
    """Serve ``app`` with uvicorn until interrupted (loopback unless ``host`` says otherwise)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
