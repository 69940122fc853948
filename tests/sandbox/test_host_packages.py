"""What of gradeflow's own environment a sandbox's ``python`` sees: everything installed there but gradeflow and what
only gradeflow needs (its engine's libraries and their pytest plugins)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from pathlib import Path

import pytest

from gradeflow.sandbox import _host_packages
from gradeflow.sandbox._host_packages import hidden_distributions, view_folder
from gradeflow.sandbox.isolated import IsolatedSandboxFactory
from gradeflow.sandbox.local import LocalSandboxFactory


def _distribution(site: Path, name: str, requires: list[str], entries: list[str]) -> None:
    """A distribution installed in ``site`` as pip leaves one: its entries and a dist-info recording them."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", *(f"Requires-Dist: {r}\n" for r in requires)]
    (info / "METADATA").write_text("".join(metadata))
    record = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    for entry in entries:
        if entry.endswith(".py"):
            (site / entry).write_text("VALUE = 1\n")
            record.append(f"{entry},,")
        else:
            (site / entry).mkdir()
            (site / entry / "__init__.py").write_text("VALUE = 1\n")
            record.append(f"{entry}/__init__.py,,")
    record.append(f"../../../bin/{name},,")  # a script outside the site folder: no entry of it
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    _distribution(folder, "gradeflow", ["engine>=1", "shared", 'docs; extra == "dev"'], ["gradeflow"])
    _distribution(folder, "engine", ["engine-plugin; python_version >= '3'", "shared"], ["engine", "engine_c.py"])
    _distribution(folder, "engine-plugin", [], ["engine_plugin"])
    _distribution(folder, "shared", [], ["shared"])
    _distribution(folder, "pytest", ["shared", "pluggy"], ["pytest", "_pytest"])
    _distribution(folder, "pluggy", [], ["pluggy"])
    _distribution(folder, "docs", ["engine-plugin"], ["docs"])  # installed beside gradeflow, an extra of it
    (folder / "loose.py").write_text("VALUE = 1\n")  # no distribution records it
    return folder


def test_only_what_gradeflow_alone_requires_is_hidden(site: Path) -> None:
    # ``shared`` is pytest's too; ``engine-plugin`` is also required by ``docs``, installed beside gradeflow.
    assert hidden_distributions(str(site)) == {"gradeflow", "engine"}


def test_the_view_links_every_entry_but_the_hidden_ones_and_is_made_once_per_state(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADEFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(_host_packages, "site_folders", lambda: (str(site),))
    view = view_folder()
    shown = sorted(os.listdir(view))
    assert "gradeflow" not in shown and "engine" not in shown and "engine_c.py" not in shown
    assert not any(name.startswith(("gradeflow-", "engine-1.0")) for name in shown)
    for name in ("pytest", "_pytest", "pluggy", "shared", "engine_plugin", "docs", "loose.py"):
        assert (view / name).is_symlink() and (view / name).resolve() == (site / name).resolve(), name
    assert "pytest-1.0.dist-info" in shown  # its entry points and metadata are found through the view
    assert view.stat().st_mode & 0o777 == 0o755  # readable by a sandbox's own user
    # Found as it is; a package installed there makes a new one that shows it; a cleaned home, one again.
    assert view_folder() == view
    _distribution(site, "late", [], ["late"])
    later = view_folder()
    assert later != view and (later / "late").is_symlink() and not (view / "late").exists()
    shutil.rmtree(tmp_path / "home")
    assert view_folder() == later and (later / "late").is_symlink()


PROBE = (
    "import importlib.metadata as m, importlib.util as u, json; "
    "print(json.dumps([sorted(e.name for e in m.entry_points(group='pytest11')), "
    "[n for n in ('pytest', 'pip', 'yaml', 'prefect', 'anyio', 'pydantic', 'gradeflow') if u.find_spec(n)]]))"
)


@pytest.mark.parametrize("factory", [LocalSandboxFactory, IsolatedSandboxFactory], ids=["local", "isolated"])
def test_a_sandboxs_python_sees_the_tools_beside_gradeflow_not_its_engine(
    factory: type[LocalSandboxFactory], tmp_path: Path
) -> None:
    with factory().open(tmp_path) as sandbox:
        probe = sandbox.run(f'python -c "{PROBE}"', env={}, timeout=60)
    assert probe.ok, probe.stderr
    plugins, found = json.loads(probe.stdout)
    # pytest and pip run in every sandbox; PyYAML is also mkdocs's here (the dev install), so it stays.
    assert found == ["pytest", "pip", "yaml"]
    # gradeflow's own environment holds anyio's pytest plugin (Prefect's): pytest no longer loads it at each start.
    own = {e.name for e in importlib.metadata.entry_points(group="pytest11")}
    assert "anyio" in own and "anyio" not in plugins
    assert "xdist" in plugins  # installed beside gradeflow (its dev extra), so shown
