"""Render the gateway's models, usage and a served model for `roundhouse gateway` and `run`."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.gateway import GatewayModel, GatewayModelList, GatewayUsage, ModelState
from roundhouse.api.instances import InstanceInfo
from roundhouse.base.units import format_duration
from roundhouse.cli.tables import Column, console_width, fitted

_STATE_STYLE = {
    ModelState.SERVING: "green",
    ModelState.LOADING: "yellow",
    ModelState.STARTABLE: "cyan",
}


def models_view(answer: GatewayModelList, width: int | None = None) -> RenderableType:
    if not answer.models:
        return (
            "No models: start an instance (`roundhouse engines start ...`), or save a preset "
            "(`--save-preset default`) so the gateway can start its model on request."
        )
    entries = answer.models
    table = fitted(
        "Gateway models",
        [
            Column("ID", [_name(e, answer) for e in entries], whole=True),
            Column(
                "State", [Text(e.state.value, style=_STATE_STYLE.get(e.state, "")) for e in entries]
            ),
            Column("Engine", [e.engine.value for e in entries], drop=1),
            Column("Instance", [e.instance or "—" for e in entries], whole=True, drop=2),
            Column("Settings", [_settings_words(e) for e in entries], drop=3),
            Column("Model", [Text(e.model or "—") for e in entries], drop=4),
        ],
        width or console_width(),
    )
    if answer.default_model:
        return Group(
            table, Text(f"A name nothing lists is served by {answer.default_model} (default).")
        )
    return table


def _name(entry: GatewayModel, answer: GatewayModelList) -> Text:
    name = Text(entry.id)
    if entry.alias_of:
        name.append(f" → {entry.alias_of}", style="dim")
    if entry.id == answer.active_model:
        name.append(" (active)", style="bold")
    return name


def _settings_words(entry: GatewayModel) -> str:
    """The preset, else how the start chooses its settings (the fit estimate)."""
    if entry.alias_of:
        return "alias"
    if entry.preset:
        return f"preset {entry.preset}"
    return "fit estimate" if entry.launch else "—"


def usage_view(answer: GatewayUsage, now: Callable[[], float] = time.time) -> RenderableType:
    if not answer.usage:
        return "No instances: nothing has used the gateway yet."
    table = Table(title="Gateway use since the daemon started", title_justify="left")
    for column in ("Instance", "Requests", "Prompt tokens", "Completion tokens"):
        table.add_column(column, justify="left" if column == "Instance" else "right")
    for column in ("In flight", "Queued", "Last used", "Idle stop"):
        table.add_column(column, justify="right")
    for entry in answer.usage:
        last = (
            f"{format_duration(max(0.0, now() - entry.last_used_at))} ago"
            if entry.last_used_at is not None
            else "never"
        )
        ttl = f"after {format_duration(entry.idle_ttl_s)}" if entry.idle_ttl_s else "kept"
        table.add_row(
            entry.instance,
            str(entry.requests),
            str(entry.prompt_tokens),
            str(entry.completion_tokens),
            str(entry.in_flight),
            str(entry.queued),
            last,
            ttl,
        )
    # Which client APIs came, and whether each went to the engine as is or translated.
    ways = [
        f"{entry.instance}: "
        + ", ".join(f"{api} {count}" for api, count in sorted(entry.by_api.items()))
        for entry in answer.usage
        if entry.by_api
    ]
    if not ways:
        return table
    return Group(table, "Requests by API and path (passthrough or translated):", *ways)


def curl_example(base_url: str, model: str) -> str:
    body = f'{{"model": "{model}", "messages": [{{"role": "user", "content": "Hi"}}]}}'
    return f"curl {base_url}/chat/completions -H 'Content-Type: application/json' -d '{body}'"


def served_view(model: str, base_url: str, info: InstanceInfo) -> RenderableType:
    """What `roundhouse run` prints once the model is served."""
    return Group(
        Text.assemble(
            "Serving ",
            (model, "bold"),
            f" on {info.engine.value} instance ",
            (info.id, "bold"),
            f" ({info.status.value}).",
        ),
        *([Text(f"Settings: {info.launch_note}")] if info.launch_note else []),
        Text(f"Gateway base URL: {base_url}"),
        Text("Try:"),
        Text(curl_example(base_url, model)),
    )
