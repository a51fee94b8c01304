"""AMD GPUs on Linux: the amdgpu driver's sysfs files, or amdsmi when it is installed."""

from __future__ import annotations

import importlib
import logging
import posixpath
import re
from collections.abc import Callable
from typing import Any, TypeVar

from roundhouse.api.hardware import GpuInfo, GpuSample, GpuVendor
from roundhouse.core.hardware.host import HostReader

log = logging.getLogger(__name__)

T = TypeVar("T")
AMD_VENDOR = "0x1002"
MIB = 1024**2

# Marketing names for common PCI device ids, used when the kernel has no product_name
# (that file exists only on boards whose FRU EEPROM the driver can read).
PCI_NAMES = {
    "0x744c": "AMD Radeon RX 7900 XT/XTX",
    "0x7448": "AMD Radeon PRO W7900",
    "0x7480": "AMD Radeon RX 7600/7700S",
    "0x73bf": "AMD Radeon RX 6800/6900 XT",
    "0x73df": "AMD Radeon RX 6700 XT",
    "0x67df": "AMD Radeon RX 470/480/570/580",
    "0x740f": "AMD Instinct MI210",
    "0x740c": "AMD Instinct MI250X/MI250",
    "0x74a1": "AMD Instinct MI300X",
    "0x1681": "AMD Radeon 680M",
    "0x15bf": "AMD Radeon 780M",
}


class AmdSysfsBackend:
    """Cards under /sys/class/drm whose PCI vendor is AMD (0x1002)."""

    source = "sysfs"

    def __init__(self, host: HostReader, sysfs_root: str = "/") -> None:
        self._host = host
        self._root = sysfs_root
        self.first_index = 0
        drm = posixpath.join(sysfs_root, "sys/class/drm")
        cards = [n for n in host.list_dir(drm) or [] if re.fullmatch(r"card\d+", n)]
        cards.sort(key=lambda n: int(n[4:]))
        self._devices = [
            d
            for d in (posixpath.join(drm, c, "device") for c in cards)
            if (host.read_text(posixpath.join(d, "vendor")) or "").strip() == AMD_VENDOR
        ]

    def device_count(self) -> int:
        return len(self._devices)

    def _read(self, device: str, name: str) -> str | None:
        text = self._host.read_text(posixpath.join(device, name))
        return text.strip() if text is not None and text.strip() else None

    def _int(self, device: str, name: str) -> int | None:
        text = self._read(device, name)
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None

    def _hwmon(self, device: str) -> str | None:
        folder = posixpath.join(device, "hwmon")
        names = [n for n in self._host.list_dir(folder) or [] if n.startswith("hwmon")]
        return posixpath.join(folder, names[0]) if names else None

    def _name(self, device: str) -> str:
        product = self._read(device, "product_name")
        if product:
            return product
        pci_id = (self._read(device, "device") or "").lower()
        return PCI_NAMES.get(pci_id, f"AMD GPU (PCI 1002:{pci_id.removeprefix('0x') or '?'})")

    def _bus_id(self, device: str) -> str | None:
        for line in (self._read(device, "uevent") or "").splitlines():
            if line.startswith("PCI_SLOT_NAME="):
                return line.split("=", 1)[1]
        return None

    def _sample(self, i: int, device: str) -> GpuSample:
        hwmon = self._hwmon(device)
        temp = self._int(hwmon, "temp1_input") if hwmon else None
        # Kernels before 6.x name it power1_average, newer ones power1_input on some chips.
        power = None
        if hwmon:
            power = self._int(hwmon, "power1_average") or self._int(hwmon, "power1_input")
        busy = self._int(device, "gpu_busy_percent")
        return GpuSample(
            index=self.first_index + i,
            memory_total_bytes=self._int(device, "mem_info_vram_total"),
            memory_used_bytes=self._int(device, "mem_info_vram_used"),
            utilization_percent=float(busy) if busy is not None else None,
            temperature_c=temp / 1000 if temp is not None else None,  # millidegrees
            power_w=power / 1_000_000 if power is not None else None,  # microwatts
        )

    def inventory(self) -> list[GpuInfo]:
        gpus = []
        for i, device in enumerate(self._devices):
            live = self._sample(i, device)
            total, used = live.memory_total_bytes, live.memory_used_bytes
            hwmon = self._hwmon(device)
            cap = self._int(hwmon, "power1_cap") if hwmon else None
            gpus.append(
                GpuInfo(
                    index=live.index,
                    vendor=GpuVendor.AMD,
                    name=self._name(device),
                    memory_total_bytes=total,
                    memory_used_bytes=used,
                    memory_free_bytes=total - used
                    if total is not None and used is not None
                    else None,
                    utilization_percent=live.utilization_percent,
                    temperature_c=live.temperature_c,
                    power_w=live.power_w,
                    power_limit_w=cap / 1_000_000 if cap is not None else None,
                    driver_version=self._read(
                        posixpath.join(self._root, "sys/module/amdgpu"), "version"
                    ),
                    pci_bus_id=self._bus_id(device),
                    source=self.source,
                )
            )
        return gpus

    def sample(self) -> list[GpuSample]:
        return [self._sample(i, d) for i, d in enumerate(self._devices)]

    def close(self) -> None:
        self._devices = []


