"""Choosing a llama.cpp build for a machine, from real release asset names."""

from __future__ import annotations

import pytest

from roundhouse.api.hardware import GpuInfo, GpuVendor
from roundhouse.api.installs import Backend, ReleaseAsset
from roundhouse.core.engines.install.assets import choose_asset, parse_asset
from roundhouse.core.errors import NotFoundError

# What llama.cpp's release workflow publishes today (release.yml), for one tag.
CURRENT = [
    "llama-b7100-bin-macos-arm64.tar.gz",
    "llama-b7100-bin-macos-x64.tar.gz",
    "llama-b7100-xcframework.zip",
    "llama-b7100-bin-ubuntu-x64.tar.gz",
    "llama-b7100-bin-ubuntu-arm64.tar.gz",
    "llama-b7100-bin-ubuntu-s390x.tar.gz",
    "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz",
    "llama-b7100-bin-ubuntu-vulkan-arm64.tar.gz",
    "llama-b7100-bin-ubuntu-rocm-7.2-x64.tar.gz",
    "llama-b7100-bin-ubuntu-openvino-2026.0-x64.tar.gz",
    "llama-b7100-bin-android-arm64.tar.gz",
    "llama-b7100-bin-win-cpu-x64.zip",
    "llama-b7100-bin-win-cpu-arm64.zip",
    "llama-b7100-bin-win-cuda-12.4-x64.zip",
    "llama-b7100-bin-win-cuda-13.3-x64.zip",
    "cudart-llama-bin-win-cuda-12.4-x64.zip",
    "cudart-llama-bin-win-cuda-13.3-x64.zip",
    "llama-b7100-bin-win-vulkan-x64.zip",
    "llama-b7100-bin-win-hip-radeon-x64.zip",
    "llama-b7100-bin-win-opencl-adreno-arm64.zip",
    "llama-b7100-ui.tar.gz",
]
# Before Linux and macOS moved to .tar.gz, and before "cuda-12.4" replaced "cuda-cu12.4".
OLDER = [
    "llama-b4562-bin-macos-arm64.zip",
    "llama-b4562-bin-ubuntu-x64.zip",
    "llama-b4562-bin-ubuntu-vulkan-x64.zip",
    "llama-b4562-bin-win-avx2-x64.zip",
    "llama-b4562-bin-win-cuda-cu11.7-x64.zip",
    "llama-b4562-bin-win-cuda-cu12.4-x64.zip",
    "cudart-llama-bin-win-cu11.7-x64.zip",
    "cudart-llama-bin-win-cu12.4-x64.zip",
    "llama-b4562-bin-win-vulkan-x64.zip",
]


def assets(names: list[str]) -> list[ReleaseAsset]:
    return [ReleaseAsset(name=n, size=1, url=f"https://example.invalid/{n}") for n in names]


def nvidia(cuda: str | None, cc: str | None = "8.9", name: str = "RTX 4090") -> GpuInfo:
    return GpuInfo(
        index=0,
        vendor=GpuVendor.NVIDIA,
        name=f"NVIDIA GeForce {name}",
        cuda_version=cuda,
        driver_version="570.00",
        compute_capability=cc,
        source="nvml",
    )


def amd(source: str) -> GpuInfo:
    return GpuInfo(index=0, vendor=GpuVendor.AMD, name="AMD Radeon RX 7900 XTX", source=source)


APPLE = GpuInfo(index=0, vendor=GpuVendor.APPLE, name="Apple M3 Max", unified=True, source="ioreg")
INTEL = GpuInfo(index=0, vendor=GpuVendor.INTEL, name="Intel Arc A770", source="sysfs")


