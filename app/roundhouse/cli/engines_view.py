"""Render the engine catalog and detection as a rich table for `roundhouse engines`."""

from __future__ import annotations

from rich.table import Table

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    EnginesOverview,
    LaunchStyle,
    SupportLevel,
)


def engines_view(overview: EnginesOverview) -> Table:
    found: dict[EngineId, list[DetectedEngine]] = {}
    for engine in overview.detection.found:
        found.setdefault(engine.id, []).append(engine)
    missing = {m.id: m for m in overview.detection.missing}
    table = Table(title="Engines", title_justify="left")
    for column in ("Engine", "Status", "Version", "Where / why not", "Serves"):
        table.add_column(column)
    for spec in overview.catalog.engines:
        if spec.launch == LaunchStyle.ATTACH:
            continue
        formats = ", ".join(f.value.upper() for f in spec.formats)
        for engine in found.get(spec.id, []):
            status = "[green]found[/]"
            if engine.support != SupportLevel.SUPPORTED:
                status += f" ({engine.support.value})"
            where = engine.where
            if engine.path:
                where += f": {engine.path}"
            if spec.id == EngineId.LLAMA_CPP:
                # The split across machines needs it here and on each worker (ADR 36).
                where += "; rpc-server beside it" if engine.rpc_server else "; no rpc-server"
            table.add_row(spec.title, status, engine.version or "—", where, formats)
        if spec.id not in found:
            why = missing[spec.id].why if spec.id in missing else "not found"
            table.add_row(spec.title, "[yellow]not found[/]", "—", why, formats)
    return table
