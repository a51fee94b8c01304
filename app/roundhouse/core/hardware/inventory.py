"""The hardware inventory: one probe owning the GPU backends, reused by the 1 Hz sampler."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from roundhouse.api.hardware import GpuInfo, GpuSample, GpuVendor, HardwareInventory, Unseen
from roundhouse.core.hardware.amd import AmdSmiBackend, AmdSysfsBackend
from roundhouse.core.hardware.apple import AppleBackend
from roundhouse.core.hardware.backend import GpuBackend
from roundhouse.core.hardware.cpu import read_cpu
from roundhouse.core.hardware.host import HostReader, LocalHost, is_wsl, normalize_arch
from roundhouse.core.hardware.memory import read_disk, read_memory
from roundhouse.core.hardware.nvidia import NvidiaBackend
from roundhouse.core.hardware.recommend import recommend
from roundhouse.core.hardware.windows import WindowsRegistryBackend

log = logging.getLogger(__name__)


class HardwareProbe:
    """Opens the GPU backends that fit this OS once; blocking (call it via asyncio.to_thread).

    Never raises for a missing library or permission: what it cannot see becomes an
    Unseen entry of the inventory.
    """

    def __init__(
        self,
        host: HostReader,
        *,
        models_dir: Path,
        nvml_module: Any | None = None,
        amdsmi_module: Any | None = None,
        sysfs_root: str = "/",
    ) -> None:
        self.host = host
        self.models_dir = models_dir
        self._lock = threading.Lock()
        self._unseen: list[Unseen] = []
        self._backends: list[GpuBackend] = []
        self._open(nvml_module, amdsmi_module, sysfs_root)
        first = 0
        for backend in self._backends:
            backend.first_index = first
            first += backend.device_count()

    @classmethod
    def for_this_machine(cls, *, models_dir: Path) -> HardwareProbe:
        return cls(LocalHost(), models_dir=models_dir)

    def _open(self, nvml_module: Any | None, amdsmi_module: Any | None, sysfs_root: str) -> None:
        system = self.host.system
        if system == "Darwin":
            if normalize_arch(self.host.machine) == "arm64":
                self._backends.append(AppleBackend(self.host))
            else:
                why = "The engines Roundhouse runs use the CPU on Intel Macs."
                self._unseen.append(Unseen(what="GPU acceleration", why=why))
            return
        nvidia, unseen = NvidiaBackend.open(self.host, nvml_module)
        if nvidia is not None:
            self._backends.append(nvidia)
        elif unseen is not None:
            self._unseen.append(unseen)
        if system == "Windows":
            skip = frozenset({GpuVendor.NVIDIA}) if nvidia is not None else frozenset()
            registry = WindowsRegistryBackend(self.host, skip_vendors=skip)
            if registry.device_count():
                self._backends.append(registry)
            return
        amd: GpuBackend | None = AmdSmiBackend.open(amdsmi_module)
        if amd is None:
            sysfs = AmdSysfsBackend(self.host, sysfs_root)
            amd = sysfs if sysfs.device_count() else None
        if amd is not None:
            self._backends.append(amd)

    @property
    def backends(self) -> list[GpuBackend]:
        return list(self._backends)

    def inventory(self) -> HardwareInventory:
        with self._lock:
            gpus: list[GpuInfo] = []
            unseen = list(self._unseen)
            for backend in self._backends:
                try:
                    gpus.extend(backend.inventory())
                except Exception as exc:  # noqa: BLE001 - one broken backend must not hide the rest
                    log.warning("GPU backend %s failed: %r", backend.source, exc)
                    unseen.append(Unseen(what=f"GPUs ({backend.source})", why=str(exc)))
        cpu = read_cpu(self.host)
        memory = read_memory()
        wsl = is_wsl(self.host)
        return HardwareInventory(
            os=self.host.system,
            os_version=self.host.os_version + (" under WSL" if wsl else ""),
            cpu=cpu,
            memory=memory,
            disk=read_disk(self.models_dir),
            gpus=gpus,
            unseen=unseen,
            recommendations=recommend(
                os_name=self.host.system, cpu=cpu, memory=memory, gpus=gpus, wsl=wsl
            ),
        )

    def sample_gpus(self) -> list[GpuSample]:
        """Live counters of every GPU; cheap (the daemon calls it at 1 Hz)."""
        samples: list[GpuSample] = []
        with self._lock:
            for backend in self._backends:
                try:
                    samples.extend(backend.sample())
                except Exception as exc:  # noqa: BLE001 - a sampler tick must never raise
                    log.debug("GPU sample from %s failed: %r", backend.source, exc)
        return samples

    def close(self) -> None:
        with self._lock:
            for backend in self._backends:
                try:
                    backend.close()
                except Exception as exc:  # noqa: BLE001 - closing the rest matters more
                    log.debug("closing %s failed: %r", backend.source, exc)
            self._backends = []

    def __enter__(self) -> HardwareProbe:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def collect_inventory(
    host: HostReader | None = None,
    *,
    models_dir: Path,
    nvml_module: Any | None = None,
    amdsmi_module: Any | None = None,
    sysfs_root: str = "/",
) -> HardwareInventory:
    """A one-off inventory (opens and closes the backends); the daemon keeps a HardwareProbe."""
    with HardwareProbe(
        host or LocalHost(),
        models_dir=models_dir,
        nvml_module=nvml_module,
        amdsmi_module=amdsmi_module,
        sysfs_root=sysfs_root,
    ) as probe:
        return probe.inventory()