@pytest.mark.parametrize(
    ("system", "machine", "gpus", "asset", "extras", "reason"),
    [
        ("Darwin", "arm64", [APPLE], "llama-b7100-bin-macos-arm64.tar.gz", [], "Metal"),
        ("Darwin", "x86_64", [], "llama-b7100-bin-macos-x64.tar.gz", [], "without Metal"),
        ("Linux", "x86_64", [], "llama-b7100-bin-ubuntu-x64.tar.gz", [], "no GPU"),
        ("Linux", "aarch64", [], "llama-b7100-bin-ubuntu-arm64.tar.gz", [], "no GPU"),
        (
            "Linux",
            "x86_64",
            [nvidia("12.8")],
            "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz",
            [],
            "no CUDA build for Linux x86_64; Vulkan runs on the NVIDIA driver",
        ),
        (
            "Linux",
            "x86_64",
            [amd("amdsmi")],
            "llama-b7100-bin-ubuntu-rocm-7.2-x64.tar.gz",
            [],
            "ROCm 7.2 build: AMD Radeon RX 7900 XTX, and ROCm is installed",
        ),
        (
            "Linux",
            "x86_64",
            [amd("sysfs")],
            "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz",
            [],
            "ROCm was not found",
        ),
        (
            "Linux",
            "x86_64",
            [INTEL],
            "llama-b7100-bin-ubuntu-vulkan-x64.tar.gz",
            [],
            "Intel Arc A770",
        ),
        ("Windows", "AMD64", [], "llama-b7100-bin-win-cpu-x64.zip", [], "no GPU"),
        ("Windows", "ARM64", [], "llama-b7100-bin-win-cpu-arm64.zip", [], "no GPU"),
        (
            "Windows",
            "AMD64",
            [nvidia("12.8")],
            "llama-b7100-bin-win-cuda-12.4-x64.zip",
            ["cudart-llama-bin-win-cuda-12.4-x64.zip"],
            "CUDA 12.4 build: the NVIDIA driver supports CUDA 12.8 "
            "(CUDA 13.3 needs a newer driver)",
        ),
        (
            "Windows",
            "AMD64",
            [nvidia("13.3")],
            "llama-b7100-bin-win-cuda-13.3-x64.zip",
            ["cudart-llama-bin-win-cuda-13.3-x64.zip"],
            "CUDA 13.3 build: the NVIDIA driver supports CUDA 13.3.",
        ),
        (
            "Windows",
            "AMD64",
            [nvidia("13.4", cc="6.1", name="GTX 1080")],
            "llama-b7100-bin-win-cuda-12.4-x64.zip",
            ["cudart-llama-bin-win-cuda-12.4-x64.zip"],
            "CUDA 13.3 needs compute capability 7.5 or newer, NVIDIA GeForce GTX 1080 has 6.1",
        ),
        (
            "Windows",
            "AMD64",
            [nvidia("12.2")],
            "llama-b7100-bin-win-vulkan-x64.zip",
            [],
            "supports CUDA 12.2, older than the oldest CUDA build (12.4); update the driver",
        ),
        (
            "Windows",
            "AMD64",
            [nvidia(None)],
            "llama-b7100-bin-win-cuda-12.4-x64.zip",
            ["cudart-llama-bin-win-cuda-12.4-x64.zip"],
            "the driver's CUDA version is unknown",
        ),
        (
            "Windows",
            "AMD64",
            [amd("registry")],
            "llama-b7100-bin-win-vulkan-x64.zip",
            [],
            "ask for ROCm to get the HIP build",
        ),
    ],
)
def test_current_release_names(
    system: str, machine: str, gpus: list[GpuInfo], asset: str, extras: list[str], reason: str
) -> None:
    choice = choose_asset(assets(CURRENT), system=system, machine=machine, gpus=gpus)
    assert choice.asset.name == asset
    assert [e.name for e in choice.extras] == extras
    assert reason in choice.reason


@pytest.mark.parametrize(
    ("system", "gpus", "asset", "extras"),
    [
        ("Windows", [nvidia("12.6")], "llama-b4562-bin-win-cuda-cu12.4-x64.zip", ["12.4"]),
        ("Windows", [nvidia("12.1")], "llama-b4562-bin-win-cuda-cu11.7-x64.zip", ["11.7"]),
        ("Linux", [], "llama-b4562-bin-ubuntu-x64.zip", []),
        ("Darwin", [APPLE], "llama-b4562-bin-macos-arm64.zip", []),
    ],
)
def test_older_release_names(
    system: str, gpus: list[GpuInfo], asset: str, extras: list[str]
) -> None:
    machine = "arm64" if system == "Darwin" else "x86_64"
    choice = choose_asset(assets(OLDER), system=system, machine=machine, gpus=gpus)
    assert choice.asset.name == asset
    assert [e.name for e in choice.extras] == [
        f"cudart-llama-bin-win-cu{v}-x64.zip" for v in extras
    ]


def test_asking_for_a_gpu_api() -> None:
    pick = choose_asset(
        assets(CURRENT),
        system="Windows",
        machine="AMD64",
        gpus=[amd("registry")],
        prefer=Backend.ROCM,
    )
    assert pick.asset.name == "llama-b7100-bin-win-hip-radeon-x64.zip"
    assert pick.reason == "HIP (ROCm) build, as asked."
    vulkan = choose_asset(
        assets(CURRENT),
        system="Windows",
        machine="AMD64",
        gpus=[nvidia("12.8")],
        prefer=Backend.VULKAN,
    )
    assert vulkan.asset.name == "llama-b7100-bin-win-vulkan-x64.zip"
    with pytest.raises(NotFoundError, match="no cuda build for Linux x86_64"):
        choose_asset(assets(CURRENT), system="Linux", machine="x86_64", prefer=Backend.CUDA)
    with pytest.raises(NotFoundError, match="No CUDA build of this release suits"):
        choose_asset(
            assets(CURRENT),
            system="Windows",
            machine="AMD64",
            gpus=[nvidia("11.8")],
            prefer=Backend.CUDA,
        )


def test_a_cuda_build_without_its_runtime_is_not_chosen() -> None:
    names = [n for n in CURRENT if not n.startswith("cudart-")]
    choice = choose_asset(assets(names), system="Windows", machine="AMD64", gpus=[nvidia("13.3")])
    assert choice.backend == Backend.VULKAN


def test_a_machine_the_release_does_not_cover() -> None:
    with pytest.raises(NotFoundError, match="no build for Windows arm64"):
        choose_asset(assets(OLDER), system="Windows", machine="ARM64")


def test_names_that_are_not_builds_are_ignored() -> None:
    for name in (
        "llama-b7100-xcframework.zip",
        "llama-b7100-ui.tar.gz",
        "cudart-llama-bin-win-cuda-12.4-x64.zip",
    ):
        assert parse_asset(assets([name])[0]) is None
    rocm = parse_asset(assets(["llama-b7100-bin-ubuntu-rocm-7.2-x64.tar.gz"])[0])
    assert rocm is not None and (rocm.backend, rocm.version) == (Backend.ROCM, (7, 2))
