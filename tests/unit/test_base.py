"""Homes, resources and unit formatting."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundhouse.base.paths import HOME_ENV, resolve_home
from roundhouse.base.resources import resource_path, resources_dir
from roundhouse.base.units import format_bytes, format_duration


def test_explicit_home_puts_everything_under_one_folder(tmp_path: Path) -> None:
    home = resolve_home(tmp_path / "h")
    for folder in (home.config_dir, home.data_dir, home.log_dir, home.state_dir):
        assert folder.is_relative_to(tmp_path / "h")
    assert home.discovery_file.parent == home.state_dir
    assert home.root == tmp_path / "h"
    home.ensure()
    assert home.state_dir.is_dir()


def test_env_home_is_used_when_no_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path))
    assert resolve_home().root == tmp_path
    assert resolve_home(tmp_path / "flag").root == tmp_path / "flag"


def test_default_home_uses_platform_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOME_ENV, raising=False)
    home = resolve_home()
    assert home.root is None
    assert "roundhouse" in str(home.config_dir).lower()


def test_resources_are_found() -> None:
    assert (resources_dir() / "icons").is_dir()
    assert resource_path("icons", "roundhouse.svg").is_file()


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "—"), (0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (80 * 1024**3, "80.0 GiB")],
)
def test_format_bytes(value: int | None, text: str) -> None:
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"), [(None, "—"), (3.25, "3.2s"), (59, "59s"), (61, "1m 1s"), (3725, "1h 2m 5s")]
)
def test_format_duration(value: float | None, text: str) -> None:
    assert format_duration(value) == text


def test_write_atomic_replaces_and_cleans_up(tmp_path: Path) -> None:
    from roundhouse.base.files import write_atomic

    target = tmp_path / "sub" / "state.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]


def test_write_atomic_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from roundhouse.base.files import write_atomic

    target = tmp_path / "state.json"
    write_atomic(target, b"old")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
