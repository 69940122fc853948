"""``task import-swebench --validate``: every written task is validated against its reference and a table says
how each fared; one that is not valid makes the exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_import_swebench import dataset

from gradeflow.cli import main

__all__ = ["dataset"]


@pytest.mark.usefixtures("prefect")
@pytest.mark.slow
def test_each_imported_task_is_validated_in_a_table(
    dataset: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances, repos, commands = dataset
    rows = [json.loads(line) for line in instances.read_text().splitlines()][:2]
    # A reference that leaves add() subtracting fixes nothing: that task is not valid.
    rows[1]["patch"] = rows[1]["patch"].replace("+    return a + b", "+    return a - b  # not fixed")
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "tasks"
    argv = ["task", "import-swebench", str(instances), "--repos", str(repos), "--commands", str(commands)]
    code = main([*argv, "--out", str(out), "--validate", "--sandbox", "local"])
    printed = capsys.readouterr().out.splitlines()
    table = printed[[line.split()[:2] for line in printed].index(["instance", "verdict"]) :]
    verdicts = {line.split()[0]: line.split()[1] for line in table[1:]}
    assert verdicts["acme__calc-1"] == "VALID", table
    assert verdicts["acme__calc-2"] in ("INVALID", "ERROR"), table
    assert code == 1
