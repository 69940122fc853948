"""bandit run for real on base and candidate copies: what the patch introduces, and only that."""

from __future__ import annotations

import pytest

from gradeflow.tasks.security import bandit_scan, security_findings

BASE = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call([cmd])\n"
SHELL = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
YAML = "import yaml\n\n\ndef conf(text):\n    return yaml.load(text)\n"
SAFE_YAML = "import yaml\n\n\ndef conf(text):\n    return yaml.safe_load(text)\n"


@pytest.mark.parametrize(
    ("base", "candidate", "expected"),
    [
        ({"pkg/run.py": BASE}, {"pkg/run.py": SHELL}, [("B602", "pkg/run.py", 5)]),
        ({"pkg/conf.py": SAFE_YAML}, {"pkg/conf.py": YAML}, [("B506", "pkg/conf.py", 5)]),
        ({}, {"pkg/conf.py": YAML}, [("B506", "pkg/conf.py", 5)]),  # a new file compares with nothing
        ({"pkg/run.py": BASE}, {"pkg/run.py": BASE + "\n\ndef ok():\n    return 1\n"}, []),  # the same fix, safely
        ({"pkg/run.py": SHELL}, {"pkg/run.py": "# moved\n" + SHELL}, []),  # pre-existing, shifted a line
        ({"README.md": "x"}, {"README.md": "subprocess.call(cmd, shell=True)"}, []),  # not Python
    ],
)
def test_findings_the_patch_introduces(
    base: dict[str, str], candidate: dict[str, str], expected: list[tuple[str, str, int]]
) -> None:
    findings = security_findings(base, candidate)
    assert findings is not None
    assert [(f.test_id, f.path, f.line) for f in findings] == expected


def test_flagged_line_text_is_the_key() -> None:
    findings = bandit_scan({"pkg/run.py": SHELL})
    assert findings is not None
    assert [f.code for f in findings if f.test_id == "B602"] == ["return subprocess.call(cmd, shell=True)"]


def test_bandit_failing_on_the_base_is_unavailable_and_on_the_candidate_only_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gradeflow.tasks.security as security

    real = security.bandit_scan

    def failing_on(marker: str):  # type: ignore[no-untyped-def]
        return lambda files: None if any(marker in text for text in files.values()) else real(files)

    monkeypatch.setattr(security, "bandit_scan", failing_on("HANG"))
    # The candidate's files make bandit fail: the candidate's doing, never an unavailable detector.
    (finding,) = security_findings({"pkg/run.py": BASE}, {"pkg/run.py": BASE + "# HANG\n"}) or []
    assert (finding.test_id, finding.severity, finding.confidence) == ("scan-failed", "HIGH", "HIGH")
    # The base's files make it fail: the detector could not run.
    assert security_findings({"pkg/run.py": BASE + "# HANG\n"}, {"pkg/run.py": BASE}) is None
