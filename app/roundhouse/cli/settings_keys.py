"""Settings by dotted key (gateway.idle_ttl_s): list, read and set them, validated whole."""

from __future__ import annotations

import json
import types
import typing
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from roundhouse.api.settings import Settings

if TYPE_CHECKING:
    from rich.console import RenderableType

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_NONE = frozenset({"", "none", "null"})
# Read when the daemon starts: a change counts after a restart.
AT_RESTART = (
    "daemon.host",
    "daemon.port",
    "daemon.sample_interval_s",
    "daemon.sample_history_s",
)


class SettingError(ValueError):
    """A key or value the settings do not take; str() says which keys exist."""


def _section(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def setting_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Every settable dotted key, in the model's order."""
    keys: list[str] = []
    for name, info in model.model_fields.items():
        if name == "schema_version":
            continue
        section = _section(info.annotation)
        if section is not None:
            keys.extend(setting_keys(section, f"{prefix}{name}."))
        else:
            keys.append(prefix + name)
    return keys


def field_of(key: str) -> tuple[list[str], Any]:
    """The path of `key` and its leaf annotation, or SettingError naming the keys that exist."""
    parts = key.split(".")
    model: type[BaseModel] = Settings
    for depth, part in enumerate(parts):
        prefix = ".".join(parts[:depth])
        info = model.model_fields.get(part) if part != "schema_version" else None
        if info is None:
            known = setting_keys(model, prefix + "." if prefix else "")
            where = f" in {prefix}" if prefix else ""
            raise SettingError(f"There is no setting {key!r}{where}. Known: {', '.join(known)}.")
        section = _section(info.annotation)
        last = depth == len(parts) - 1
        if section is not None and not last:
            model = section
            continue
        if section is not None:
            known = setting_keys(section, key + ".")
            raise SettingError(f"{key!r} is a section; its settings: {', '.join(known)}.")
        if not last:
            raise SettingError(f"{'.'.join(parts[: depth + 1])!r} is a setting, not a section.")
        return parts, info.annotation
    raise SettingError("Name a setting, e.g. gateway.idle_ttl_s.")


def _parse(key: str, annotation: Any, text: str) -> Any:
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) and type(None) in args:
        if text.strip().lower() in _NONE:
            return None
        annotation = next(a for a in args if a is not type(None))
    if typing.get_origin(annotation) is list:
        return [item.strip() for item in text.split(",") if item.strip()]
    if typing.get_origin(annotation) is dict:
        try:
            return json.loads(text)
        except ValueError:
            raise SettingError(
                f"{key} is a table: give it as JSON, e.g. "
                """'{"qwen3-8b": ["qwen3-4b"]}' (in single quotes for the shell)."""
            ) from None
    if annotation is bool:
        word = text.strip().lower()
        if word not in _TRUE | _FALSE:
            raise SettingError(f"{key} is true or false, not {text!r}.")
        return word in _TRUE
    # Numbers and choices: pydantic converts the text and says what it expects.
    return text.strip()


def apply_setting(settings: Settings, key: str, value: str) -> Settings:
    """`settings` with `key` set to `value` (lists comma-separated), validated as a whole."""
    parts, annotation = field_of(key.strip())
    data = settings.model_dump()
    target = data
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = _parse(key, annotation, value)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise SettingError(f"{key} = {value!r} is refused: {problems}.") from exc


def shown(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def settings_view(settings: Settings) -> RenderableType:
    from rich.table import Table

    table = Table(show_edge=False)
    table.add_column("Setting", no_wrap=True)
    table.add_column("Value")
    table.add_column("What it does", style="dim")
    data = settings.model_dump(mode="json")
    for key in setting_keys():
        parts, _ = field_of(key)
        model: type[BaseModel] = Settings
        value: Any = data
        for part in parts:
            value = value[part]
            info = model.model_fields[part]
            model = _section(info.annotation) or model
        table.add_row(key, shown(value), info.description or "")
    return table
