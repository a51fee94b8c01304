"""Schemas of the hardware inventory, the engine recommendation and live samples."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GpuVendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"
    APPLE = "apple"
    INTEL = "intel"
    OTHER = "other"


class Unseen(_Frozen):
    """Something the inventory could not see, and why (a missing library is not an error)."""

    what: str
    why: str


class CpuInfo(_Frozen):
    brand: str
    arch: str = Field(description="x86_64, arm64, ...")
    physical_cores: int | None
    logical_cores: int
    # Instruction set features that decide which engine build runs here:
    # avx, avx2, avx512f, f16c, fma on x86; neon, dotprod on ARM.
    features: list[str]
    # Features we could not determine on this platform (not the same as absent).
    features_unknown: list[str] = []


class MemoryInfo(_Frozen):
    total_bytes: int
    available_bytes: int


class DiskInfo(_Frozen):
    path: str = Field(description="the folder where models are stored")
    total_bytes: int
    free_bytes: int


class GpuProcess(_Frozen):
    pid: int
    name: str | None = None
    used_bytes: int | None = None


class GpuInfo(_Frozen):
    index: int
    vendor: GpuVendor
    name: str
    uuid: str | None = None
    # For Apple Silicon, memory_total_bytes is the Metal working-set cap (what the GPU may
    # wire), and unified is True; total RAM is in the inventory's memory.
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    unified: bool = False
    utilization_percent: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    compute_capability: str | None = None
    gpu_cores: int | None = None
    pci_bus_id: str | None = None
    processes: list[GpuProcess] = []
    source: str = Field(description="how this GPU was seen: nvml, sysfs, amdsmi, ...")


class EngineRecommendation(_Frozen):
    engine: str = Field(description="catalog id: llama.cpp, ollama, mlx, vllm, sglang")
    title: str
    rank: int
    reason: str


class HardwareInventory(_Frozen):
    os: str
    os_version: str
    cpu: CpuInfo
    memory: MemoryInfo
    disk: DiskInfo | None
    gpus: list[GpuInfo]
    unseen: list[Unseen]
    recommendations: list[EngineRecommendation]


class GpuSample(_Frozen):
    index: int
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    utilization_percent: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None


class HardwareSample(_Frozen):
    """One reading of the live counters, taken by the daemon's 1 Hz sampler."""

    t: float = Field(description="seconds since the Unix epoch")
    cpu_percent: float
    ram_used_bytes: int
    ram_total_bytes: int
    gpus: list[GpuSample] = []


class SampleHistory(_Frozen):
    interval_s: float
    capacity: int
    samples: list[HardwareSample]
