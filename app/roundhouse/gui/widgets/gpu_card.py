"""The details of one GPU, with its live counters updated from the daemon's samples."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from roundhouse.api.hardware import GpuInfo, GpuSample, GpuVendor
from roundhouse.base.units import format_bytes
from roundhouse.gui.widgets.form_section import FormSection

VENDOR_NAMES = {
    GpuVendor.NVIDIA: "NVIDIA",
    GpuVendor.AMD: "AMD",
    GpuVendor.APPLE: "Apple",
    GpuVendor.INTEL: "Intel",
    GpuVendor.OTHER: "Other",
}
UNIFIED_NOTE = (
    "Unified memory: the GPU shares the system RAM. The size shown is how much the GPU "
    "may use (the Metal working-set limit), not extra memory."
)


class GpuCard(FormSection):
    def __init__(self, gpu: GpuInfo, parent: QWidget | None = None) -> None:
        super().__init__(f"GPU {gpu.index}: {gpu.name}", parent)
        self.gpu = gpu
        self.set_value("Vendor", VENDOR_NAMES.get(gpu.vendor, gpu.vendor.value))
        self._show_counters(
            used=gpu.memory_used_bytes,
            total=gpu.memory_total_bytes,
            free=gpu.memory_free_bytes,
            util=gpu.utilization_percent,
            temp=gpu.temperature_c,
            power=gpu.power_w,
        )
        driver = gpu.driver_version
        if driver and gpu.cuda_version:
            driver = f"{driver} (CUDA {gpu.cuda_version})"
        self.set_value("Driver", driver)
        self.set_value("Compute capability", gpu.compute_capability)
        self.set_value("GPU cores", str(gpu.gpu_cores) if gpu.gpu_cores else None)
        self.set_value("PCI bus", gpu.pci_bus_id)
        self.set_value("Seen through", gpu.source)
        self.set_value("Note", UNIFIED_NOTE if gpu.unified else None)

    def show_sample(self, sample: GpuSample) -> None:
        total = sample.memory_total_bytes or self.gpu.memory_total_bytes
        used = sample.memory_used_bytes
        free = total - used if total is not None and used is not None else None
        self._show_counters(
            used=used,
            total=total,
            free=free,
            util=sample.utilization_percent,
            temp=sample.temperature_c,
            power=sample.power_w,
        )

    def _show_counters(
        self,
        *,
        used: int | None,
        total: int | None,
        free: int | None,
        util: float | None,
        temp: float | None,
        power: float | None,
    ) -> None:
        # Live rows keep a fixed size (see FormSection.set_value): the widest text expected.
        self.set_value(
            "Memory",
            _memory_text(used, free, total),
            live="888.8 GiB (888.8 GiB free, 888.8 GiB used)",
        )
        utilization = f"{util:.0f} %" if util is not None else None
        self.set_value("Utilization", utilization, live="100 %")
        self.set_value("Temperature", f"{temp:.0f} °C" if temp is not None else None, live="888 °C")
        limit = self.gpu.power_limit_w
        if power is None:
            power_text = None
        elif limit:
            power_text = f"{power:.0f} W of {limit:.0f} W"
        else:
            power_text = f"{power:.0f} W"
        self.set_value("Power", power_text, live="8888 W of 8888 W")


def _memory_text(used: int | None, free: int | None, total: int | None) -> str | None:
    if total is None:
        return None
    parts = []
    if free is not None:
        parts.append(f"{format_bytes(free)} free")
    if used is not None:
        parts.append(f"{format_bytes(used)} used")
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"{format_bytes(total)}{detail}"
