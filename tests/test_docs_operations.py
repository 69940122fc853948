"""docs/operations.md's files, quickly: the nightly suite and the service config its steps create are read
back by gradeflow (the suite over the copied task, the config with its suite resolved beside it), and the
deployments it names are the ones gradeflow builds. ``tests/service/test_docs_steps.py`` runs the steps."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from gradeflow.evaluation.suite import load_suite
from gradeflow.service.config import load_service_config
from gradeflow.service.deployments import build_deployments

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "operations.md").read_text()


def _heredoc(target: str) -> str:
    found = re.search(rf"cat > {re.escape(target)} <<'YAML'\n(.*?)\nYAML\n", DOC, re.S)
    assert found, target
    return found.group(1) + "\n"


def test_the_steps_files_load_as_written(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "suites").mkdir()
    shutil.copytree(ROOT / "examples" / "calc", tmp_path / "tasks" / "calc")
    (tmp_path / "suites" / "nightly.yaml").write_text(_heredoc("suites/nightly.yaml"))
    (tmp_path / "gradeflow.yaml").write_text(_heredoc("gradeflow.yaml"))
    config = load_service_config(tmp_path / "gradeflow.yaml")
    suite = load_suite(tmp_path / "suites" / "nightly.yaml")
    assert [item.task_id for item in suite.items] == ["calc-divzero"]
    assert Path(config.suite).resolve() == (tmp_path / "suites" / "nightly.yaml").resolve()


def test_the_deployments_the_doc_names_are_the_ones_built() -> None:
    built = {d.name for d in build_deployments(load_service_config(None))}
    named = set(re.findall(r"^- `[a-z-]+/([a-z-]+)`", DOC, re.M))
    assert named == built == {"grade-submission", "evaluate-suite", "ask-reviewer", "agent-trials"}
    assert "all four" in DOC and "registers both" not in DOC
