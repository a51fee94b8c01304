"""Render instances and presets as rich tables for `roundhouse engines ps` and `presets`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import PurePath

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.installs import BuildList
from roundhouse.api.instances import (
    InstanceInfo,
    InstanceList,
    InstanceMetrics,
    InstanceOrigin,
    InstanceStatus,
    PresetList,
)
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.cli.tables import Column, console_width, fitted

_STATUS_STYLE = {
    InstanceStatus.READY: "green",
    InstanceStatus.FAILED: "red",
    InstanceStatus.UNHEALTHY: "yellow",
    InstanceStatus.RESTARTING: "yellow",
}


def _short_model(info: InstanceInfo) -> str:
    """The name a request uses: what the engine serves (a library model's short id), a
    file path as its stem, a repo id or tag as it is."""
    model = info.models[0] if len(info.models) == 1 else info.model
    if not model:
        return "—"
    if "/" in model and model.startswith(("/", "~", ".")):
        name = PurePath(model).name
        return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name
    return model


def _origin(info: InstanceInfo) -> str:
    """started, adopted, or external marked unprotected (and whether it serves presets)."""
    if info.unprotected is None:
        return info.origin.value
    presets = ", serves presets" if info.may_serve_presets else ""
    return f"{info.origin.value} [yellow]unprotected[/]{presets}"


def instance_notes(answer: InstanceList) -> list[Text]:
    """Below the table: why engines are unprotected and what to do, the daemon's warnings,
    and the engines a scan left out with why."""
    notes: list[Text] = []
    unprotected: dict[str, list[str]] = {}
    for info in answer.instances:
        if info.unprotected:
            unprotected.setdefault(info.unprotected, []).append(info.id)
    for words, ids in unprotected.items():
        notes.append(Text.assemble(("Unprotected", "yellow"), f" ({', '.join(ids)}): {words}"))
    if any(i.unprotected and not i.may_serve_presets for i in answer.instances):
        notes.append(
            Text(
                "Engines Roundhouse did not start never serve a model your presets start; "
                "`roundhouse engines allow-presets ID` lets one."
            )
        )
    for info in answer.instances:
        # A started instance has a name only when it spans machines (vLLM across them).
        if info.origin == InstanceOrigin.STARTED and info.name:
            notes.append(Text(f"{info.id}: {info.name}"))
    for info in answer.instances:
        for warning in info.warnings:
            notes.append(Text.assemble(("Warning", "yellow"), f" ({info.id}): {warning}"))
    for line in answer.left_out:
        notes.append(Text.assemble(("Left out", "yellow"), f": {line}"))
    return notes


def _status(info: InstanceInfo) -> str:
    style = _STATUS_STYLE.get(info.status)
    status = info.status.value
    if info.status in (InstanceStatus.STARTING, InstanceStatus.LOADING) and info.waited_s:
        status += f" {info.waited_s:.0f} s"
    if info.status == InstanceStatus.FAILED and info.error:
        status += f": {info.error.splitlines()[0][:80]}"
    return f"[{style}]{status}[/]" if style else status


def _up(info: InstanceInfo) -> str:
    return format_duration(uptime(info)) if info.status != InstanceStatus.FAILED else "—"


def instances_view(answer: InstanceList, width: int | None = None) -> RenderableType:
    notes = instance_notes(answer)
    if not answer.instances:
        empty = "No instances. Start one with `roundhouse engines start ENGINE --model MODEL`."
        return Group(empty, *notes) if notes else empty
    rows = answer.instances
    table = fitted(
        "Instances",
        [
            Column("ID", [i.id for i in rows], whole=True),
            Column("Engine", [i.engine.value for i in rows], drop=2),
            Column("Model", [_short_model(i) for i in rows], whole=True),
            Column("Status", [_status(i) for i in rows]),
            Column("Base URL", [i.base_url for i in rows], drop=1),
            Column("Up", [_up(i) for i in rows], drop=4),
            Column(
                "Memory", [format_bytes(i.rss_bytes) if i.rss_bytes else "—" for i in rows], drop=3
            ),
            Column("Origin", [_origin(i) for i in rows], drop=5),
        ],
        width or console_width(),
    )
    return Group(table, *notes) if notes else table


def presets_view(answer: PresetList) -> Table | str:
    if not answer.presets:
        return "No presets. Save one with `roundhouse engines start ... --save-preset NAME`."
    table = Table(title="Presets", title_justify="left")
    for column in ("Engine", "Model", "Name", "Options"):
        table.add_column(column)
    for preset in answer.presets:
        table.add_row(
            preset.engine.value, preset.model, preset.name, options_summary(preset.options)
        )
    return table


def options_summary(options: InstanceOptions | None) -> str:
    """The options a user chose, in one short line."""
    if options is None:
        return ""
    chosen = options.model_dump(exclude_defaults=True, exclude={"model"})
    return " ".join(f"{k}={v}" for k, v in chosen.items())


def uptime(info: InstanceInfo, now: Callable[[], float] = time.time) -> float:
    return max(0.0, now() - (info.ready_at or info.started_at))


def builds_view(answer: BuildList) -> Table | str:
    if not answer.builds:
        return (
            "No llama.cpp build installed by Roundhouse. "
            "Install one: `roundhouse engines install llama.cpp`."
        )
    table = Table(title="llama.cpp builds", title_justify="left")
    for column in ("Tag", "Current", "Backend", "Asset", "Folder"):
        table.add_column(column)
    for build in answer.builds:
        backend = build.backend.value if build.backend else "—"
        if build.backend_version:
            backend += f" {build.backend_version}"
        table.add_row(
            build.tag, "yes" if build.current else "", backend, build.asset or "—", build.path
        )
    if answer.partials:
        table.caption = "Resumable downloads: " + ", ".join(answer.partials)
    return table


def metrics_view(answer: InstanceMetrics) -> Table | str:
    if not answer.values:
        return f"{answer.url} lists none of the metrics Roundhouse reads."
    table = Table(title=f"Metrics ({answer.url})", title_justify="left")
    table.add_column("Metric")
    table.add_column("Value", justify="right")
    for name, value in sorted(answer.values.items()):
        table.add_row(name, f"{value:g}")
    return table
