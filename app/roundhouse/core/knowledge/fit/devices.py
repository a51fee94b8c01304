"""The memory a fit may use: the chosen GPUs' free memory and the RAM, with footprints.

Free, not total: NVML's free VRAM (what other programs hold is gone), Apple's Metal
working-set cap minus what the GPU holds now, the RAM the OS calls available. A GPU
whose free memory is unknown (Windows without NVML) is taken at its total, and says so.

Footprints (gguf-parser's figures): a GPU runtime takes about 250 MiB of VRAM outside
the engine's buffers (CUDA context, cuBLAS), a process about 150 MiB of RAM. Apple's
unified memory has one pool: what the GPU holds is in the RAM too, counted once.
"""

from __future__ import annotations

from dataclasses import dataclass

from roundhouse.api.fit import FitOptions
from roundhouse.api.hardware import GpuInfo, GpuVendor, HardwareInventory
from roundhouse.base.units import format_bytes

MIB = 1024**2
GPU_FOOTPRINT = 250 * MIB
RAM_FOOTPRINT = 150 * MIB
# GPUs llama.cpp, vLLM and MLX builds use; an Intel or unknown GPU (often integrated,
# sharing RAM) is used only when named in FitOptions.devices.
DEFAULT_VENDORS = (GpuVendor.NVIDIA, GpuVendor.AMD, GpuVendor.APPLE)


@dataclass(frozen=True)
class Gpu:
    index: int
    label: str
    vendor: GpuVendor
    free: int
    total: int | None
    unified: bool
    note: str


@dataclass(frozen=True)
class Budget:
    """Devices to place a model on; `gpus` in the order llama.cpp numbers them."""

    gpus: tuple[Gpu, ...]
    ram_free: int
    ram_total: int
    unified: bool  # Apple: GPU and CPU share the RAM
    margin: int
    notes: tuple[str, ...]

    def gpu_footprint(self) -> int:
        return 0 if self.unified else GPU_FOOTPRINT


def _gpu(info: GpuInfo) -> Gpu | None:
    total, used, free = info.memory_total_bytes, info.memory_used_bytes, info.memory_free_bytes
    note = ""
    if free is None and total is not None:
        free = max(total - used, 0) if used is not None else total
        if used is None:
            note = "free memory unknown: its total is used"
    if free is None:
        return None
    if info.unified and total:
        note = f"Metal working-set cap {format_bytes(total)}"
    label = f"GPU {info.index} ({info.name})"
    return Gpu(info.index, label, info.vendor, free, total, info.unified, note)


def _one_vendor(chosen: list[GpuInfo], notes: list[str]) -> list[GpuInfo]:
    """One engine build drives one vendor's GPUs: keep the vendor with most free memory."""
    vendors = {g.vendor for g in chosen}
    if len(vendors) < 2:
        return chosen

    def free_of(vendor: GpuVendor) -> int:
        return sum(g.memory_free_bytes or 0 for g in chosen if g.vendor == vendor)

    best = max(vendors, key=free_of)
    notes.append(f"only the {best.value} GPUs are used (one engine build per vendor)")
    return [g for g in chosen if g.vendor == best]


def build_budget(hardware: HardwareInventory, options: FitOptions) -> Budget:
    notes: list[str] = []
    seen = {g.index: g for g in hardware.gpus}
    if options.devices is not None:
        missing = [i for i in options.devices if i not in seen]
        if missing:
            notes.append(f"no GPU with index {', '.join(map(str, missing))}: left out")
        chosen = [seen[i] for i in options.devices if i in seen]
    else:
        chosen = _one_vendor([g for g in hardware.gpus if g.vendor in DEFAULT_VENDORS], notes)
        for g in hardware.gpus:
            if g.vendor not in DEFAULT_VENDORS:
                notes.append(f"GPU {g.index} ({g.name}) not used: name it in devices to use it")
    gpus = []
    for info in chosen:
        gpu = _gpu(info)
        if gpu is None:
            notes.append(f"GPU {info.index} ({info.name}) not used: its memory is unknown")
            continue
        if gpu.note and not gpu.unified:
            notes.append(f"{gpu.label}: {gpu.note}")
        gpus.append(gpu)
    unified = any(g.unified for g in gpus)
    return Budget(
        gpus=tuple(gpus),
        ram_free=hardware.memory.available_bytes,
        ram_total=hardware.memory.total_bytes,
        unified=unified,
        margin=options.margin_bytes,
        notes=tuple(notes),
    )
