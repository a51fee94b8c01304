"""The hardware inventory in words: CPU, memory, disk, GPUs, engines and what was not seen."""

from __future__ import annotations

from html import escape

from PySide6.QtWidgets import QVBoxLayout, QWidget

from roundhouse.api.hardware import HardwareInventory, HardwareSample
from roundhouse.base.units import format_bytes
from roundhouse.gui.widgets.form_section import FormSection
from roundhouse.gui.widgets.gpu_card import GpuCard


class InventoryView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.system = FormSection("This machine")
        self.memory = FormSection("Memory and disk")
        self.gpu_box = FormSection("Graphics")
        self.engines = FormSection("Recommended engines")
        self.unseen = FormSection("Not seen")
        self.gpu_cards: dict[int, GpuCard] = {}
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        for box in (self.system, self.memory, self.gpu_box, self.engines, self.unseen):
            self._layout.addWidget(box)
        self._layout.addStretch(1)
        self.system.set_value("Processor", "Waiting for the daemon…")

    def show_inventory(self, inventory: HardwareInventory) -> None:
        cpu = inventory.cpu
        self.system.set_value("System", f"{inventory.os} {inventory.os_version}".strip())
        self.system.set_value("Processor", f"{cpu.brand} ({cpu.arch})")
        cores = f"{cpu.logical_cores} logical"
        if cpu.physical_cores:
            cores = f"{cpu.physical_cores} physical, {cores}"
        self.system.set_value("Cores", cores)
        features = ", ".join(cpu.features) or "none detected"
        if cpu.features_unknown:
            features += f" (could not check: {', '.join(cpu.features_unknown)})"
        self.system.set_value("Features", features)
        self.memory.set_value("RAM", f"{format_bytes(inventory.memory.total_bytes)} total")
        self.memory.set_value(
            "Available", f"{format_bytes(inventory.memory.available_bytes)} when last checked"
        )
        disk = inventory.disk
        self.memory.set_value("Models folder", disk.path if disk else "unknown")
        self.memory.set_value(
            "Disk",
            f"{format_bytes(disk.free_bytes)} free of {format_bytes(disk.total_bytes)}"
            if disk
            else None,
        )
        self._show_gpus(inventory)
        ranked = sorted(inventory.recommendations, key=lambda r: r.rank)
        self.engines.set_text(
            _lines(
                [f"<b>{r.rank}. {escape(r.title)}</b> — {escape(r.reason)}" for r in ranked],
                "No engine recommendation yet.",
            )
        )
        self.unseen.set_text(
            _lines(
                [f"<b>{escape(u.what)}</b>: {escape(u.why)}" for u in inventory.unseen],
                "Nothing: every source of information could be read.",
            )
        )

    def show_sample(self, sample: HardwareSample) -> None:
        """Live values between inventory refreshes."""
        self.system.set_value("CPU load", f"{sample.cpu_percent:.0f} %", live="100 %")
        used_share = 100 * sample.ram_used_bytes / max(sample.ram_total_bytes, 1)
        self.memory.set_value(
            "RAM in use",
            f"{format_bytes(sample.ram_used_bytes)} of {format_bytes(sample.ram_total_bytes)} "
            f"({used_share:.0f} %)",
            live="8888.8 MiB of 8888.8 MiB (100 %)",
        )
        for gpu_sample in sample.gpus:
            card = self.gpu_cards.get(gpu_sample.index)
            if card is not None:
                card.show_sample(gpu_sample)

    def _show_gpus(self, inventory: HardwareInventory) -> None:
        for card in self.gpu_cards.values():
            self._layout.removeWidget(card)
            card.deleteLater()
        self.gpu_cards.clear()
        if inventory.gpus:
            self.gpu_box.hide()
        else:
            self.gpu_box.show()
            self.gpu_box.set_value("GPU", "None seen: engines will run on the CPU.")
        position = self._layout.indexOf(self.gpu_box) + 1
        for offset, gpu in enumerate(inventory.gpus):
            card = GpuCard(gpu)
            self.gpu_cards[gpu.index] = card
            self._layout.insertWidget(position + offset, card)


def _lines(lines: list[str], empty: str) -> str:
    # Spaced paragraphs: a reason can run to two lines and must not run into the next one.
    return "".join(f"<p style='margin-bottom:6px'>{line}</p>" for line in lines) or empty
