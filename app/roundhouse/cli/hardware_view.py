"""Render the hardware inventory as rich tables for `roundhouse hw`."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from roundhouse.api.hardware import HardwareInventory
from roundhouse.base.units import format_bytes


def _opt(value: object, suffix: str = "") -> str:
    return "—" if value is None else f"{value}{suffix}"


def inventory_view(inv: HardwareInventory) -> Group:
    machine = Table(title="Machine", show_header=False, title_justify="left")
    machine.add_column(style="bold")
    machine.add_column()
    cpu = inv.cpu
    machine.add_row("OS", f"{inv.os} {inv.os_version}")
    machine.add_row("CPU", f"{cpu.brand} ({cpu.arch})")
    machine.add_row("Cores", f"{_opt(cpu.physical_cores)} physical, {cpu.logical_cores} logical")
    features = ", ".join(cpu.features) or "none detected"
    if cpu.features_unknown:
        features += f" (unknown: {', '.join(cpu.features_unknown)})"
    machine.add_row("CPU features", features)
    machine.add_row(
        "RAM",
        f"{format_bytes(inv.memory.available_bytes)} available of "
        f"{format_bytes(inv.memory.total_bytes)}",
    )
    if inv.disk is not None:
        machine.add_row(
            "Model storage",
            f"{format_bytes(inv.disk.free_bytes)} free of {format_bytes(inv.disk.total_bytes)} "
            f"at {inv.disk.path}",
        )

    gpus = Table(title="GPUs", title_justify="left")
    for column in ("#", "GPU", "Memory free / total", "Util", "Temp", "Power", "Driver", "Via"):
        gpus.add_column(column)
    for gpu in inv.gpus:
        memory = f"{format_bytes(gpu.memory_free_bytes)} / {format_bytes(gpu.memory_total_bytes)}"
        if gpu.unified:
            memory += " (unified, GPU cap)"
        driver = gpu.driver_version or "—"
        if gpu.cuda_version:
            driver += f", CUDA {gpu.cuda_version}"
        gpus.add_row(
            str(gpu.index),
            gpu.name,
            memory,
            _opt(gpu.utilization_percent, "%"),
            _opt(gpu.temperature_c, " °C"),
            _opt(gpu.power_w, " W"),
            driver,
            gpu.source,
        )
    if not inv.gpus:
        gpus.add_row("—", "no GPU found", "", "", "", "", "", "")

    parts: list[Table] = [machine, gpus]
    if inv.unseen:
        unseen = Table(title="Not seen", title_justify="left")
        unseen.add_column("What")
        unseen.add_column("Why")
        for item in inv.unseen:
            unseen.add_row(item.what, item.why)
        parts.append(unseen)

    engines = Table(title="Recommended engines", title_justify="left")
    engines.add_column("#")
    engines.add_column("Engine", style="bold")
    engines.add_column("Why")
    for rec in inv.recommendations:
        engines.add_row(str(rec.rank), rec.title, rec.reason)
    parts.append(engines)
    return Group(*parts)
