"""Root filesystems: one folder per recipe, verified by its entries before every use, rebuilt when edited."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradeflow.environments.roots import RootRecipe, _uris, ensure_root, stat_digest
from gradeflow.errors import SandboxUnavailable
from gradeflow.models import EnvironmentSpec


def test_recipes_name_their_folder_by_content() -> None:
    one = RootRecipe.from_spec("debian:bullseye", ["gcc", "python3-pytest"])
    same = RootRecipe.from_spec("debian:bullseye", ["python3-pytest", "gcc", "gcc"])
    other = RootRecipe.from_spec("debian:bullseye", ["python3-pytest"])
    assert one is not None and same is not None and other is not None
    assert one.name == same.name != other.name
    assert one.name.startswith("debian-bullseye-")
    assert RootRecipe.from_spec("host") is None


def test_stat_digest_sees_an_edit_an_addition_and_a_removal(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("one")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_text("two")
    first = stat_digest(tmp_path)
    assert stat_digest(tmp_path) == first
    (tmp_path / "sub" / "b").write_text("twO!")
    second = stat_digest(tmp_path)
    assert second != first
    (tmp_path / "c").write_text("")
    third = stat_digest(tmp_path)
    assert third != second
    (tmp_path / "a").unlink()
    assert stat_digest(tmp_path) != third


def test_mirrors_are_read_from_both_apt_formats() -> None:
    deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n"
    assert _uris(deb822, deb822=True) == ["http://mirror.example/debian"]
    one_line = "deb [arch=amd64] http://mirror.example/debian bookworm main\n# deb http://no/debian x main\n"
    assert _uris(one_line, deb822=False) == ["http://mirror.example/debian"]


@pytest.mark.parametrize(
    ("environment", "problem"),
    [
        ({"root": "debian:"}, "root"),
        ({"root": "ubuntu:jammy"}, "root"),
        ({"packages": ["gcc"]}, "debian: root"),
        ({"root": "debian:bookworm", "packages": ["Not A Package"]}, "packages"),
        ({"mounts": ["relative/path"]}, "absolute"),
    ],
)
def test_bad_roots_packages_and_mounts_are_spec_errors(environment: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        EnvironmentSpec.model_validate(environment)


@pytest.mark.slow
def test_a_root_that_cannot_be_built_says_why_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADEFLOW_ROOTS", str(tmp_path / "roots"))
    monkeypatch.setenv("GRADEFLOW_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    recipe = RootRecipe.from_spec("debian:bookworm", ["python3-pytest"])
    assert recipe is not None
    with pytest.raises(SandboxUnavailable, match="debootstrap") as first:
        ensure_root(recipe)
    with pytest.raises(SandboxUnavailable, match="to try again") as second:
        ensure_root(recipe)
    assert str(first.value) in str(second.value)
