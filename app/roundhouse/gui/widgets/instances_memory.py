"""The words of an instance's memory: the engine's own buffers beside the estimate."""

from __future__ import annotations

from roundhouse.api.instances import InstanceInfo
from roundhouse.base.units import format_bytes

RSS_TEXT = "Resident memory of the engine's whole process tree"


def memory_summary(info: InstanceInfo) -> str | None:
    """'Memory: estimated 1.9 MiB, actual 2.1 MiB'; None before a load reported any."""
    memory = info.memory
    if memory is None or (memory.actual is None and memory.estimate is None):
        return None
    estimate = memory.estimate
    guess = (
        estimate.weights_bytes + estimate.kv_bytes + estimate.compute_bytes if estimate else None
    )
    real = memory.actual.total_bytes if memory.actual else None
    return f"Memory: estimated {format_bytes(guess)}, actual {format_bytes(real)}"


def memory_tooltip(info: InstanceInfo) -> str:
    """The summary, each device's weights, KV cache and compute both ways, and the notes."""
    summary = memory_summary(info)
    if summary is None or info.memory is None:
        return RSS_TEXT
    memory = info.memory
    lines = [f"{summary} (weights, KV cache and compute buffers)"]
    if memory.estimate is not None:
        lines.append("Estimated:")
        lines.extend(
            f"  {d.label}: {_parts(d.weights_bytes, d.kv_bytes, d.compute_bytes)}"
            for d in memory.estimate.devices
        )
    if memory.actual is not None:
        lines.append("Allocated by the engine:")
        lines.extend(
            f"  {d.device}: {_parts(d.weights_bytes, d.kv_bytes, d.compute_bytes)}"
            for d in memory.actual.devices
        )
        if memory.actual.offloaded_layers is not None:
            lines.append(
                f"Layers on the GPU: {memory.actual.offloaded_layers} of "
                f"{memory.actual.total_layers}"
            )
        lines.extend(memory.actual.notes)
    lines.extend(memory.notes)
    lines.append(f"{RSS_TEXT}: {format_bytes(info.rss_bytes)}")
    return "\n".join(lines)


def _parts(weights: int, kv: int, compute: int) -> str:
    return (
        f"weights {format_bytes(weights)}, KV {format_bytes(kv)}, compute {format_bytes(compute)}"
    )
