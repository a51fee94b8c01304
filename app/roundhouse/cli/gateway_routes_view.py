"""Render `roundhouse gateway routes`: per model, its instances in the order tried, and health."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from roundhouse.api.gateway import CircuitState, GatewayRoutes, ModelRoute, RouteInstance
from roundhouse.cli.tables import Column, console_width, fitted

_CIRCUIT_STYLE = {
    CircuitState.CLOSED: "green",
    CircuitState.HALF_OPEN: "yellow",
    CircuitState.OPEN: "red",
}


def routes_view(answer: GatewayRoutes, width: int | None = None) -> RenderableType:
    if not answer.routes:
        return (
            "No routes: no instance serves a model. Start one (`roundhouse engines start ...`); "
            "with two instances serving one model the gateway sends each request to the least "
            "busy healthy one."
        )
    return Group(*(_model(route, width or console_width()) for route in answer.routes))


def _model(route: ModelRoute, width: int) -> RenderableType:
    title = route.model
    if route.fallbacks:
        title += f" (falls back to {', '.join(route.fallbacks)})"
    if not route.instances:
        return Text(f"{title}: no instance serves it now.")
    entries = route.instances
    return fitted(
        title,
        [
            Column("Instance", [e.instance for e in entries], whole=True),
            Column("Machine", [e.machine or "this one" for e in entries], drop=3),
            Column("Status", [e.status for e in entries]),
            Column("Circuit", [_circuit(e) for e in entries]),
            Column("Busy", [str(e.busy) for e in entries], drop=2),
            Column("Context", [str(e.context) if e.context else "—" for e in entries], drop=4),
            Column("Last failure", [Text(e.last_error or "—") for e in entries], drop=1),
        ],
        width,
    )


def _circuit(entry: RouteInstance) -> Text:
    words = entry.circuit.value
    if entry.circuit == CircuitState.OPEN and entry.next_check_in_s is not None:
        words += f" (check in {entry.next_check_in_s:.0f} s)"
    elif entry.failures:
        words += f" ({entry.failures} failed)"
    return Text(words, style=_CIRCUIT_STYLE[entry.circuit])
