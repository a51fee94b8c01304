"""`roundhouse engines memory ID`: the engine's own buffers per device beside the estimate."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.fit import DeviceFit, DeviceKind, FitReport
from roundhouse.api.instance_memory import DeviceMemoryUse, InstanceMemory, MemoryUse
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.base.units import format_bytes

Pair = tuple[str, DeviceFit | None, DeviceMemoryUse | None]
_PARTS = (
    ("weights", "weights_bytes", "weights_bytes"),
    ("KV cache", "kv_bytes", "kv_bytes"),
    ("compute", "compute_bytes", "compute_bytes"),
)


def memory_view(info: InstanceInfo) -> RenderableType:
    memory = info.memory
    if memory is None:
        if info.status != InstanceStatus.READY:
            return f"Instance {info.id} is {info.status.value}: its memory shows once it is ready."
        return (
            f"Instance {info.id} ({info.engine.value}) reports no memory figures: only "
            "llama.cpp instances started by this daemon do."
        )
    parts: list[RenderableType] = []
    if memory.actual is not None or memory.estimate is not None:
        parts.append(memory_table(memory))
    parts.extend(Text(line) for line in memory_lines(memory))
    return Group(*parts)


def pairs(estimate: FitReport | None, actual: MemoryUse | None) -> list[Pair]:
    """Each device with its estimate and the engine's figures: GPUs by number, RAM last."""
    fits = list(estimate.devices) if estimate else []
    used = list(actual.devices) if actual else []

    def key(kind: DeviceKind, index: int | None) -> tuple[bool, int]:
        return (kind == DeviceKind.CPU, index or 0)

    keys = sorted({key(d.kind, d.index) for d in fits} | {key(d.kind, d.index) for d in used})
    found: list[Pair] = []
    for k in keys:
        fit = next((d for d in fits if key(d.kind, d.index) == k), None)
        use = next((d for d in used if key(d.kind, d.index) == k), None)
        label = fit.label if fit else use.device if use else "?"
        if use is not None and fit is not None and use.kind == DeviceKind.GPU:
            label = f"{fit.label} [{use.device}]"
        found.append((label, fit, use))
    return found


def memory_table(memory: InstanceMemory) -> Table:
    table = Table(title="Memory: estimate vs actual", title_justify="left")
    for column in ("Device", "Part", "Estimate", "Actual", "Difference"):
        table.add_column(column, justify="left" if column in ("Device", "Part") else "right")
    for label, fit, use in pairs(memory.estimate, memory.actual):
        for i, (name, fit_field, use_field) in enumerate(_PARTS):
            guess = getattr(fit, fit_field) if fit else None
            real = getattr(use, use_field) if use else None
            table.add_row(label if i == 0 else "", name, *_compared(guess, real))
        guess_total = fit.weights_bytes + fit.kv_bytes + fit.compute_bytes if fit else None
        table.add_row(
            "", "[bold]buffers[/]", *_compared(guess_total, use.total_bytes if use else None)
        )
    return table


def _compared(guess: int | None, real: int | None) -> tuple[str, str, str]:
    if guess is None or real is None:
        return format_bytes(guess), format_bytes(real), "—"
    diff = guess - real
    share = "" if not real else " (≈0%)" if abs(diff) < real / 200 else f" ({diff / real:+.0%})"
    return format_bytes(guess), format_bytes(real), f"{format_bytes(diff)}{share}"


def memory_lines(memory: InstanceMemory) -> list[str]:
    """The words under the table: layers, footprint, what is missing and why."""
    lines: list[str] = []
    actual, estimate = memory.actual, memory.estimate
    if actual is not None and actual.offloaded_layers is not None:
        asked = f", {actual.requested_layers} asked for" if actual.requested_layers else ""
        lines.append(
            f"Layers on the GPU: {actual.offloaded_layers} of {actual.total_layers}{asked}."
        )
    if actual is not None and actual.cpu_fallback:
        lines.append("Runs on the CPU only: the GPU layers asked for did not reach a GPU.")
    if estimate is not None:
        footprint = sum(d.footprint_bytes for d in estimate.devices)
        lines.append(
            f"Estimate: {estimate.summary} It also counts {format_bytes(footprint)} for the "
            "runtime itself, which the engine does not report."
        )
    lines.extend(actual.notes if actual else [])
    lines.extend(memory.notes)
    return lines
