"""Reading a GitHub ``pull_request`` event: what to grade, and fetching the pull request's diff.

Only ``opened``, ``reopened`` and ``synchronize`` actions start a grade; other actions and other
events are acknowledged and ignored. The submission id is ``pr<number>-<head sha[:12]>``, so each
pushed revision of a pull request is its own submission.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

__all__ = ["GRADED_ACTIONS", "MAX_DIFF_BYTES", "DiffUnavailable", "PullRequest", "fetch_diff", "parse_pull_request"]

GRADED_ACTIONS = ("opened", "reopened", "synchronize")
MAX_DIFF_BYTES = 1 << 20


class DiffUnavailable(Exception):
    """The pull request's diff could not be fetched (network closed, 4xx/5xx, too large)."""


class PullRequest(BaseModel):
    """The parts of a ``pull_request`` event a grade needs."""

    model_config = ConfigDict(frozen=True)

    action: str
    repo: str
    """``owner/name`` of the base repository."""
    number: int
    head_sha: str
    diff_url: str
    author: str

    @property
    def submission_id(self) -> str:
        return f"pr{self.number}-{self.head_sha[:12]}"

    def metadata(self) -> dict[str, str]:
        """Run metadata: the author stands in for the model (agents open pull requests under their own login)."""
        return {"repo": self.repo, "pr": str(self.number), "sha": self.head_sha, "model": self.author}


def parse_pull_request(payload: dict[str, Any]) -> PullRequest:
    """The pull request of an event payload; ``KeyError``/``TypeError``/``ValueError`` when a field is missing."""
    pr = payload["pull_request"]
    return PullRequest(
        action=str(payload["action"]),
        repo=str(payload["repository"]["full_name"]),
        number=int(pr["number"]),
        head_sha=str(pr["head"]["sha"]),
        diff_url=str(pr["diff_url"]),
        author=str((pr.get("user") or {}).get("login") or "unknown"),
    )


async def fetch_diff(url: str, token_env: str = "GITHUB_TOKEN", timeout: float = 20.0) -> str:
    """The diff text at ``url`` (at most 1 MiB); ``DiffUnavailable`` on any failure."""
    headers = {"Accept": "application/vnd.github.diff"}
    if os.environ.get(token_env):
        headers["Authorization"] = f"Bearer {os.environ[token_env]}"
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code != 200:
                raise DiffUnavailable(f"{url}: HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DIFF_BYTES:
                    raise DiffUnavailable(f"{url}: diff larger than {MAX_DIFF_BYTES} bytes")
    except httpx.HTTPError as exc:
        raise DiffUnavailable(f"{url}: {type(exc).__name__}: {exc}") from None
    return body.decode("utf-8", errors="surrogateescape")
