"""Two figures no other tool shows: memory-bandwidth use, and a silent fallback to the CPU."""

from __future__ import annotations

from dataclasses import dataclass

from roundhouse.api.fit import DeviceKind
from roundhouse.api.hardware import GpuInfo, GpuVendor, HardwareInventory
from roundhouse.api.instances import InstanceInfo, InstanceStatus

# Below this share of the device's peak bandwidth, generation is flagged as slow.
LOW_BANDWIDTH_USE = 0.40

# Peak memory bandwidth in GB/s from the vendors' data sheets; matched by the longest name
# that occurs in the device's name, so "H100 PCIe" wins over "H100".
PEAK_GBPS: dict[str, float] = {
    "H200": 4800,
    "H100 PCIe": 2000,
    "H100 NVL": 3900,
    "H100": 3350,
    "GH200": 4000,
    "B200": 8000,
    "A100-SXM4-80GB": 2039,
    "A100 80GB PCIe": 1935,
    "A100": 1555,
    "L40S": 864,
    "L40": 864,
    "L4": 300,
    "A10G": 600,
    "A10": 600,
    "T4": 320,
    "V100": 900,
    "RTX 5090": 1792,
    "RTX 5080": 960,
    "RTX 4090": 1008,
    "RTX 4080": 717,
    "RTX 4070 Ti": 504,
    "RTX 4070": 504,
    "RTX 4060 Ti": 288,
    "RTX 4060": 272,
    "RTX 3090 Ti": 1008,
    "RTX 3090": 936,
    "RTX 3080": 760,
    "RTX 3070": 448,
    "RTX 3060": 360,
    "RTX A6000": 768,
    "RTX 6000 Ada": 960,
    "MI300X": 5300,
    "MI250X": 3277,
    "RX 7900 XTX": 960,
    "RX 7900 XT": 800,
    "M1 Ultra": 800,
    "M1 Max": 400,
    "M1 Pro": 200,
    "M1": 68,
    "M2 Ultra": 800,
    "M2 Max": 400,
    "M2 Pro": 200,
    "M2": 100,
    "M3 Ultra": 819,
    "M3 Max": 400,
    "M3 Pro": 150,
    "M3": 100,
    "M4 Max": 546,
    "M4 Pro": 273,
    "M4": 120,
}
_BY_LENGTH = sorted(PEAK_GBPS, key=len, reverse=True)
_GPU_VENDORS = frozenset({GpuVendor.NVIDIA, GpuVendor.AMD, GpuVendor.APPLE, GpuVendor.INTEL})
_GPU_ENGINES = frozenset({"llama.cpp", "vllm", "sglang", "mlx", "ollama"})


def peak_bandwidth(name: str) -> float | None:
    """Bytes per second a device named `name` can read at best; None when unknown."""
    for key in _BY_LENGTH:
        if key in name:
            return PEAK_GBPS[key] * 1e9
    return None


@dataclass(frozen=True)
class Bandwidth:
    use: float | None
    note: str | None


def bandwidth_use(
    info: InstanceInfo, output_tps: float, inventory: HardwareInventory | None
) -> Bandwidth:
    """tokens/s x bytes of weights read per token / the GPU's peak: a dense model reads all
    its weights once per token, so a low share means something other than memory holds
    generation back (a CPU fallback, small batches, a slow sampler)."""
    actual = info.memory.actual if info.memory else None
    if actual is None or not actual.weights_bytes:
        return Bandwidth(None, "weights unknown (the engine reported no buffers)")
    gpu = _main_gpu(inventory)
    if gpu is None:
        return Bandwidth(None, "no GPU with a known bandwidth")
    peak = peak_bandwidth(gpu.name)
    if peak is None:
        return Bandwidth(None, f"peak bandwidth of {gpu.name} unknown")
    if output_tps <= 0:
        return Bandwidth(None, None)
    use = output_tps * actual.weights_bytes / peak
    note = f"{use:.0%} of {gpu.name}'s peak" + (" (low)" if use < LOW_BANDWIDTH_USE else "")
    return Bandwidth(use, note)


def _main_gpu(inventory: HardwareInventory | None) -> GpuInfo | None:
    if inventory is None:
        return None
    gpus = [g for g in inventory.gpus if g.vendor in _GPU_VENDORS]
    return gpus[0] if gpus else None


def cpu_fallback(
    info: InstanceInfo, vram_bytes: float | None, inventory: HardwareInventory | None
) -> str | None:
    """Why this instance runs on the CPU though it should not, in words; None when fine."""
    actual = info.memory.actual if info.memory else None
    if actual is not None:
        if actual.cpu_fallback:
            return "the engine fell back to the CPU (see the instance's memory notes)"
        wanted, got = actual.requested_layers, actual.offloaded_layers
        if wanted is not None and got is not None and 0 <= got < wanted:
            return f"only {got} of the {wanted} layers asked for went to the GPU"
    options = info.options
    if options is not None and options.n_gpu_layers == 0:
        return None  # the CPU was asked for
    if info.status != InstanceStatus.READY or info.engine.value not in _GPU_ENGINES:
        return None
    gpu = _main_gpu(inventory)
    if gpu is None:
        return None
    if actual is not None and actual.devices:
        if not any(d.kind == DeviceKind.GPU for d in actual.devices):
            return f"no layers on {gpu.name}: this engine build may lack GPU support"
        return None
    if gpu.vendor == GpuVendor.NVIDIA and vram_bytes == 0:
        return f"the process uses no memory on {gpu.name}"
    return None
