"""The running instances as a table model: rows keyed by id, updated in place each listing."""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import IntEnum
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtWidgets import QApplication, QStyle

from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.gui.theme.roles import role_colour
from roundhouse.gui.widgets.instances_memory import memory_tooltip

AnyIndex = QModelIndex | QPersistentModelIndex


class Column(IntEnum):
    ENGINE = 0
    MODEL = 1
    STATUS = 2
    PORT = 3
    BASE_URL = 4
    UPTIME = 5
    MEMORY = 6
    ORIGIN = 7


HEADERS = {
    Column.ENGINE: "Engine",
    Column.MODEL: "Model",
    Column.STATUS: "Status",
    Column.PORT: "Port",
    Column.BASE_URL: "Base URL",
    Column.UPTIME: "Uptime",
    Column.MEMORY: "Memory",
    Column.ORIGIN: "Origin",
}
# The whole InstanceInfo of a row, for views and actions.
INSTANCE_ROLE = Qt.ItemDataRole.UserRole + 1
# Colour roles of the theme in force; the status words say the same.
FAILED_ROLE = "danger_text"
READY_ROLE = "success_text"
UNPROTECTED_ROLE = "warning_text"
UNPROTECTED_BADGE = "unprotected"
_NUMERIC = {Column.PORT, Column.UPTIME, Column.MEMORY}


def model_name(model: str | None) -> str:
    """A file's name for a path ('/m/tiny.gguf' -> 'tiny.gguf'); repo ids and tags as given."""
    if not model:
        return "—"
    for flavour in (PurePosixPath, PureWindowsPath):
        path = flavour(model)
        if path.is_absolute():
            return path.name or model
    return model


def status_in_words(info: InstanceInfo) -> str:
    """'loading the model… 4 s', 'ready', 'failed: <why>'."""
    waited = f" {info.waited_s:.0f} s" if info.waited_s is not None else ""
    match info.status:
        case InstanceStatus.STARTING:
            return f"starting…{waited}"
        case InstanceStatus.LOADING:
            return f"loading the model…{waited}"
        case InstanceStatus.READY:
            return "ready" if not info.restarts else f"ready (restarted {info.restarts}×)"
        case InstanceStatus.UNHEALTHY:
            return "not answering" + (f": {info.probe_status}" if info.probe_status else "")
        case InstanceStatus.RESTARTING:
            return f"restarting after a crash (attempt {info.restarts})"
        case InstanceStatus.STOPPING:
            return "stopping…"
        case InstanceStatus.FAILED:
            return f"failed: {failure_in_words(info)}"


def failure_in_words(info: InstanceInfo) -> str:
    if info.error:
        return info.error
    if info.last_exit is not None:
        return info.last_exit.message
    return "no reason given"


def origin_in_words(info: InstanceInfo) -> str:
    """'started', 'adopted', or 'external · unprotected' for an engine Roundhouse cannot
    guard."""
    if info.unprotected is None:
        return info.origin.value
    return f"{info.origin.value} · {UNPROTECTED_BADGE}"


def origin_tooltip(info: InstanceInfo) -> str:
    """Who started it; for an engine Roundhouse did not start, why it is unprotected, what
    to do, whether it serves preset models, and the daemon's warnings."""
    if info.origin == InstanceOrigin.ADOPTED:
        return "Started by an earlier run of the daemon and kept running"
    if info.origin != InstanceOrigin.EXTERNAL:
        return "Started by this daemon"
    lines = ["Not started by Roundhouse: stopping it asks first."]
    if info.unprotected:
        lines.append(info.unprotected)
    if info.may_serve_presets:
        lines.append("It may serve the models your presets start (right-click to stop that).")
    else:
        lines.append(
            "It never serves a model one of your presets starts: the gateway starts that model "
            "itself. Right-click it to let it."
        )
    lines.extend(info.warnings)
    return "\n\n".join(lines)


def _status_tooltip(info: InstanceInfo) -> str:
    lines = [status_in_words(info)]
    if info.probe_status and info.status != InstanceStatus.UNHEALTHY:
        lines.append(f"Last answer of the engine: {info.probe_status}")
    if info.last_exit is not None and info.last_exit.message not in lines[0]:
        lines.append(f"Last exit: {info.last_exit.message}")
    if info.status == InstanceStatus.FAILED:
        lines.append("Open its log to see the engine's last lines.")
    return "\n".join(lines)


