"""Another process pruning the environment store (``gradeflow env prune``) while a test holds entries of it."""

from __future__ import annotations

import json
import subprocess
import sys

_PRUNE = """
import sys
from gradeflow.cli import main
from gradeflow.environments import store
store.RECENT = 0.0  # every entry counts as unused: only a hold keeps one
sys.exit(main(["env", "prune", "--cap", "0", "--json"]))
"""


def prune_elsewhere() -> list[str]:
    """``gradeflow env prune --cap 0`` in another process (the store ``$GRADEFLOW_HOME`` and ``$GRADEFLOW_ROOTS``
    name), with nothing spared for a recent use: the names of the entries it removed."""
    done = subprocess.run([sys.executable, "-c", _PRUNE], capture_output=True, text=True, check=True, timeout=120)
    return [row["name"] for row in json.loads(done.stdout)]
