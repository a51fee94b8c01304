"""Apple Silicon's GPU: chip, cores, live use and the Metal working-set cap as its "VRAM"."""

from __future__ import annotations

import json
import re
from typing import Any

from roundhouse.api.hardware import GpuInfo, GpuSample, GpuVendor
from roundhouse.core.hardware.host import HostReader

MIB = 1024**2
GIB = 1024**3

_PERF = re.compile(r'"PerformanceStatistics"\s*=\s*\{([^}]*)\}')
# The exact key: "In use system memory (driver)" beside it reads 0 and must not match.
_IN_USE = re.compile(r'"In use system memory"=(\d+)')
_UTIL = re.compile(r'"Device Utilization %"=(\d+)')
_MODEL = re.compile(r'"model"\s*=\s*"([^"]+)"')
_CORES = re.compile(r'"gpu-core-count"\s*=\s*(\d+)')


def default_working_set(memsize: int) -> int:
    """What Metal lets the GPU wire when iogpu.wired_limit_mb is 0 (the default).

    Apple does not document the policy. The rule used here (about 2/3 of RAM up to
    36 GiB, 3/4 above) follows the working sets Metal reports in public measurements of
    MTLDevice.recommendedMaxWorkingSetSize: 11.84 GB on a 16 GB M3 (AlexsJones/llmfit#754),
    17.76 GiB on a 24 GB Mac (sgl-project/sglang#29949), loads failing from about 47 GB
    on 64 GB M1/M2 Max (ggml-org/llama.cpp#1870), 107.52 GiB on 128 GiB (antirez/ds4#893).
    It errs low on the largest Macs, which is the safe side for "will it fit".
    """
    return memsize * 2 // 3 if memsize <= 36 * GIB else memsize * 3 // 4


def parse_ioreg(text: str) -> dict[str, Any]:
    """Utilization, in-use memory, model and core count from `ioreg -c IOAccelerator`."""
    found: dict[str, Any] = {}
    perf = _PERF.search(text)
    if perf:
        if m := _UTIL.search(perf.group(1)):
            found["utilization_percent"] = float(m.group(1))
        if m := _IN_USE.search(perf.group(1)):
            found["in_use_bytes"] = int(m.group(1))
    if m := _MODEL.search(text):
        found["model"] = m.group(1)
    if m := _CORES.search(text):
        found["gpu_cores"] = int(m.group(1))
    return found


def parse_displays(text: str | None) -> dict[str, Any]:
    """Name and GPU core count of the Apple GPU in `system_profiler SPDisplaysDataType -json`."""
    try:
        rows = json.loads(text or "{}").get("SPDisplaysDataType") or []
    except (json.JSONDecodeError, AttributeError):
        return {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        vendor = str(row.get("spdisplays_vendor", ""))
        model = str(row.get("sppci_model") or row.get("_name") or "")
        if "Apple" in vendor or model.startswith("Apple"):
            cores = re.match(r"\d+", str(row.get("sppci_cores", "")))
            return {"model": model, "gpu_cores": int(cores.group()) if cores else None}
    return {}


class AppleBackend:
    """The single integrated GPU of an Apple Silicon Mac; its memory is unified."""

    source = "ioreg"

    def __init__(self, host: HostReader) -> None:
        self._host = host
        self.first_index = 0
        self._cap: int | None = None
        self._memsize = self._sysctl_int("hw.memsize")

    def _sysctl_int(self, name: str) -> int | None:
        out = self._host.run(["sysctl", "-n", name])
        try:
            return int(out.strip()) if out else None
        except ValueError:
            return None

    def device_count(self) -> int:
        return 1

    def working_set_cap(self) -> int | None:
        """Bytes the GPU may wire: iogpu.wired_limit_mb when set, else Metal's default."""
        limit_mb = self._sysctl_int("iogpu.wired_limit_mb")
        if limit_mb:
            return limit_mb * MIB
        return default_working_set(self._memsize) if self._memsize else None

    def _ioreg(self) -> dict[str, Any]:
        argv = ["ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator"]
        return parse_ioreg(self._host.run(argv) or "")

    def _sample(self, stats: dict[str, Any]) -> GpuSample:
        return GpuSample(
            index=self.first_index,
            memory_used_bytes=stats.get("in_use_bytes"),
            memory_total_bytes=self._cap,
            utilization_percent=stats.get("utilization_percent"),
        )

    def inventory(self) -> list[GpuInfo]:
        self._cap = self.working_set_cap()
        stats = self._ioreg()
        argv = ["system_profiler", "SPDisplaysDataType", "-json"]
        # system_profiler takes a second or two; it runs for the inventory, never per sample.
        displays = parse_displays(self._host.run(argv, timeout=20.0))
        brand = self._host.run(["sysctl", "-n", "machdep.cpu.brand_string"])
        name = displays.get("model") or stats.get("model") or (brand or "").strip()
        in_use = stats.get("in_use_bytes")
        cap = self._cap
        return [
            GpuInfo(
                index=self.first_index,
                vendor=GpuVendor.APPLE,
                name=name or "Apple GPU",
                memory_total_bytes=cap,
                memory_used_bytes=in_use,
                memory_free_bytes=max(cap - in_use, 0) if cap and in_use is not None else cap,
                unified=True,
                utilization_percent=stats.get("utilization_percent"),
                gpu_cores=displays.get("gpu_cores") or stats.get("gpu_cores"),
                source=self.source,
            )
        ]

    def sample(self) -> list[GpuSample]:
        if self._cap is None:
            self._cap = self.working_set_cap()
        return [self._sample(self._ioreg())]

    def close(self) -> None:
        return None
