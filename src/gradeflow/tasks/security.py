"""Security detector evidence: bandit on the grader's copies of the changed Python files, base and candidate.

bandit runs as a subprocess of the grader's own interpreter (``python -m bandit -f json``) on copies the
grader holds, never inside the candidate's sandbox and never importing candidate code: bandit only parses.
Each version's files go to their own temporary folder under their repository paths, so findings carry
repository-relative paths. bandit missing, or a run that yields no JSON, makes the scan unavailable
(``None``), which the grader reports as ``detector-unavailable`` rather than as a pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from gradeflow.graders.security import Level, SecurityFinding, introduced_findings

__all__ = ["bandit_scan", "security_findings"]

BANDIT_TIMEOUT_S = 300
"""bandit parses files, it runs nothing: minutes mean something is wrong."""


def _finding(root: Path, files: dict[str, str], raw: dict[str, Any]) -> SecurityFinding:
    path = Path(raw["filename"]).resolve().relative_to(root.resolve()).as_posix()
    line = int(raw["line_number"])
    # The flagged line's own text, from the grader's copy: bandit's ``code`` field mixes in context lines.
    lines = files[path].splitlines()
    code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return SecurityFinding(
        path=path,
        line=line,
        test_id=raw["test_id"],
        severity=raw["issue_severity"],
        confidence=raw["issue_confidence"],
        code=code,
        message=raw["issue_text"],
    )


def bandit_scan(files: dict[str, str]) -> list[SecurityFinding] | None:
    """bandit's findings on ``files`` (repository path → text), or ``None`` when bandit cannot run."""
    if not files:
        return []
    with tempfile.TemporaryDirectory(prefix="gradeflow-bandit-") as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        argv = [sys.executable, "-m", "bandit", "-q", "-f", "json", "-r", str(root)]
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=BANDIT_TIMEOUT_S, check=False)
            report = json.loads(run.stdout)
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
            return None
        return [_finding(root, files, r) for r in report.get("results", [])]


def _python(files: dict[str, str]) -> dict[str, str]:
    return {path: text for path, text in files.items() if path.endswith(".py")}


def security_findings(
    base: dict[str, str],
    candidate: dict[str, str],
    severity: Level = "MEDIUM",
    confidence: Level = "MEDIUM",
) -> list[SecurityFinding] | None:
    """The findings the candidate's Python files add over the base's, or ``None`` when bandit cannot run.

    bandit failing on the base's files is the detector's failure (``None``). Failing only on the
    candidate's (files that make it time out or crash) is the candidate's: one finding that counts, so
    no patch turns the scan off, nor makes a grade inconclusive under ``detector_unavailable: inconclusive``.
    """
    before = bandit_scan(_python(base))
    if before is None:
        return None
    after = bandit_scan(_python(candidate))
    if after is None:
        return [
            SecurityFinding(
                path=".",
                line=0,
                test_id="scan-failed",
                severity="HIGH",
                confidence="HIGH",
                code="",
                message="bandit scanned the base's files but could not scan the candidate's (timed out or crashed)",
            )
        ]
    return introduced_findings(before, after, severity, confidence)
