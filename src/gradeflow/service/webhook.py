"""The signed-webhook receiver: ``POST /hooks/grade`` and ``POST /hooks/github`` start grades through Prefect.

Every delivery is checked in this order, each failure answered with a JSON ``{"error", "detail"}``:

1. headers not complete within ``webhook.body_timeout`` (default 10 s) of the connection → the connection
   is closed; then a body not complete within as long again → 408 and the connection is closed;
2. body larger than 1 MiB, declared (``Content-Length``) or counted while reading → 413 at once; more
   than :data:`MAX_UNVERIFIED_BYTES` of bodies (declared or read) not yet signature-checked, summed over
   every connection → 503 ``busy`` at once, the connection closed, so stalled senders hold at most that
   much memory; a patch
   (sent or fetched) over :data:`MAX_PATCH_PARAMETER_BYTES` once JSON-encoded, which no flow run's
   parameters can carry → 413 ``patch-too-large`` (checked with the fields, step 4);
3. ``X-Hub-Signature-256: sha256=<hex>`` missing → 401, not the HMAC-SHA256 of the raw body under
   ``GRADEFLOW_WEBHOOK_SECRET`` (constant-time comparison) → 401;
4. not JSON, nested deeper than 32 levels, or a number past 2⁶³ (:mod:`gradeflow.service.payloads`) → 400;
   a field missing or invalid, an unknown task or repository → 422; a ``profile`` that is neither shipped
   nor listed in the service config (``webhook.profiles``, named by the profile's ``name``) → 422;
5. a request for what was already graded, whatever its delivery id: the same task spec (by hash),
   submission id, patch (by hash) and profile (:func:`~gradeflow.service.deliveries.request_key`) →
   200 ``{"flow_run_id": <the existing run>, "duplicate": true}``, and no second run;
6. otherwise a flow run of the ``grade-submission`` deployment is created through the Prefect API, with
   that key as its idempotency key, and the answer is 202 ``{"flow_run_id": "<uuid>", "duplicate": false}``.
   When the Prefect API cannot be reached, or does not answer within 8 s, the answer is 503 and the
   request may be sent again: should the run have been created after all, the identical idempotency
   key makes Prefect return that run instead of creating a second one.

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

import structlog
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gradeflow.config import cache_dir
from gradeflow.engine.credentials import public_ledger
from gradeflow.engine.trust import refuse_untrusted_local, trusted_environment
from gradeflow.errors import SpecError
from gradeflow.evaluation.ledger import ledger_url
from gradeflow.evaluation.suite import patch_hash
from gradeflow.models import Submission
from gradeflow.profiles import available_profiles, load_profile
from gradeflow.service.config import ServiceConfig
from gradeflow.service.deadline import header_deadline_protocol
from gradeflow.service.deliveries import DeliveryStore, request_key
from gradeflow.service.github import GRADED_ACTIONS, DiffUnavailable, fetch_diff, parse_pull_request
from gradeflow.service.params import GradeRequest, carried
from gradeflow.service.payloads import PayloadError, parse_json, sent_patch
from gradeflow.service.starter import PrefectStarter
from gradeflow.service.tasks_dir import find_task_specs
from gradeflow.spec import load_task

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_PATCH_PARAMETER_BYTES",
    "MAX_UNVERIFIED_BYTES",
    "PrefectStarter",
    "Receiver",
    "RunStarter",
    "create_app",
    "run_webhook",
    "sign",
]

MAX_BODY_BYTES = 1 << 20
MAX_UNVERIFIED_BYTES = 8 * MAX_BODY_BYTES
"""Bytes of bodies being read before their signature is checked, over all connections at once."""
MAX_PATCH_PARAMETER_BYTES = 448 * 1024
"""The largest patch (JSON-encoded) a served grade's flow run can carry: Prefect's server refuses runs
whose parameters pass 512 KiB, and the request's other fields need room too."""
_log = structlog.get_logger("gradeflow.webhook")
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
    profiles: dict[str, str]
    """Profile name → YAML path of the profiles listed in ``webhook.profiles`` (shipped ones are allowed anyway)."""
    deadline: float = 8.0
    """Seconds a run creation may take before the answer is 503 (GitHub gives up on a hook after 10 s)."""
    body_timeout: float = 10.0
    """Seconds the body may take to arrive once the headers are in, before a 408."""
    unverified: int = 0
    """Bytes held now for bodies whose signature is not checked yet (see :func:`_read_body`)."""


