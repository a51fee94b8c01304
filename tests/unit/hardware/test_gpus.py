"""AMD sysfs, Apple Silicon and Windows registry backends on recorded outputs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from roundhouse.api.hardware import GpuVendor
from roundhouse.core.hardware.amd import AmdSmiBackend, AmdSysfsBackend
from roundhouse.core.hardware.apple import AppleBackend, default_working_set, parse_ioreg
from roundhouse.core.hardware.recorded import RecordedHost
from roundhouse.core.hardware.windows import WindowsRegistryBackend
from tests.unit.hardware.conftest import FIXTURES, machine

GIB = 1024**3
MIB = 1024**2


def test_amd_sysfs_radeon_rx_7900_xt() -> None:
    backend = AmdSysfsBackend(machine("linux-amd-rx7900xt"))
    assert backend.device_count() == 1  # card1 is Intel, card0-DP-1 a connector
    (gpu,) = backend.inventory()
    assert gpu.vendor == GpuVendor.AMD and gpu.source == "sysfs"
    assert gpu.name == "AMD Radeon RX 7900 XT/XTX"  # no product_name: PCI id 0x744c
    assert gpu.memory_total_bytes == 21458059264
    assert gpu.memory_used_bytes == 27856896
    assert gpu.memory_free_bytes == 21458059264 - 27856896
    assert gpu.utilization_percent == 0.0
    assert gpu.temperature_c is None and gpu.power_w is None  # no hwmon recorded


def test_amd_sysfs_hwmon_units(tmp_path: Path) -> None:
    # A synthetic card, to pin the units: millidegrees and microwatts.
    (tmp_path / "host.json").write_text(json.dumps({"system": "Linux", "machine": "x86_64"}))
    device = tmp_path / "fs/sys/class/drm/card2/device"
    (device / "hwmon/hwmon4").mkdir(parents=True)
    for name, value in {
        "vendor": "0x1002",
        "product_name": "AMD Instinct MI210",
        "uevent": "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:83:00.0\n",
        "hwmon/hwmon4/temp1_input": "45000",
        "hwmon/hwmon4/power1_average": "42000000",
        "hwmon/hwmon4/power1_cap": "300000000",
    }.items():
        (device / name).write_text(value + "\n")
    backend = AmdSysfsBackend(RecordedHost(tmp_path))
    backend.first_index = 1
    (gpu,) = backend.inventory()
    assert (gpu.index, gpu.name, gpu.pci_bus_id) == (1, "AMD Instinct MI210", "0000:83:00.0")
    assert (gpu.temperature_c, gpu.power_w, gpu.power_limit_w) == (45.0, 42.0, 300.0)
    assert gpu.memory_total_bytes is None and gpu.memory_free_bytes is None


@pytest.mark.skipif(importlib.util.find_spec("amdsmi") is not None, reason="amdsmi installed")
def test_amdsmi_absent_gives_no_backend() -> None:
    assert AmdSmiBackend.open(None) is None


def test_amdsmi_backend_with_a_stand_in() -> None:
    # A synthetic stand-in (no AMD machine here): one metric raises, as unsupported ones do.
    def unsupported(handle: object) -> dict[str, int]:
        raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    closed: list[bool] = []
    smi = SimpleNamespace(
        amdsmi_init=lambda: None,
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_vram_usage=lambda h: {"vram_total": 65536, "vram_used": 1024},
        amdsmi_get_gpu_activity=lambda h: {"gfx_activity": 37},
        amdsmi_get_power_info=unsupported,
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": "AMD Instinct MI210"},
        amdsmi_get_gpu_device_bdf=lambda h: "0000:05:00.0",
        amdsmi_shut_down=lambda: closed.append(True),
    )
    backend = AmdSmiBackend.open(smi)
    assert backend is not None
    (gpu,) = backend.inventory()
    assert (gpu.name, gpu.source, gpu.pci_bus_id) == (
        "AMD Instinct MI210",
        "amdsmi",
        "0000:05:00.0",
    )
    assert gpu.memory_total_bytes == 64 * GIB and gpu.memory_free_bytes == 63 * GIB
    assert gpu.utilization_percent == 37.0 and gpu.power_w is None
    backend.close()
    assert closed == [True]


def test_apple_m1_pro() -> None:
    backend = AppleBackend(machine("mac-m1-pro"))
    (gpu,) = backend.inventory()
    cap = 16 * GIB * 2 // 3  # iogpu.wired_limit_mb is 0: Metal's default working set
    assert gpu.vendor == GpuVendor.APPLE and gpu.unified
    assert (gpu.name, gpu.gpu_cores) == ("Apple M1 Pro", 14)
    assert gpu.memory_total_bytes == cap
    assert gpu.memory_used_bytes == 340983808
    assert gpu.memory_free_bytes == cap - 340983808
    assert gpu.utilization_percent == 2.0
    (sample,) = backend.sample()
    assert (sample.utilization_percent, sample.memory_total_bytes) == (2.0, cap)


def test_apple_wired_limit_overrides_the_default(tmp_path: Path) -> None:
    spec = json.loads((FIXTURES / "mac-m1-pro/host.json").read_text())
    spec["commands"]["sysctl -n iogpu.wired_limit_mb"] = {"stdout": "14336\n"}
    (tmp_path / "host.json").write_text(json.dumps(spec))
    host = RecordedHost(tmp_path)
    assert AppleBackend(host).working_set_cap() == 14336 * MIB


def test_apple_sample_skips_system_profiler() -> None:
    host = machine("mac-m1-pro")
    AppleBackend(host).sample()
    assert not any(call.startswith("system_profiler") for call in host.calls)


def test_ioreg_ignores_the_driver_in_use_figure() -> None:
    text = '"PerformanceStatistics" = {"In use system memory (driver)"=0,"In use system memory"=5}'
    assert parse_ioreg(text)["in_use_bytes"] == 5


def test_default_working_set_rule() -> None:
    assert default_working_set(48 * GIB) == 36 * GIB
    assert default_working_set(24 * GIB) == 16 * GIB


def test_windows_registry_reads_64_bit_sizes() -> None:
    backend = WindowsRegistryBackend(machine("windows-rtx4090"))
    gpus = backend.inventory()
    assert [(g.name, g.vendor, g.memory_total_bytes) for g in gpus] == [
        ("NVIDIA GeForce RTX 4090", GpuVendor.NVIDIA, 24 * GIB),  # not WMI's 4293918720
        ("Intel(R) UHD Graphics 770", GpuVendor.INTEL, 1 * GIB),
    ]
    assert [g.index for g in gpus] == [0, 1] and gpus[0].source == "registry"


def test_windows_registry_leaves_nvidia_to_nvml() -> None:
    host = machine("windows-rtx4090")
    backend = WindowsRegistryBackend(host, skip_vendors=frozenset({GpuVendor.NVIDIA}))
    assert [g.name for g in backend.inventory()] == ["Intel(R) UHD Graphics 770"]
