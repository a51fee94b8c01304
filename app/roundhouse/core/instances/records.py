"""Durable records of the engine instances the daemon started, kept in one JSON file."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from roundhouse.api.engines import EngineId
from roundhouse.base.files import write_atomic

log = logging.getLogger(__name__)

# A JSON file for now: SQLite arrives later with the rest of the persisted state, and these
# records move there then. Until then the whole file is rewritten atomically on each change.
RECORDS_FILE = "instances.json"
FORMAT_VERSION = 1


class CorruptRecordsError(ValueError):
    """The records file is not what this module writes."""


@dataclass(frozen=True)
class InstanceRecord:
    """What a later daemon needs to find, verify, probe and stop an engine it did not start.

    `pid` with `create_time` identifies the process: a pid alone may have been reused.
    The environment is left out on purpose: it may hold the engine's API key.
    """

    id: str
    engine: EngineId
    model: str | None
    host: str
    port: int
    pid: int
    create_time: float | None
    argv: tuple[str, ...]
    log_path: str
    started_at: float
    base_url: str
    probe_url: str
    ready_status: int = 200
    stop_grace_s: float = 10.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["engine"] = self.engine.value
        data["argv"] = list(self.argv)
        return data

    @classmethod
    def from_json(cls, data: object) -> InstanceRecord:
        """Raise CorruptRecordsError unless `data` is a record as `to_json` writes it."""
        if not isinstance(data, dict):
            raise CorruptRecordsError("a record is not an object")
        try:
            return cls(
                id=_typed(data, "id", str),
                engine=EngineId(_typed(data, "engine", str)),
                model=_optional(data, "model", str),
                host=_typed(data, "host", str),
                port=_typed(data, "port", int),
                pid=_typed(data, "pid", int),
                create_time=_optional_number(data, "create_time"),
                argv=tuple(_strings(data, "argv")),
                log_path=_typed(data, "log_path", str),
                started_at=_number(data, "started_at"),
                base_url=_typed(data, "base_url", str),
                probe_url=_typed(data, "probe_url", str),
                ready_status=_typed(data, "ready_status", int),
                stop_grace_s=_number(data, "stop_grace_s"),
            )
        except (KeyError, ValueError) as exc:
            raise CorruptRecordsError(f"bad record: {exc}") from exc


def _typed(data: dict[str, Any], key: str, kind: type[Any]) -> Any:
    value = data[key]
    # bool is an int to Python, never a pid or a port here.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CorruptRecordsError(f"{key} is not {kind.__name__}")
    return value


def _optional(data: dict[str, Any], key: str, kind: type[Any]) -> Any:
    return None if data.get(key) is None else _typed(data, key, kind)


def _number(data: dict[str, Any], key: str) -> float:
    value = data[key]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CorruptRecordsError(f"{key} is not a number")
    return float(value)


def _optional_number(data: dict[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else _number(data, key)


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorruptRecordsError(f"{key} is not a list of strings")
    return value


class RecordStore:
    """The records file in `state_dir`; every method reads or writes the whole file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / RECORDS_FILE

    def load(self) -> list[InstanceRecord]:
        """The saved records; none when the file is missing, unreadable or corrupt.

        A corrupt file is moved aside (never deleted: a person may want to read it) with a
        warning, so the daemon starts anyway; the engines it named are then unknown to us.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("Cannot read %s (%s); starting without instance records", self.path, exc)
            return []
        try:
            return _parse(raw)
        except (CorruptRecordsError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            aside = self.path.with_name(
                f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
            )
            try:
                self.path.replace(aside)
            except OSError as move_exc:
                log.warning(
                    "Instance records in %s are corrupt (%s) and cannot be moved "
                    "aside (%s); ignoring them",
                    self.path,
                    exc,
                    move_exc,
                )
            else:
                log.warning(
                    "Instance records in %s are corrupt (%s); moved aside to %s",
                    self.path,
                    exc,
                    aside,
                )
            return []

    def save(self, records: Iterable[InstanceRecord]) -> None:
        body = {"version": FORMAT_VERSION, "instances": [r.to_json() for r in records]}
        write_atomic(self.path, json.dumps(body, indent=2, ensure_ascii=False).encode("utf-8"))


def _parse(raw: bytes) -> list[InstanceRecord]:
    body = json.loads(raw.decode("utf-8"))
    if not isinstance(body, dict) or body.get("version") != FORMAT_VERSION:
        raise CorruptRecordsError(f"not a version {FORMAT_VERSION} records file")
    entries = body.get("instances")
    if not isinstance(entries, list):
        raise CorruptRecordsError("instances is not a list")
    return [InstanceRecord.from_json(entry) for entry in entries]
