"""The shape every GPU backend shares (NVML, amdsmi, sysfs, Apple, Windows registry)."""

from __future__ import annotations

from typing import Protocol

from roundhouse.api.hardware import GpuInfo, GpuSample


class GpuBackend(Protocol):
    """One way of seeing GPUs, opened once and kept by the probe so handles are reused.

    Indexes are global across backends: the probe sets first_index before the first call.
    """

    source: str
    first_index: int

    def device_count(self) -> int: ...

    def inventory(self) -> list[GpuInfo]:
        """Everything known about each GPU (may take a few hundred ms)."""
        ...

    def sample(self) -> list[GpuSample]:
        """The live counters only: cheap enough for the daemon's 1 Hz sampler."""
        ...

    def close(self) -> None: ...


GIB = 1024**3
MIB = 1024**2


def gib(n_bytes: int | float) -> str:
    """Bytes as "79 GiB", or "10.7 GiB" below 20 GiB where the decimal still matters."""
    value = n_bytes / GIB
    text = f"{value:.0f}" if value >= 20 else f"{value:.1f}".removesuffix(".0")
    return f"{text} GiB"
