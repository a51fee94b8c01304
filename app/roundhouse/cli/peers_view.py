"""Render paired machines for `roundhouse peers`: the list, a pairing code, one peer's state."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.text import Text

from roundhouse.api.instances import InstanceList
from roundhouse.api.metrics import MetricsHistory
from roundhouse.api.peers import DiscoveredList, PairingCodeReply, PeerList, PeerState
from roundhouse.base.units import format_bytes, format_duration
from roundhouse.cli.instances_view import instances_view
from roundhouse.cli.tables import Column, console_width, fitted


def shown_fingerprint(fingerprint: str) -> str:
    """The first 32 hex digits in groups of four: what a person compares on both screens."""
    head = fingerprint[:32].upper()
    return " ".join(head[i : i + 4] for i in range(0, len(head), 4))


def peers_view(answer: PeerList) -> RenderableType:
    listener = answer.listener
    if listener.url is None:
        where = Text(
            "Peer listener: off (set peers.listen_host to let machines pair with this one)."
        )
    elif listener.error:
        where = Text(f"Peer listener: {listener.error}", style="red")
    else:
        where = Text(f"Peer listener: {listener.url}", style="green")
    if not answer.peers:
        return Group(where, Text("No paired machines. Pair one with `roundhouse peers add`."))
    ids, names = Column("ID", whole=True), Column("Name")
    addresses, states = Column("Address", whole=True), Column("State")
    since = Column("Paired", drop=1)
    now = time.time()
    for peer in answer.peers:
        ids.cells.append(peer.id)
        names.cells.append(peer.name)
        addresses.cells.append(f"{peer.host}:{peer.port}" if peer.port else peer.host)
        if peer.reachable is None:
            states.cells.append(Text("not asked"))
        elif peer.reachable:
            states.cells.append(Text(f"answers ({peer.version})", style="green"))
        else:
            states.cells.append(Text(peer.error or "does not answer", style="red"))
        since.cells.append(f"{format_duration(max(0.0, now - peer.paired_at))} ago")
    table = fitted("Paired machines", [ids, names, addresses, states, since], console_width())
    return Group(where, table)


def discovered_view(answer: DiscoveredList) -> RenderableType:
    if not answer.found:
        return Text(
            "No Roundhouse daemon answered on the LAN. Only those with peers.discovery on "
            "answer; `roundhouse peers add HOST --code CODE` works without it."
        )
    names, addresses = Column("Name", whole=True), Column("Address", whole=True)
    prints, paired = Column("Fingerprint"), Column("Paired")
    for found in answer.found:
        names.cells.append(found.name)
        addresses.cells.append(" ".join(f"{a}:{found.port}" for a in found.addresses))
        prints.cells.append(shown_fingerprint(found.fingerprint))
        paired.cells.append("yes" if found.paired else "no")
    return fitted("On the LAN", [names, addresses, prints, paired], console_width())


def code_view(answer: PairingCodeReply) -> RenderableType:
    left = format_duration(max(0.0, answer.expires_at - time.time()))
    lines: list[RenderableType] = [
        Text.assemble("Pairing code: ", (answer.code, "bold"), f" (valid {left}, once)"),
        Text(f"Fingerprint:  {shown_fingerprint(answer.fingerprint)}"),
    ]
    addresses = answer.addresses or ([answer.host] if answer.host else [])
    if addresses:
        lines.append(
            Text(
                "On the other machine: "
                + " or ".join(
                    f"roundhouse peers add {a}:{answer.port} --code {answer.code}"
                    for a in addresses
                )
            )
        )
    if not answer.listening:
        lines.append(Text(answer.error or "The peer listener is not listening.", style="red"))
    return Group(*lines)


def _last(history: MetricsHistory, name: str) -> float | None:
    for series in history.series:
        found = [v for v in series.values.get(name) or [] if v is not None]
        if found:
            return found[-1]
    return None


def figures_line(instance: str, history: MetricsHistory) -> str | None:
    """An instance's latest figures, as its machine sampled them; None when it has none."""
    tps, rss, vram = (_last(history, n) for n in ("output_tps", "rss_bytes", "vram_bytes"))
    if tps is None and rss is None:
        return None
    parts = [f"{tps or 0.0:.1f} tok/s", f"{format_bytes(rss)} resident"]
    if vram is not None:
        parts.append(f"{format_bytes(vram)} GPU")
    return f"{instance}: " + ", ".join(parts)


def state_view(
    state: PeerState, figures: dict[str, MetricsHistory] | None = None
) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble((state.name, "bold"), f"  Roundhouse {state.version}"),
    ]
    hardware = state.hardware
    if hardware is not None:
        gpus = (
            ", ".join(
                f"{g.name} ({format_bytes(g.memory_total_bytes)})"
                if g.memory_total_bytes
                else g.name
                for g in hardware.gpus
            )
            or "no GPU"
        )
        parts.append(
            Text(
                f"{hardware.cpu.brand}, {hardware.cpu.logical_cores} threads, "
                f"{format_bytes(hardware.memory.total_bytes)} RAM; {gpus}"
            )
        )
    if state.instances:
        parts.append(instances_view(InstanceList(instances=state.instances), console_width()))
    else:
        parts.append(Text("No instances running."))
    if state.load:
        busy = [f"{x.instance}: {x.in_flight} in flight, {x.queued} queued" for x in state.load]
        parts.append(Text("Load: " + "; ".join(busy)))
    lines = [figures_line(i, h) for i, h in (figures or {}).items()]
    if any(lines):
        parts.append(Text("Figures now: " + "; ".join(x for x in lines if x)))
    if state.startable:
        parts.append(Text("Can start: " + ", ".join(state.startable)))
    return Group(*parts)
