"""Engine recommendations, ranked, for several recorded machines."""

from __future__ import annotations

from roundhouse.api.hardware import CpuInfo, EngineRecommendation, MemoryInfo
from roundhouse.core.hardware.amd import AmdSysfsBackend
from roundhouse.core.hardware.apple import AppleBackend
from roundhouse.core.hardware.cpu import read_cpu
from roundhouse.core.hardware.nvidia import NvidiaBackend
from roundhouse.core.hardware.recommend import recommend
from tests.fixtures.nvml.fake_pynvml import FakePynvml
from tests.unit.hardware.conftest import machine

GIB = 1024**3


def _ram(gib: int) -> MemoryInfo:
    return MemoryInfo(total_bytes=gib * GIB, available_bytes=gib * GIB // 2)


def _engines(recs: list[EngineRecommendation]) -> list[str]:
    assert [r.rank for r in recs] == list(range(1, len(recs) + 1))
    return [r.engine for r in recs]


def test_mac_m1_pro_mlx_first() -> None:
    host = machine("mac-m1-pro")
    gpus = AppleBackend(host).inventory()
    recs = recommend(os_name="Darwin", cpu=read_cpu(host), memory=_ram(16), gpus=gpus)
    assert _engines(recs) == ["mlx", "llama.cpp", "ollama"]
    assert recs[0].reason.startswith(
        "Apple M1 Pro with 16 GiB unified memory, of which the GPU may use 10.7 GiB"
    )
    assert recs[1].title == "llama.cpp (Metal)"


def test_nvidia_linux_box_vllm_first() -> None:
    host = machine("linux-epyc-local")
    backend, _ = NvidiaBackend.open(host, FakePynvml.load("h100_sxm_gpu_burn_114.json"))
    assert backend is not None
    recs = recommend(
        os_name="Linux", cpu=read_cpu(host), memory=_ram(128), gpus=backend.inventory()
    )
    assert _engines(recs) == ["vllm", "sglang", "llama.cpp", "ollama"]
    assert recs[0].reason.startswith(
        "NVIDIA H100 80GB HBM3 with 8.6 GiB free VRAM (compute capability 9.0)"
    )
    assert "long prompt prefixes" in recs[1].reason
    assert recs[2].title == "llama.cpp (CUDA)" and "single user" in recs[2].reason


def test_nvidia_on_windows_has_no_vllm() -> None:
    host = machine("linux-epyc-local")
    backend, _ = NvidiaBackend.open(host, FakePynvml.load("h100_sxm_gpu_burn_114.json"))
    assert backend is not None
    recs = recommend(
        os_name="Windows", cpu=read_cpu(host), memory=_ram(64), gpus=backend.inventory()
    )
    assert _engines(recs) == ["llama.cpp", "ollama"]
    assert "need Linux or WSL" in recs[0].reason


def test_old_nvidia_gpu_has_no_vllm() -> None:
    host = machine("linux-epyc-local")
    nvml = FakePynvml.load("h100_sxm_gpu_burn_114.json")
    nvml.record["devices"][0]["nvmlDeviceGetCudaComputeCapability"] = {"ok": [6, 1]}
    backend, _ = NvidiaBackend.open(host, nvml)
    assert backend is not None
    recs = recommend(os_name="Linux", cpu=read_cpu(host), memory=_ram(64), gpus=backend.inventory())
    assert _engines(recs) == ["llama.cpp", "ollama"]
    assert "compute capability 7.0 or newer (compute capability 6.1)" in recs[0].reason


def test_cpu_only_without_avx2_warns() -> None:
    cpu = read_cpu(machine("linux-xeon-e7-v2"))
    recs = recommend(os_name="Linux", cpu=cpu, memory=_ram(256), gpus=[])
    assert _engines(recs) == ["llama.cpp", "ollama"]
    reason = recs[0].reason
    assert reason.startswith("Intel(R) Xeon(R) CPU E7-4820 v2 @ 2.00GHz with 1 thread and")
    assert "lacks AVX2" in reason and "illegal instruction" in reason


def test_cpu_only_with_avx2() -> None:
    cpu = read_cpu(machine("linux-epyc-local"))
    recs = recommend(os_name="Linux", cpu=cpu, memory=_ram(8), gpus=[])
    assert recs[0].engine == "llama.cpp" and "AVX2 is present" in recs[0].reason


def test_raspberry_pi_mentions_dotprod() -> None:
    cpu = read_cpu(machine("linux-rpi5"))
    recs = recommend(os_name="Linux", cpu=cpu, memory=_ram(8), gpus=[])
    assert "dot-product" in recs[0].reason and "4 threads" in recs[0].reason


def test_amd_linux_ollama_first() -> None:
    host = machine("linux-amd-rx7900xt")
    gpus = AmdSysfsBackend(host).inventory()
    cpu = CpuInfo(brand="x", arch="x86_64", physical_cores=8, logical_cores=16, features=["avx2"])
    recs = recommend(os_name="Linux", cpu=cpu, memory=_ram(64), gpus=gpus)
    assert _engines(recs) == ["ollama", "llama.cpp", "vllm"]
    assert recs[0].reason.startswith("AMD Radeon RX 7900 XT/XTX with 20 GiB free VRAM")
    assert recs[1].title == "llama.cpp (ROCm or Vulkan)"