def sign(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` header value of ``body`` (what a sender computes)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _hold(receiver: Receiver, size: int) -> None:
    """Count ``size`` more unverified bytes, or refuse the request at once when all of them would pass the cap."""
    if receiver.unverified + size > MAX_UNVERIFIED_BYTES:
        raise Rejection(503, "busy", f"over {MAX_UNVERIFIED_BYTES} bytes of unsigned bodies are in flight; retry")
    receiver.unverified += size


async def _read_body(receiver: Receiver, request: Request) -> bytes:
    """The body, counted against :data:`MAX_BODY_BYTES` and, with every other body being read, against
    :data:`MAX_UNVERIFIED_BYTES` (a declared length is held up front); released when read or refused."""
    declared = request.headers.get("content-length", "")
    held = min(int(declared), MAX_BODY_BYTES + 1) if declared.isdigit() else 0
    if held > MAX_BODY_BYTES:
        raise Rejection(413, "too-large", f"body larger than {MAX_BODY_BYTES} bytes")
    _hold(receiver, held)
    body = bytearray()
    try:
        async with asyncio.timeout(receiver.body_timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise Rejection(413, "too-large", f"body larger than {MAX_BODY_BYTES} bytes")
                if len(body) > held:
                    _hold(receiver, len(body) - held)
                    held = len(body)
    except TimeoutError:
        raise Rejection(408, "body-timeout", f"the body did not arrive within {receiver.body_timeout:g} s") from None
    finally:
        receiver.unverified -= held
    return bytes(body)


def _verify(secret: bytes, body: bytes, header: str | None) -> None:
    if not header:
        raise Rejection(401, "unsigned", "X-Hub-Signature-256 header is missing")
    if not hmac.compare_digest(sign(secret, body).encode(), header.strip().encode()):
        raise Rejection(401, "bad-signature", "X-Hub-Signature-256 does not match the body")


async def _signed_json(receiver: Receiver, request: Request) -> Any:
    body = await _read_body(receiver, request)
    _verify(receiver.secret, body, request.headers.get("x-hub-signature-256"))
    try:
        return parse_json(body)
    except PayloadError as exc:
        raise Rejection(400, exc.error, str(exc)) from None


def _request_key(grade: GradeRequest) -> str:
    """What the request grades, hashed: the spec and the profile are read now, so an edit of either is new."""
    try:
        task_spec = load_task(grade.task_path)
        policy = load_profile(grade.profile or task_spec.grading.profile)
    except SpecError as exc:
        raise Rejection(503, "task-unavailable", str(exc)) from None
    patch = patch_hash(Submission(submission_id=grade.submission_id, patch=grade.diff()))
    return request_key(task_spec.spec_hash(), grade.submission_id, patch, policy.model_dump_json())


async def _accept(receiver: Receiver, grade: GradeRequest) -> JSONResponse:
    key = _request_key(grade)
    existing = receiver.store.flow_run_of(key)
    if existing:
        _log.info("delivery accepted", **_about(grade), flow_run_id=existing, duplicate=True)
        return JSONResponse({"flow_run_id": existing, "duplicate": True}, status_code=200)
    first = receiver.store.claim(key)
    try:
        # The loser of a race asks too: the shared idempotency key makes Prefect answer with the winner's run.
        run_id = await asyncio.wait_for(receiver.start_run(grade, key), receiver.deadline)
    except Exception as exc:  # the API boundary: any failure to start is the sender's cue to redeliver
        # Safe even if the run was created after all: a redelivery carries the same Prefect idempotency key.
        if first:
            receiver.store.release(key)
        reason = "no answer within the deadline" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        raise Rejection(503, "prefect-unavailable", reason) from None
    _log.info("delivery accepted", **_about(grade), flow_run_id=run_id, duplicate=not first)
    if not first:
        return JSONResponse({"flow_run_id": run_id, "duplicate": True}, status_code=200)
    receiver.store.record(key, run_id)
    return JSONResponse({"flow_run_id": run_id, "duplicate": False}, status_code=202)


def _about(grade: GradeRequest) -> dict[str, str]:
    """What a log line says of a request: never its patch."""
    return {"task_id": grade.task_id, "submission_id": grade.submission_id, "model": grade.metadata.get("model", "")}


def _profile(receiver: Receiver, name: Any) -> str | None:
    """The profile a payload names, as the worker loads it: a shipped name, or the path of a listed one."""
    if name is None or (isinstance(name, str) and name in available_profiles()):
        return name
    if isinstance(name, str) and name in receiver.profiles:
        return receiver.profiles[name]
    allowed = ", ".join([*available_profiles(), *receiver.profiles])
    raise Rejection(422, "unknown-profile", f"profile {name!r} is not one this receiver grades with ({allowed})")


def _grade_request(receiver: Receiver, task_id: Any, **fields: Any) -> GradeRequest:
    path = receiver.tasks.get(str(task_id))
    if path is None:
        raise Rejection(422, "unknown-task", f"no task spec with task_id {task_id!r}")
    if "profile" in fields:
        fields["profile"] = _profile(receiver, fields["profile"])
    if isinstance(fields.get("patch"), str):
        fields.update(carried(fields["patch"]))
    try:
        # Without a configured ledger the default one (as `gradeflow report` reads it): a served grade is
        # always recorded, so a reviewer's answer has its grade beside it.
        ledger = public_ledger(receiver.config.ledger or ledger_url())
        request = GradeRequest(task_id=str(task_id), task_path=str(path), ledger=ledger, **fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Rejection(422, "invalid", f"{where}: {first['msg']}") from None
    encoded = len(json.dumps(request.patch)) + len(request.patch_base64 or "")
    if encoded > MAX_PATCH_PARAMETER_BYTES:
        raise Rejection(
            413,
            "patch-too-large",
            f"patch: {encoded} bytes as a flow run parameter, over the {MAX_PATCH_PARAMETER_BYTES} a run can carry",
        )
    return request


async def grade_hook(request: Request) -> JSONResponse:
    """``POST /hooks/grade``: ``{"task_id", "submission_id", "patch" or "patch_base64", "metadata"}``."""
    receiver: Receiver = request.app.state.receiver
    payload = await _signed_json(receiver, request)
    if not isinstance(payload, dict):
        raise Rejection(422, "invalid", "the payload is a JSON object")
    missing = [key for key in ("task_id", "submission_id") if key not in payload]
    if missing:
        raise Rejection(422, "invalid", f"missing field(s): {', '.join(missing)}")
    try:
        patch = sent_patch(payload)
    except PayloadError as exc:
        raise Rejection(422, exc.error, str(exc)) from None
    fields = {key: value for key, value in payload.items() if key in {"submission_id", "metadata", "profile"}}
    fields["patch"] = patch
    return await _accept(receiver, _grade_request(receiver, payload["task_id"], **fields))


async def github_hook(request: Request) -> JSONResponse:
    """``POST /hooks/github``: a ``pull_request`` event (``opened``/``reopened``/``synchronize``)."""
    receiver: Receiver = request.app.state.receiver
    payload = await _signed_json(receiver, request)
    event = request.headers.get("x-github-event", "")
    if not request.headers.get("x-github-delivery"):
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

    if not receiver.config.github.fetch_diffs:
        raise Rejection(422, "no-diff", "fetching diffs is disabled (config github.fetch_diffs)")
    try:
        patch = await receiver.fetch(pr.diff_url)
    except DiffUnavailable as exc:
        raise Rejection(502, "diff-unavailable", str(exc)) from None
    grade = _grade_request(receiver, task_id, submission_id=pr.submission_id, patch=patch, metadata=pr.metadata())
    return await _accept(receiver, grade)


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "tasks": sorted(request.app.state.receiver.tasks)})


async def _rejected(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Rejection)
    # A body that did not arrive is not waited for any longer: the connection goes with the answer.
    headers = {"Connection": "close"} if exc.error in ("body-timeout", "too-large", "busy") else None
    _log.warning("delivery refused", path=request.url.path, status=exc.status, error=exc.error, detail=exc.detail)
    return JSONResponse({"error": exc.error, "detail": exc.detail}, status_code=exc.status, headers=headers)


def _lifespan(starter: RunStarter) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if isinstance(starter, PrefectStarter):
            await starter.aclose()
        app.state.receiver.store.close()

    return lifespan


def _trusted_tasks(tasks: dict[str, Path], config: ServiceConfig) -> dict[str, Path]:
    """``tasks``, once none is found to need the local sandbox without the config's trust."""
    refuse_untrusted_local(config.trust_local_code, (load_task(path) for path in tasks.values()), "webhook")
    os.environ.update(trusted_environment(config.trust_local_code))
    return tasks


def create_app(
    tasks_dir: str | Path,
    config: ServiceConfig | None = None,
    *,
    secret: str | None = None,
    store_path: Path | None = None,
    start_run: RunStarter | None = None,
    fetch: DiffFetcher | None = None,
) -> Starlette:
    """The receiver app; ``SpecError`` when no secret is set, the task folder holds no task spec, or a
    profile listed in ``webhook.profiles`` cannot be loaded or takes a shipped profile's name."""
    secret = secret if secret is not None else os.environ.get("GRADEFLOW_WEBHOOK_SECRET", "")
    if not secret:
        raise SpecError("GRADEFLOW_WEBHOOK_SECRET is not set: the receiver refuses to run without a secret")
    config = config or ServiceConfig()
    profiles = _listed_profiles(config)
    starter = start_run or PrefectStarter()
    receiver = Receiver(
        secret=secret.encode(),
        tasks=_trusted_tasks(find_task_specs(Path(tasks_dir)), config),
        store=DeliveryStore(store_path or cache_dir() / "webhook-requests.db"),
        config=config,
        start_run=starter,
        fetch=fetch or (lambda url: fetch_diff(url, config.github.token_env)),
        profiles=profiles,
        body_timeout=config.webhook.body_timeout,
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


def _listed_profiles(config: ServiceConfig) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in config.webhook.profiles:
        name = load_profile(path).name
        if name in available_profiles() or name in found:
            raise SpecError(f"webhook.profiles: {path} is named {name!r}, which another profile already is")
        found[name] = path
    return found


def run_webhook(app: Starlette, host: str = "127.0.0.1", port: int = 8787) -> None:
    """Serve ``app`` with uvicorn until interrupted (loopback unless ``host`` says otherwise)."""
    import uvicorn

    protocol = header_deadline_protocol(app.state.receiver.body_timeout)
    _log.info("webhook listening", host=host, port=port, tasks=sorted(app.state.receiver.tasks))
    uvicorn.run(
        app, host=host, port=port, http=protocol, log_level="warning", access_log=False, timeout_graceful_shutdown=5
    )