class InstancesModel(QAbstractTableModel):
    """Rows keep their place; new instances are added at the end, gone ones removed.

    Views keep their selection: the model is never reset, only rows inserted, removed and
    changed (dataChanged), so a row's index stays its own across listings.
    """

    def __init__(self, clock: Callable[[], float] = time.time, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[InstanceInfo] = []
        self._clock = clock

    # -- the data -----------------------------------------------------------------------

    def set_instances(self, instances: list[InstanceInfo]) -> None:
        latest = {info.id: info for info in instances}
        for row in reversed(range(len(self._rows))):
            if self._rows[row].id not in latest:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._rows[row]
                self.endRemoveRows()
        last_column = len(Column) - 1
        for row, old in enumerate(self._rows):
            info = latest[old.id]
            if info != old:
                self._rows[row] = info
                self.dataChanged.emit(self.index(row, 0), self.index(row, last_column))
        known = {info.id for info in self._rows}
        fresh = [info for info in instances if info.id not in known]
        if fresh:
            first = len(self._rows)
            self.beginInsertRows(QModelIndex(), first, first + len(fresh) - 1)
            self._rows.extend(fresh)
            self.endInsertRows()

    def tick_uptimes(self) -> None:
        """Repaint the uptimes: they move with the clock, not with the daemon's news."""
        if self._rows:
            self.dataChanged.emit(
                self.index(0, Column.UPTIME),
                self.index(len(self._rows) - 1, Column.UPTIME),
                [Qt.ItemDataRole.DisplayRole],
            )

    def instance(self, row: int) -> InstanceInfo:
        return self._rows[row]

    def row_of(self, instance_id: str) -> int | None:
        for row, info in enumerate(self._rows):
            if info.id == instance_id:
                return row
        return None

    def instances(self) -> list[InstanceInfo]:
        return list(self._rows)

    # -- QAbstractTableModel ------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(Column)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[Column(section)]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        info = self._rows[index.row()]
        column = Column(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(info, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(info, column)
        if role == Qt.ItemDataRole.ForegroundRole and column == Column.STATUS:
            if info.status == InstanceStatus.FAILED:
                return role_colour(FAILED_ROLE)
            if info.status == InstanceStatus.READY:
                return role_colour(READY_ROLE)
            return None
        if column == Column.ORIGIN and (info.unprotected or info.warnings):
            if role == Qt.ItemDataRole.ForegroundRole:
                return role_colour(UNPROTECTED_ROLE)
            if role == Qt.ItemDataRole.DecorationRole:
                style = QApplication.style()
                return style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == INSTANCE_ROLE:
            return info
        return None

    def text(self, info: InstanceInfo, column: Column) -> str:
        match column:
            case Column.ENGINE:
                # An attached server is known by the name the user gave it.
                named = info.name and info.name != info.engine.value
                return f"{info.engine.value}: {info.name}" if named else info.engine.value
            case Column.MODEL:
                return model_name(info.model)
            case Column.STATUS:
                return status_in_words(info)
            case Column.PORT:
                return str(info.port)
            case Column.BASE_URL:
                return info.base_url
            case Column.UPTIME:
                return self._uptime(info)
            case Column.MEMORY:
                return format_bytes(info.rss_bytes)
            case Column.ORIGIN:
                return origin_in_words(info)

    def _uptime(self, info: InstanceInfo) -> str:
        if info.status in (InstanceStatus.FAILED, InstanceStatus.STOPPING):
            return "—"
        return format_duration(max(0.0, self._clock() - info.started_at))

    def _tooltip(self, info: InstanceInfo, column: Column) -> str | None:
        match column:
            case Column.MODEL:
                names = [m for m in info.models if m != info.model]
                served = f"\nServed as: {', '.join(names)}" if names else ""
                return (info.model or "No model chosen: the engine serves what it has.") + served
            case Column.STATUS:
                return _status_tooltip(info)
            case Column.BASE_URL:
                if info.origin == InstanceOrigin.EXTERNAL:
                    return f"OpenAI-compatible base URL of the engine itself: {info.base_url}"
                return (
                    f"The engine's own address ({info.base_url}) answers only Roundhouse, with "
                    "a key of this instance's: apps use the gateway (Copy base URL gives it)."
                )
            case Column.MEMORY:
                return memory_tooltip(info)
            case Column.ORIGIN:
                return origin_tooltip(info)
        return None
