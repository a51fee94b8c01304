"""The NVML backend through the replaying stand-in, as the real pynvml would be used."""

from __future__ import annotations

import pytest

from roundhouse.api.hardware import GpuVendor
from roundhouse.core.hardware.nvidia import NvidiaBackend, cuda_version
from tests.fixtures.nvml.fake_pynvml import FakePynvml
from tests.unit.hardware.conftest import machine

MIB = 1024**2
H100 = "h100_sxm_gpu_burn_114.json"


def _open(nvml: FakePynvml) -> NvidiaBackend:
    backend, unseen = NvidiaBackend.open(machine("linux-epyc-local"), nvml)
    assert unseen is None and backend is not None
    backend._process_name = lambda pid: "python3" if pid == 2931 else None
    return backend


def test_h100_inventory() -> None:
    backend = _open(FakePynvml.load(H100))
    (gpu,) = backend.inventory()
    assert gpu.vendor == GpuVendor.NVIDIA and gpu.source == "nvml"
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.memory_total_bytes == 81559 * MIB
    assert gpu.memory_used_bytes == 72790 * MIB
    assert gpu.memory_free_bytes == 8769 * MIB
    assert (gpu.temperature_c, gpu.power_w, gpu.power_limit_w) == (39.0, 145.0, 700.0)
    assert gpu.utilization_percent == 0.0
    assert (gpu.driver_version, gpu.cuda_version) == ("550.90.07", "12.4")
    assert gpu.compute_capability == "9.0"
    assert gpu.pci_bus_id == "00000000:19:00.0"
    assert [(p.pid, p.name, p.used_bytes) for p in gpu.processes] == [
        (2931, "python3", 72718 * MIB)
    ]


def test_not_supported_field_is_none_and_the_gpu_stays() -> None:
    nvml = FakePynvml.load(H100).fail("nvmlDeviceGetEnforcedPowerLimit", "NotSupported")
    nvml.fail("nvmlDeviceGetComputeRunningProcesses", "NoPermission")
    (gpu,) = _open(nvml).inventory()
    assert gpu.power_limit_w is None
    assert gpu.processes == []
    assert gpu.power_w == 145.0 and gpu.name == "NVIDIA H100 80GB HBM3"


def test_sample_reads_only_live_counters() -> None:
    nvml = FakePynvml.load(H100)
    backend = _open(nvml)
    backend.first_index = 3
    nvml.calls.clear()
    (sample,) = backend.sample()
    assert sample.index == 3
    assert sample.memory_used_bytes == 72790 * MIB and sample.power_w == 145.0
    assert "nvmlDeviceGetName" not in nvml.calls
    assert "nvmlDeviceGetComputeRunningProcesses" not in nvml.calls


def test_missing_library_is_unseen_not_an_error() -> None:
    backend, unseen = NvidiaBackend.open(machine("linux-epyc-local"), FakePynvml.without_driver())
    assert backend is None and unseen is not None
    assert unseen.what == "NVIDIA GPUs"
    assert "No NVIDIA driver is installed" in unseen.why


def test_driver_not_loaded_says_so() -> None:
    nvml = FakePynvml.without_driver("DriverNotLoaded")
    _, unseen = NvidiaBackend.open(machine("linux-epyc-local"), nvml)
    assert unseen is not None and "not running" in unseen.why


def test_close_shuts_nvml_down() -> None:
    nvml = FakePynvml.load(H100)
    backend = _open(nvml)
    backend.close()
    assert not nvml.initialized
    backend.close()  # twice is harmless


@pytest.mark.parametrize(("code", "text"), [(12040, "12.4"), (11080, "11.8"), (12090, "12.9")])
def test_cuda_version(code: int, text: str) -> None:
    assert cuda_version(code) == text
