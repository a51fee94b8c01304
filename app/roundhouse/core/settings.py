"""Load and save the typed settings as TOML, with a schema version and migrations."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from roundhouse.api.settings import SETTINGS_SCHEMA_VERSION, Settings
from roundhouse.base.files import write_atomic
from roundhouse.core.errors import InvalidInputError, SettingsError

# Each migration takes the raw TOML of version N and returns version N+1.
Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring a raw settings table up to the current schema version."""
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise SettingsError(f"schema_version must be a positive integer, not {version!r}.")
    if version > SETTINGS_SCHEMA_VERSION:
        raise SettingsError(
            f"These settings were written by a newer Roundhouse (schema {version}, "
            f"this one reads up to {SETTINGS_SCHEMA_VERSION}). Upgrade Roundhouse."
        )
    while version < SETTINGS_SCHEMA_VERSION:
        raw = MIGRATIONS[version](raw)
        version += 1
        raw["schema_version"] = version
    return raw


def load_settings(path: Path) -> Settings:
    """Read the settings; defaults when the file does not exist yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    try:
        raw = tomllib.loads(text)
        return Settings.model_validate(migrate(raw))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML ({exc}). Fix or delete it.") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(f"{path} has invalid values ({problems}). Fix or delete it.") from exc


def save_settings(path: Path, settings: Settings) -> None:
    """Write the settings atomically: a crash mid-write never leaves half a file."""
    data = settings.model_dump(mode="json", exclude_none=True)
    write_atomic(path, tomli_w.dumps(data).encode("utf-8"))


def check_new_settings(settings: Settings) -> None:
    """Refuse, in words, values a client sends that cannot work on this machine."""
    for python in settings.engines.python_paths:
        path = Path(python).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise InvalidInputError(
                f"{python} is not a Python interpreter on this machine (no executable file "
                "there). Give the full path of a `python` in the environment that has the "
                "engine, e.g. /home/me/venvs/vllm/bin/python."
            )
