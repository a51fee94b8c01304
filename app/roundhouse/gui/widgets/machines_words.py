"""The Machines page's words: a machine's hardware in a line, whether it answers, an
instance's model and load (no Qt in here)."""

from __future__ import annotations

from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.peers import PeerInfo, PeerLoad
from roundhouse.base.units import format_bytes

NO_PEERS = (
    "No machine is paired with this one. Pair a machine… shows a code to type on the other "
    "machine, or takes the code the other machine shows."
)


def hardware_line(hardware: HardwareInventory | None) -> str:
    """GPUs with their memory, RAM and CPU, in one line."""
    if hardware is None:
        return "Hardware not known yet."
    gpus = ", ".join(
        f"{g.name} ({format_bytes(g.memory_total_bytes)})" if g.memory_total_bytes else g.name
        for g in hardware.gpus
    )
    cpu = hardware.cpu
    cores = f"{cpu.logical_cores} threads"
    return (
        f"{gpus or 'No GPU'}; {format_bytes(hardware.memory.total_bytes)} RAM; {cpu.brand}, {cores}"
    )


def load_text(load: list[PeerLoad], instance: str) -> str:
    """Requests on the instance now: in flight and queued."""
    found = next((x for x in load if x.instance == instance), None)
    if found is None:
        return "—"
    return f"{found.in_flight} in flight, {found.queued} queued"


def model_text(info: InstanceInfo) -> str:
    """The model an instance serves, as a file's or a repository's name."""
    model = info.model or (info.models[0] if info.models else info.id)
    return model.replace("\\", "/").rsplit("/", 1)[-1]


def reachability(peer: PeerInfo) -> str:
    """Whether the machine answers, as its change feed last said, or why not."""
    if peer.reachable:
        return f"Reachable at {peer.host}:{peer.port} (Roundhouse {peer.version or '?'})"
    if peer.reachable is None:
        return f"At {peer.host}:{peer.port}: not heard from yet…"
    return f"Not reachable: {peer.error or f'nothing answers at {peer.host}:{peer.port}.'}"