class AmdSmiBackend:
    """AMD GPUs through the amdsmi library (ROCm 6+), when it is installed."""

    source = "amdsmi"

    def __init__(self, amdsmi: Any) -> None:
        self._smi = amdsmi
        self.first_index = 0
        amdsmi.amdsmi_init()
        self._handles: list[Any] = list(amdsmi.amdsmi_get_processor_handles())

    @classmethod
    def open(cls, amdsmi_module: Any | None = None) -> AmdSmiBackend | None:
        """The backend, or None when amdsmi is absent or sees no GPU (sysfs then serves)."""
        try:
            smi = amdsmi_module or importlib.import_module("amdsmi")
            backend = cls(smi)
        except Exception as exc:  # noqa: BLE001 - amdsmi raises its own and ctypes errors
            log.debug("amdsmi unavailable: %r", exc)
            return None
        if not backend._handles:
            backend.close()
            return None
        return backend

    def device_count(self) -> int:
        return len(self._handles)

    def _get(self, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - one unsupported metric must not hide the GPU
            log.debug("amdsmi call failed: %r", exc)
            return None

    def _sample(self, i: int, h: Any) -> GpuSample:
        smi = self._smi
        vram = self._get(lambda: smi.amdsmi_get_gpu_vram_usage(h)) or {}
        activity = self._get(lambda: smi.amdsmi_get_gpu_activity(h)) or {}
        power = self._get(lambda: smi.amdsmi_get_power_info(h)) or {}
        total, used = vram.get("vram_total"), vram.get("vram_used")  # MiB
        busy, watts = activity.get("gfx_activity"), power.get("average_socket_power")
        return GpuSample(
            index=self.first_index + i,
            memory_total_bytes=int(total) * MIB if isinstance(total, int) else None,
            memory_used_bytes=int(used) * MIB if isinstance(used, int) else None,
            utilization_percent=float(busy) if isinstance(busy, int | float) else None,
            power_w=float(watts) if isinstance(watts, int | float) else None,
        )

    def inventory(self) -> list[GpuInfo]:
        return [self._info(i, h) for i, h in enumerate(self._handles)]

    def _info(self, i: int, h: Any) -> GpuInfo:
        live = self._sample(i, h)
        asic = self._get(lambda: self._smi.amdsmi_get_gpu_asic_info(h)) or {}
        total, used = live.memory_total_bytes, live.memory_used_bytes
        return GpuInfo(
            index=live.index,
            vendor=GpuVendor.AMD,
            name=str(asic.get("market_name") or "AMD GPU"),
            memory_total_bytes=total,
            memory_used_bytes=used,
            memory_free_bytes=total - used if total is not None and used is not None else None,
            utilization_percent=live.utilization_percent,
            power_w=live.power_w,
            pci_bus_id=self._get(lambda: str(self._smi.amdsmi_get_gpu_device_bdf(h))),
            source=self.source,
        )

    def sample(self) -> list[GpuSample]:
        return [self._sample(i, h) for i, h in enumerate(self._handles)]

    def close(self) -> None:
        self._handles = []
        self._get(self._smi.amdsmi_shut_down)
