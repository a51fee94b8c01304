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
from roundhouse.core.infra.ports import PortInUseError, bind_listener

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


def check_new_settings(settings: Settings, current: Settings | None = None) -> None:
    """Refuse, in words, values a client sends that cannot work on this machine.

    Folders and ports are checked when they change from `current` (all of them without it):
    a folder on a disk unplugged since it was saved must not block saving anything else."""
    _check_places(settings, current)
    daemon = settings.daemon
    if daemon.port and (current is None or daemon.port != current.daemon.port):
        _check_port_free("daemon.port", daemon.host, daemon.port)
    _check_gateway_listener(settings, current)
    for python in settings.engines.python_paths:
        path = Path(python).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise InvalidInputError(
                f"{python} is not a Python interpreter on this machine (no executable file "
                "there). Give the full path of a `python` in the environment that has the "
                "engine, e.g. /home/me/venvs/vllm/bin/python."
            )


WILDCARD_NEEDS_KEY = (
    "gateway.cors_origins: `*` lets every web page you open use the gateway, so it needs the "
    "gateway API key. Set one first (Generate on the Settings page, or `roundhouse gateway "
    "key --generate`), or list the origins of your browser apps instead, e.g. "
    "http://localhost:3000."
)


def check_cors_origins(settings: Settings, key_set: bool) -> None:
    """Refuse `*` among the CORS origins while no gateway key is set."""
    if not key_set and any(o.strip() == "*" for o in settings.gateway.cors_origins):
        raise InvalidInputError(WILDCARD_NEEDS_KEY)


def _check_places(settings: Settings, current: Settings | None) -> None:
    models_dir = (settings.models_dir or "").strip()
    if models_dir and (current is None or models_dir != (current.models_dir or "").strip()):
        folder = _existing_folder("models_dir", models_dir)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InvalidInputError(
                f"models_dir: Roundhouse cannot write in {folder} (no permission), so no "
                "download could go there. Pick a folder your user can write to."
            )
    before = set(current.models.library_folders) if current is not None else set()
    for entry in settings.models.library_folders:
        if entry in before:
            continue
        folder = _existing_folder("models.library_folders", entry)
        if not os.access(folder, os.R_OK | os.X_OK):
            raise InvalidInputError(
                f"models.library_folders: Roundhouse cannot read {folder} (no permission). "
                "Pick a folder your user can read, or remove it from the list."
            )


def _existing_folder(setting: str, value: str) -> Path:
    folder = Path(value.strip()).expanduser()
    if not folder.is_absolute():
        raise InvalidInputError(
            f"{setting}: give the full path of a folder on the daemon's machine (e.g. "
            f"/home/me/models), not {value.strip()!r}."
        )
    if not folder.exists():
        raise InvalidInputError(
            f"{setting}: {folder} does not exist on this machine. Create the folder first, "
            "or pick one that exists."
        )
    if not folder.is_dir():
        raise InvalidInputError(f"{setting}: {folder} is a file, not a folder. Pick a folder.")
    return folder


def _check_gateway_listener(settings: Settings, current: Settings | None) -> None:
    """The second gateway address: not the daemon's own port, and not another program's."""
    gateway = settings.gateway
    host = (gateway.listen_host or "").strip()
    if not host:
        return
    if gateway.listen_port == settings.daemon.port:
        raise InvalidInputError(
            f"gateway.listen_port: {gateway.listen_port} is the daemon's own port "
            "(daemon.port). Pick another port for the gateway, e.g. 11501."
        )
    before = current.gateway if current is not None else None
    if before is not None and ((before.listen_host or "").strip(), before.listen_port) == (
        host,
        gateway.listen_port,
    ):
        return  # unchanged: a port problem of old must not block saving anything else
    # This daemon's own gateway listener counts as free: it moves when the settings apply.
    _check_port_free(
        "gateway.listen_port", host, gateway.listen_port, host_setting="gateway.listen_host"
    )


def _check_port_free(setting: str, host: str, port: int, host_setting: str = "daemon.host") -> None:
    """Refuse a port another program listens on (named when the OS says which)."""
    try:
        bind_listener(host, port).close()
    except PortInUseError as exc:
        if exc.owner is not None and exc.owner.pid == os.getpid():
            return  # this daemon's own listener: it is free for the next start
        advice = "" if exc.privileged else " Pick another port, or stop that program first."
        raise InvalidInputError(f"{setting}: {exc.strerror}{advice}") from exc
    except OSError as exc:
        raise InvalidInputError(
            f"{setting}: nothing can listen on {host}:{port} ({exc.strerror or exc}). Check "
            f"{host_setting}, or pick another port."
        ) from exc
