"""The split across machines the fit estimate proposes for llama.cpp's RPC: layers per machine."""

from __future__ import annotations

from collections.abc import Sequence

from roundhouse.api.fit import DeviceKind, FitReport, FitVerdict
from roundhouse.api.rpc import MachineMemory, SplitProposal, SplitShare
from roundhouse.base.units import format_bytes

HERE = "this machine"
# Below this a link (Mbit/s) makes each token wait on the network at every machine boundary.
SLOW_LINK_MBPS = 1000.0


def propose_split(
    report: FitReport, workers: Sequence[MachineMemory], *, link_mbps: float | None = None
) -> SplitProposal:
    """Split the model of `report` (estimated on this machine) over this machine and `workers`.

    Each machine gets layers in proportion to what it has free after its own work buffers,
    so all fill alike; llama.cpp lists RPC workers before this machine's GPUs, and keeps on
    this machine's CPU the layers -ngl leaves out. `slower` says in words when one machine
    would be faster (it fits here, or the link is slow).
    """
    layers = max(1, report.total_layers)
    per_layer = (report.weights_bytes + report.kv_bytes) / layers
    gpus = [d for d in report.devices if d.kind == DeviceKind.GPU]
    here_devices = gpus or [d for d in report.devices if d.kind == DeviceKind.CPU]
    here_free = sum(d.free_bytes for d in here_devices)
    names = [HERE, *(w.address for w in workers)]
    frees = [here_free, *(w.free_bytes for w in workers)]
    # Every machine runs its own compute buffers beside the layers it holds.
    room = [max(0, free - report.compute_bytes) for free in frees]
    counts = _shares(layers, room)
    shares = []
    for name, free, count in zip(names, frees, counts, strict=True):
        need = round(count * per_layer) + (report.compute_bytes if count else 0)
        shares.append(
            SplitShare(machine=name, layers=count, bytes=need, free_bytes=free, fits=need <= free)
        )
    fits = all(s.fits for s in shares)
    here_layers = counts[0]
    worker_layers = [float(c) for c in counts[1:]]
    if gpus:
        # All layers offloaded: the workers' and this machine's GPUs', each GPU by its room.
        gpu_counts = _shares(here_layers, [d.free_bytes for d in gpus])
        tensor_split = [*worker_layers, *(float(c) for c in gpu_counts)]
        n_gpu_layers = layers
    else:
        # No GPU here: this machine's share stays on its CPU, the rest goes to the workers.
        tensor_split = worker_layers
        n_gpu_layers = layers - here_layers
    return SplitProposal(
        shares=shares,
        # One device has no choice to make: llama.cpp then needs no --tensor-split.
        tensor_split=tensor_split if len(tensor_split) > 1 else [],
        n_gpu_layers=n_gpu_layers,
        fits=fits,
        summary=_summary(shares, fits),
        slower=_slower(report, link_mbps),
    )


def _shares(total: int, room: Sequence[int]) -> list[int]:
    """`total` split in proportion to `room`, in whole numbers that add up (largest remainder)."""
    whole = sum(room)
    if whole <= 0:
        # Nothing free anywhere: an even split, which the report then shows does not fit.
        room = [1] * len(room)
        whole = len(room)
    exact = [total * r / whole for r in room]
    counts = [int(x) for x in exact]
    order = sorted(range(len(room)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _summary(shares: Sequence[SplitShare], fits: bool) -> str:
    parts = [
        f"{s.machine} {s.layers} layers ({format_bytes(s.bytes)} of "
        f"{format_bytes(s.free_bytes)} free)"
        for s in shares
    ]
    head = f"Split over {len(shares)} machines: " if fits else "Does not fit even split: "
    short = [s.machine for s in shares if not s.fits]
    tail = "" if fits else f" Too little free on {', '.join(short)}."
    return head + "; ".join(parts) + "." + tail


def _slower(report: FitReport, link_mbps: float | None) -> str:
    if report.verdict == FitVerdict.FULL_GPU:
        return (
            "It fits on this machine's GPU: one machine is faster, because a split sends "
            "every token across the network to each worker and back."
        )
    if report.verdict != FitVerdict.DOES_NOT_FIT:
        return (
            "It fits on this machine already: a split lends memory, not speed (the machines "
            "take turns on each token), so it is slower unless the workers' GPUs take "
            "layers off this machine's CPU."
        )
    if link_mbps is not None and link_mbps < SLOW_LINK_MBPS:
        return (
            f"The link is {link_mbps:g} Mbit/s: each token waits on the network at every "
            "machine, so the split may be slower than running on this machine alone; "
            "use wired gigabit Ethernet or faster."
        )
    return ""
