"""The whole inventory: this real machine, and recorded machines through the probe."""

from __future__ import annotations

import json
from pathlib import Path

from roundhouse.api.hardware import GpuVendor
from roundhouse.core.hardware.host import LocalHost
from roundhouse.core.hardware.inventory import HardwareProbe, collect_inventory
from roundhouse.core.hardware.memory import existing_ancestor
from roundhouse.core.hardware.recorded import RecordedHost
from tests.fixtures.nvml.fake_pynvml import FakePynvml
from tests.unit.hardware.conftest import machine

H100 = "h100_sxm_gpu_burn_114.json"
GIB = 1024**3


def test_this_machine(models_dir: Path) -> None:
    # The real pynvml: this box has no NVIDIA driver, which must be an Unseen, not an error.
    inv = collect_inventory(LocalHost(), models_dir=models_dir)
    assert inv.os == "Linux" and inv.os_version
    assert inv.cpu.brand and inv.cpu.brand != "unknown CPU"
    assert inv.cpu.logical_cores >= 1
    assert inv.memory.total_bytes > 0 and 0 < inv.memory.available_bytes <= inv.memory.total_bytes
    assert inv.disk is not None and inv.disk.path == str(models_dir) and inv.disk.free_bytes > 0
    assert inv.gpus == []
    assert [u.what for u in inv.unseen] == ["NVIDIA GPUs"]
    assert inv.recommendations[0].engine == "llama.cpp"


def test_models_dir_that_does_not_exist_uses_its_parent(tmp_path: Path) -> None:
    assert existing_ancestor(tmp_path / "a" / "b") == tmp_path


def test_mac_probe(models_dir: Path) -> None:
    with HardwareProbe(machine("mac-m1-pro"), models_dir=models_dir) as probe:
        inv = probe.inventory()
        (gpu,) = inv.gpus
        assert (gpu.vendor, gpu.name, gpu.index) == (GpuVendor.APPLE, "Apple M1 Pro", 0)
        assert inv.unseen == []  # NVML is not even tried on a Mac
        assert [r.engine for r in inv.recommendations] == ["mlx", "llama.cpp", "ollama"]
        (sample,) = probe.sample_gpus()
        assert sample.memory_used_bytes == 340983808


def test_intel_mac_has_no_gpu_backend(models_dir: Path) -> None:
    inv = collect_inventory(machine("mac-intel-avx2"), models_dir=models_dir)
    assert inv.gpus == [] and inv.unseen[0].what == "GPU acceleration"


def test_windows_probe_with_nvml_numbers_gpus_across_backends(models_dir: Path) -> None:
    nvml = FakePynvml.load(H100)
    with HardwareProbe(machine("windows-rtx4090"), models_dir=models_dir, nvml_module=nvml) as p:
        inv = p.inventory()
        names = [(g.index, g.name, g.source) for g in inv.gpus]
        # The registry's RTX 4090 is dropped: NVML reports the NVIDIA GPUs.
        assert names == [
            (0, "NVIDIA H100 80GB HBM3", "nvml"),
            (1, "Intel(R) UHD Graphics 770", "registry"),
        ]
        assert [s.index for s in p.sample_gpus()] == [0, 1]
        assert inv.recommendations[0].engine == "llama.cpp"
    assert not nvml.initialized  # closed with the probe


def test_windows_without_nvidia_driver_keeps_the_registry_gpus(models_dir: Path) -> None:
    inv = collect_inventory(
        machine("windows-rtx4090"), models_dir=models_dir, nvml_module=FakePynvml.without_driver()
    )
    assert [g.memory_total_bytes for g in inv.gpus] == [24 * GIB, 1 * GIB]
    assert [u.what for u in inv.unseen] == ["NVIDIA GPUs"]


def test_amd_linux_probe(models_dir: Path) -> None:
    inv = collect_inventory(
        machine("linux-amd-rx7900xt"),
        models_dir=models_dir,
        nvml_module=FakePynvml.without_driver(),
    )
    assert [(g.vendor, g.source) for g in inv.gpus] == [(GpuVendor.AMD, "sysfs")]
    assert inv.recommendations[0].engine == "ollama"


def test_wsl_without_driver_points_at_the_windows_driver(tmp_path: Path, models_dir: Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"system": "Linux", "machine": "x86_64"}))
    release = tmp_path / "fs/proc/sys/kernel/osrelease"
    release.parent.mkdir(parents=True)
    release.write_text("5.15.167.4-microsoft-standard-WSL2\n")
    inv = collect_inventory(
        RecordedHost(tmp_path), models_dir=models_dir, nvml_module=FakePynvml.without_driver()
    )
    assert "/usr/lib/wsl/lib" in inv.unseen[0].why
    assert inv.os_version.endswith("under WSL")


def test_a_failing_backend_becomes_unseen(models_dir: Path) -> None:
    nvml = FakePynvml.load(H100)
    with HardwareProbe(machine("linux-epyc-local"), models_dir=models_dir, nvml_module=nvml) as p:
        nvml.record["devices"][0] = None  # every per-device call now breaks unexpectedly
        inv = p.inventory()
        assert inv.gpus == [] and inv.unseen[0].what == "GPUs (nvml)"
        assert p.sample_gpus() == []
