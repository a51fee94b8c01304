"""Settings persist as TOML with a schema version; bad files give clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundhouse.api.settings import SETTINGS_SCHEMA_VERSION, Settings
from roundhouse.core.errors import SettingsError
from roundhouse.core.infra.settings import load_settings, migrate, save_settings


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "settings.toml") == Settings()


def test_round_trip_keeps_every_value(tmp_path: Path) -> None:
    path = tmp_path / "config" / "settings.toml"
    settings = Settings.model_validate(
        {
            "models_dir": "/models/ünï",
            "daemon": {"port": 12345},
            "ui": {"quit_action": "stop-daemon"},
        }
    )
    save_settings(path, settings)
    text = path.read_text(encoding="utf-8")
    assert f"schema_version = {SETTINGS_SCHEMA_VERSION}" in text
    assert "port = 12345" in text
    assert load_settings(path) == settings
    assert [p.name for p in path.parent.iterdir()] == ["settings.toml"], "no temporary file left"


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("daemon = [unclosed", encoding="utf-8")
    with pytest.raises(SettingsError, match="not valid TOML") as info:
        load_settings(path)
    assert str(path) in info.value.detail


def test_invalid_value_says_which_key(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[daemon]\nport = 99999\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"daemon\.port"):
        load_settings(path)


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[daemon]\nprot = 1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"daemon\.prot"):
        load_settings(path)


def test_newer_schema_is_refused_with_advice() -> None:
    with pytest.raises(SettingsError, match="newer Roundhouse"):
        migrate({"schema_version": SETTINGS_SCHEMA_VERSION + 1})


def test_migrations_run_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    import roundhouse.core.infra.settings as module

    monkeypatch.setattr(module, "SETTINGS_SCHEMA_VERSION", 3)
    monkeypatch.setattr(
        module,
        "MIGRATIONS",
        {1: lambda raw: {**raw, "a": 1}, 2: lambda raw: {**raw, "b": raw["a"] + 1}},
    )
    assert module.migrate({"schema_version": 1}) == {"schema_version": 3, "a": 1, "b": 2}
