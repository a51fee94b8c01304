"""NVIDIA GPUs through NVML, with an injectable pynvml-like module."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psutil

from roundhouse.api.hardware import GpuInfo, GpuProcess, GpuSample, GpuVendor, Unseen
from roundhouse.core.hardware.host import HostReader, is_wsl

log = logging.getLogger(__name__)

T = TypeVar("T")
WHAT = "NVIDIA GPUs"


def _text(value: Any) -> str:
    # Older nvidia-ml-py releases return bytes for names, UUIDs and versions.
    return value.decode() if isinstance(value, bytes) else str(value)


def cuda_version(code: int) -> str:
    """NVML's CUDA driver version integer as text: 12040 -> "12.4"."""
    return f"{code // 1000}.{code % 1000 // 10}"


def _process_name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        # Another user's process, or one that just ended: the pid is still worth showing.
        return None


def _is(nvml: Any, exc: BaseException, name: str) -> bool:
    cls = getattr(nvml, f"NVMLError_{name}", None)
    return isinstance(cls, type) and isinstance(exc, cls)


def _why_not(nvml: Any, exc: BaseException, host: HostReader) -> str:
    if _is(nvml, exc, "LibraryNotFound"):
        if is_wsl(host):
            return (
                "No NVIDIA driver library was found in /usr/lib/wsl/lib: install or update "
                "the NVIDIA driver on Windows to use the GPU from WSL."
            )
        return "No NVIDIA driver is installed (libnvidia-ml was not found)."
    if _is(nvml, exc, "DriverNotLoaded"):
        return "The NVIDIA driver is installed but not running; a reboot often fixes this."
    if _is(nvml, exc, "NoPermission"):
        return "This user may not query the NVIDIA driver (permission denied)."
    return f"The NVIDIA driver did not answer: {exc}."


class NvidiaBackend:
    """The GPUs NVML sees; each field NVML will not give stays None, never the whole GPU."""

    source = "nvml"

    def __init__(
        self, nvml: Any, *, process_name: Callable[[int], str | None] = _process_name
    ) -> None:
        self._nvml = nvml
        self._process_name = process_name
        self.first_index = 0
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(self._count())]

    @classmethod
    def open(
        cls, host: HostReader, nvml_module: Any | None = None
    ) -> tuple[NvidiaBackend | None, Unseen | None]:
        """The backend, or why NVIDIA GPUs cannot be seen (no driver is not an error)."""
        nvml = nvml_module
        if nvml is None:
            try:
                nvml = importlib.import_module("pynvml")
            except ImportError:
                why = "The nvidia-ml-py package is missing from this installation."
                return None, Unseen(what=WHAT, why=why)
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            return None, Unseen(what=WHAT, why=_why_not(nvml, exc, host))
        try:
            backend = cls(nvml)
        except nvml.NVMLError as exc:
            _shutdown(nvml)
            return None, Unseen(what=WHAT, why=_why_not(nvml, exc, host))
        if not backend._handles:
            backend.close()
            why = "The NVIDIA driver is running but reports no GPUs."
            return None, Unseen(what=WHAT, why=why)
        return backend, None

    def _count(self) -> int:
        return int(self._nvml.nvmlDeviceGetCount())

    def device_count(self) -> int:
        return len(self._handles)

    def _get(self, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except self._nvml.NVMLError as exc:
            # NotSupported (GeForce power limits, WSL processes), NoPermission, GpuIsLost...
            log.debug("NVML call failed: %r", exc)
            return None

    def inventory(self) -> list[GpuInfo]:
        nv = self._nvml
        driver = self._get(lambda: _text(nv.nvmlSystemGetDriverVersion()))
        cuda = self._get(lambda: cuda_version(int(nv.nvmlSystemGetCudaDriverVersion_v2())))
        return [self._info(i, h, driver, cuda) for i, h in enumerate(self._handles)]

    def _info(self, i: int, h: Any, driver: str | None, cuda: str | None) -> GpuInfo:
        nv = self._nvml
        mem = self._get(lambda: nv.nvmlDeviceGetMemoryInfo(h))
        cc = self._get(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
        limit = self._get(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        live = self._live(i, h, mem)
        return GpuInfo(
            index=live.index,
            vendor=GpuVendor.NVIDIA,
            name=self._get(lambda: _text(nv.nvmlDeviceGetName(h))) or "NVIDIA GPU",
            uuid=self._get(lambda: _text(nv.nvmlDeviceGetUUID(h))),
            memory_total_bytes=live.memory_total_bytes,
            memory_used_bytes=live.memory_used_bytes,
            memory_free_bytes=int(mem.free) if mem is not None else None,
            utilization_percent=live.utilization_percent,
            temperature_c=live.temperature_c,
            power_w=live.power_w,
            power_limit_w=limit / 1000 if limit is not None else None,  # mW
            driver_version=driver,
            cuda_version=cuda,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
            pci_bus_id=self._get(lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId)),
            processes=self._processes(h),
            source=self.source,
        )

    def _live(self, i: int, h: Any, mem: Any | None) -> GpuSample:
        nv = self._nvml
        util = self._get(lambda: nv.nvmlDeviceGetUtilizationRates(h))
        temp = self._get(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        power_mw = self._get(lambda: nv.nvmlDeviceGetPowerUsage(h))
        return GpuSample(
            index=self.first_index + i,
            memory_used_bytes=int(mem.used) if mem is not None else None,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            utilization_percent=float(util.gpu) if util is not None else None,
            temperature_c=float(temp) if temp is not None else None,
            power_w=power_mw / 1000 if power_mw is not None else None,
        )

    def _processes(self, h: Any) -> list[GpuProcess]:
        procs = self._get(lambda: self._nvml.nvmlDeviceGetComputeRunningProcesses(h)) or []
        found = []
        for p in procs:
            # usedGpuMemory is None where the driver cannot attribute memory (WDDM, MIG).
            used = getattr(p, "usedGpuMemory", None)
            found.append(
                GpuProcess(
                    pid=int(p.pid),
                    name=self._process_name(int(p.pid)),
                    used_bytes=int(used) if used is not None else None,
                )
            )
        return found

    def sample(self) -> list[GpuSample]:
        return [self._live(i, h, self._memory(h)) for i, h in enumerate(self._handles)]

    def _memory(self, h: Any) -> Any | None:
        return self._get(lambda: self._nvml.nvmlDeviceGetMemoryInfo(h))

    def close(self) -> None:
        self._handles = []
        _shutdown(self._nvml)


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except nvml.NVMLError as exc:
        log.debug("nvmlShutdown failed: %r", exc)
