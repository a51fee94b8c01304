"""Windows GPUs without a vendor library: names and memory from the display-adapter class key."""

from __future__ import annotations

import re

from roundhouse.api.hardware import GpuInfo, GpuSample, GpuVendor
from roundhouse.core.hardware.host import HostReader, RegistryValue

# The documented setup class of display adapters; each adapter's driver key is a numbered
# subkey (0000, 0001...). Its HardwareInformation.qwMemorySize is a 64-bit byte count the
# driver writes. WMI's Win32_VideoController.AdapterRAM is not used: it is a uint32, so
# every card of 4 GiB or more reads 4293918720 there (oshi/oshi#2521: an RTX 4090).
DISPLAY_CLASS = (
    r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
)

_VENDORS = {
    "10de": GpuVendor.NVIDIA,
    "1002": GpuVendor.AMD,
    "8086": GpuVendor.INTEL,
    "106b": GpuVendor.APPLE,
}
# Adapters that are not GPUs a model could run on.
_SKIP = ("microsoft basic display", "microsoft remote display", "microsoft hyper-v video")


def _as_int(value: RegistryValue | None) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, bytes) and value:
        # Some older drivers store the size as REG_BINARY, little-endian.
        return int.from_bytes(value, "little")
    return None


def _vendor(values: dict[str, RegistryValue], name: str) -> GpuVendor:
    device_id = str(values.get("MatchingDeviceId", "")).lower()
    if m := re.search(r"ven_([0-9a-f]{4})", device_id):
        return _VENDORS.get(m.group(1), GpuVendor.OTHER)
    lowered = name.lower()
    for word, vendor in (("nvidia", GpuVendor.NVIDIA), ("amd", GpuVendor.AMD)):
        if word in lowered:
            return vendor
    if "radeon" in lowered:
        return GpuVendor.AMD
    return GpuVendor.INTEL if "intel" in lowered else GpuVendor.OTHER


class WindowsRegistryBackend:
    """Display adapters from the registry: total memory only, no live counters."""

    source = "registry"

    def __init__(self, host: HostReader, *, skip_vendors: frozenset[GpuVendor] = frozenset()):
        self.first_index = 0
        self._gpus: list[tuple[str, int | None, GpuVendor, str | None]] = []
        for sub in host.registry_subkeys(DISPLAY_CLASS) or []:
            if not re.fullmatch(r"\d{4}", sub):
                continue  # "Properties" and "Configuration" are not adapters
            values = host.registry_values(f"{DISPLAY_CLASS}\\{sub}") or {}
            name = str(values.get("DriverDesc") or "").strip()
            if not name or name.lower().startswith(_SKIP):
                continue
            vendor = _vendor(values, name)
            if vendor in skip_vendors:
                continue  # NVML already reports these, with live counters
            memory = _as_int(values.get("HardwareInformation.qwMemorySize"))
            if memory is None:
                memory = _as_int(values.get("HardwareInformation.MemorySize"))
            driver = values.get("DriverVersion")
            self._gpus.append((name, memory, vendor, driver if isinstance(driver, str) else None))

    def device_count(self) -> int:
        return len(self._gpus)

    def inventory(self) -> list[GpuInfo]:
        return [
            GpuInfo(
                index=self.first_index + i,
                vendor=vendor,
                name=name,
                memory_total_bytes=memory,
                driver_version=driver,
                source=self.source,
            )
            for i, (name, memory, vendor, driver) in enumerate(self._gpus)
        ]

    def sample(self) -> list[GpuSample]:
        return [
            GpuSample(index=self.first_index + i, memory_total_bytes=memory)
            for i, (_name, memory, _vendor, _driver) in enumerate(self._gpus)
        ]

    def close(self) -> None:
        self._gpus = []
