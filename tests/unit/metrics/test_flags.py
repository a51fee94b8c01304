"""Bandwidth use and the silent CPU fallback, from an instance's memory and the hardware."""

from __future__ import annotations

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.fit import DeviceKind
from roundhouse.api.hardware import GpuInfo, GpuVendor, HardwareInventory
from roundhouse.api.instance_memory import DeviceMemoryUse, InstanceMemory, MemoryUse
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.metrics.flags import bandwidth_use, cpu_fallback, peak_bandwidth
from tests.unit.builders import ready_instance
from tests.unit.install.conftest import inventory

GB = 10**9


def _gpu(name: str, vendor: GpuVendor = GpuVendor.NVIDIA) -> GpuInfo:
    return GpuInfo(index=0, vendor=vendor, name=name, source="test")


def _memory(
    weights: int, *, on_gpu: bool = True, requested: int | None = None, offloaded: int | None = None
) -> InstanceMemory:
    kind = DeviceKind.GPU if on_gpu else DeviceKind.CPU
    device = DeviceMemoryUse(device="CUDA0" if on_gpu else "CPU", kind=kind, weights_bytes=weights)
    actual = MemoryUse(
        devices=[device],
        weights_bytes=weights,
        kv_bytes=0,
        compute_bytes=0,
        total_bytes=weights,
        requested_layers=requested,
        offloaded_layers=offloaded,
    )
    return InstanceMemory(actual=actual)


def _info(
    memory: InstanceMemory | None = None, options: InstanceOptions | None = None
) -> InstanceInfo:
    return ready_instance(memory=memory, options=options)


def _with(*gpus: GpuInfo) -> HardwareInventory:
    return inventory(gpus=list(gpus))


def test_peak_bandwidth_prefers_the_longest_matching_name() -> None:
    assert peak_bandwidth("NVIDIA H100 PCIe") == 2000 * GB
    assert peak_bandwidth("NVIDIA H100 80GB HBM3") == 3350 * GB
    assert peak_bandwidth("Apple M2 Max") == 400 * GB
    assert peak_bandwidth("Some Future GPU") is None


def test_bandwidth_use_is_tokens_times_weights_over_peak() -> None:
    # 4 GB of weights at 100 tokens/s reads 400 GB/s of the 4090's 1008 GB/s.
    info = _info(_memory(4 * GB))
    result = bandwidth_use(info, 100.0, _with(_gpu("NVIDIA GeForce RTX 4090")))
    assert result.use is not None and abs(result.use - 400 / 1008) < 1e-9
    assert result.note is not None and "(low)" in result.note


def test_bandwidth_use_says_why_it_is_unknown() -> None:
    assert bandwidth_use(_info(), 10.0, _with(_gpu("RTX 4090"))).note == (
        "weights unknown (the engine reported no buffers)"
    )
    unknown = bandwidth_use(_info(_memory(GB)), 10.0, _with(_gpu("Mystery 9000")))
    assert unknown.use is None and unknown.note == "peak bandwidth of Mystery 9000 unknown"
    assert bandwidth_use(_info(_memory(GB)), 10.0, _with()).use is None
    idle = bandwidth_use(_info(_memory(GB)), 0.0, _with(_gpu("RTX 4090")))
    assert idle.use is None and idle.note is None


def test_fewer_layers_than_asked_is_a_cpu_fallback() -> None:
    info = _info(_memory(GB, requested=33, offloaded=20))
    assert cpu_fallback(info, None, _with(_gpu("RTX 4090"))) == (
        "only 20 of the 33 layers asked for went to the GPU"
    )


def test_no_gpu_layers_with_a_gpu_present_is_flagged() -> None:
    info = _info(_memory(GB, on_gpu=False))
    reason = cpu_fallback(info, None, _with(_gpu("RTX 4090")))
    assert reason is not None and "no layers on RTX 4090" in reason


def test_a_process_without_gpu_memory_is_flagged_on_nvidia() -> None:
    reason = cpu_fallback(_info(), 0, _with(_gpu("RTX 4090")))
    assert reason == "the process uses no memory on RTX 4090"
    assert cpu_fallback(_info(), 2 * GB, _with(_gpu("RTX 4090"))) is None


def test_asking_for_the_cpu_or_having_no_gpu_is_not_a_fallback() -> None:
    cpu_only = _info(options=InstanceOptions(model="/m.gguf", n_gpu_layers=0))
    assert cpu_fallback(cpu_only, 0, _with(_gpu("RTX 4090"))) is None
    assert cpu_fallback(_info(_memory(GB, on_gpu=False)), 0, _with()) is None
