"""Which llama.cpp release asset suits this machine: parse asset names, choose one, say why."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from roundhouse.api.hardware import GpuInfo, GpuVendor
from roundhouse.api.installs import AssetChoice, Backend, ReleaseAsset
from roundhouse.core.errors import NotFoundError
from roundhouse.core.hardware.host import normalize_arch

# llama-b6123-bin-ubuntu-vulkan-x64.tar.gz, llama-b6123-bin-win-cuda-12.4-x64.zip, ...
_ASSET = re.compile(r"^llama-(?P<tag>[^-]+)-bin-(?P<platform>.+?)\.(?P<ext>zip|tar\.gz)$")
# cudart-llama-bin-win-cuda-12.4-x64.zip (older: cudart-llama-bin-win-cu12.4-x64.zip)
_CUDART = re.compile(
    r"^cudart-llama-bin-win-(?:cuda-)?(?:cu)?(?P<version>\d+(?:\.\d+)+)-(?P<arch>x64|arm64)\.zip$"
)
_OS = {"macos": "Darwin", "ubuntu": "Linux", "win": "Windows"}
_ARCH = {"x64": "x86_64", "arm64": "arm64"}
_OS_WORDS = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
# CUDA 13 dropped Maxwell, Pascal and Volta: its builds need compute capability 7.5+.
_CUDA13_MIN_CC = (7, 5)


@dataclass(frozen=True)
class BuildAsset:
    """A release asset's name, read: which OS, processor and GPU API it was built for."""

    asset: ReleaseAsset
    os: str
    arch: str
    backend: Backend
    version: tuple[int, ...] | None = None

    @property
    def version_text(self) -> str | None:
        return ".".join(map(str, self.version)) if self.version else None


def parse_asset(asset: ReleaseAsset) -> BuildAsset | None:
    """What a llama.cpp build archive is for; None for other files (cudart, xcframework...)."""
    found = _ASSET.match(asset.name)
    if not found:
        return None
    tokens = found.group("platform").split("-")
    os_name, arch = _OS.get(tokens[0]), _ARCH.get(tokens[-1])
    if os_name is None or arch is None or len(tokens) < 2:
        return None
    middle = tokens[1:-1]
    if os_name == "Darwin":
        if middle:
            return BuildAsset(asset, os_name, arch, Backend.OTHER)
        # The x64 build is made with Metal off; the arm64 one embeds the Metal library.
        return BuildAsset(asset, os_name, arch, Backend.METAL if arch == "arm64" else Backend.CPU)
    if not middle or middle == ["cpu"]:
        return BuildAsset(asset, os_name, arch, Backend.CPU)
    kind, rest = middle[0], middle[1:]
    if kind == "vulkan" and not rest:
        return BuildAsset(asset, os_name, arch, Backend.VULKAN)
    if kind in ("cuda", "rocm") and len(rest) == 1:
        version = _version(rest[0].removeprefix("cu"))
        if version is not None:
            backend = Backend.CUDA if kind == "cuda" else Backend.ROCM
            return BuildAsset(asset, os_name, arch, backend, version)
    if kind == "hip" and os_name == "Windows":
        return BuildAsset(asset, os_name, arch, Backend.ROCM)
    return BuildAsset(asset, os_name, arch, Backend.OTHER)


def cudart_for(assets: Sequence[ReleaseAsset], build: BuildAsset) -> ReleaseAsset | None:
    """The CUDA runtime DLLs a Windows CUDA build needs (same CUDA version, same processor)."""
    for asset in assets:
        found = _CUDART.match(asset.name)
        if (
            found
            and _ARCH[found.group("arch")] == build.arch
            and _version(found.group("version")) == build.version
        ):
            return asset
    return None


def choose_asset(
    assets: Sequence[ReleaseAsset],
    *,
    system: str,
    machine: str,
    gpus: Sequence[GpuInfo] = (),
    prefer: Backend | None = None,
) -> AssetChoice:
    """The build to install on this OS, processor and GPUs, with the reason in words.

    `prefer` asks for one GPU API (say ROCm where Vulkan would be chosen); without it:
    Metal on Apple Silicon; CUDA for NVIDIA when a build fits the driver, else Vulkan; ROCm
    for AMD where ROCm is installed, else Vulkan; Vulkan for other GPUs; else the CPU build.
    Raises NotFoundError when the release has nothing for this machine.
    """
    arch = normalize_arch(machine)
    where = f"{_OS_WORDS.get(system, system)} {arch}"
    builds = [
        b for a in assets if (b := parse_asset(a)) is not None and (b.os, b.arch) == (system, arch)
    ]
    usable = [b for b in builds if b.backend != Backend.OTHER]
    if not usable:
        names = ", ".join(a.name for a in assets if parse_asset(a)) or "none"
        raise NotFoundError(
            f"This llama.cpp release has no build for {where} (its builds: {names}). "
            "Choose another release, or build llama.cpp yourself and put llama-server on PATH."
        )
    if prefer is not None:
        return _preferred(assets, usable, prefer, gpus, where)
    if system == "Darwin":
        return _mac(usable, arch)
    nvidia = [g for g in gpus if g.vendor == GpuVendor.NVIDIA]
    amd = [g for g in gpus if g.vendor == GpuVendor.AMD]
    others = [g for g in gpus if g.vendor in (GpuVendor.INTEL, GpuVendor.OTHER)]
    if nvidia:
        return _for_nvidia(assets, usable, nvidia, where)
    if amd:
        return _for_amd(usable, amd, system)
    if others:
        vulkan = _best(usable, Backend.VULKAN)
        if vulkan is not None:
            return _choice(vulkan, f"Vulkan build: {others[0].name} is used through Vulkan.")
    return _cpu(usable, "no GPU that llama.cpp's builds use was found")


def _mac(usable: list[BuildAsset], arch: str) -> AssetChoice:
    if arch == "arm64":
        metal = _best(usable, Backend.METAL)
        if metal is not None:
            return _choice(metal, "macOS arm64 build: Apple Silicon's GPU is used through Metal.")
    return _cpu(usable, "llama.cpp builds its Intel Mac release without Metal")


def _for_nvidia(
    assets: Sequence[ReleaseAsset], usable: list[BuildAsset], gpus: list[GpuInfo], where: str
) -> AssetChoice:
    choice, why = _pick_cuda(assets, usable, gpus, where)
    if choice is not None:
        return choice
    vulkan = _best(usable, Backend.VULKAN)
    if vulkan is not None:
        return _choice(vulkan, f"Vulkan build: {why}; Vulkan runs on the NVIDIA driver.")
    return _cpu(usable, why)


def _pick_cuda(
    assets: Sequence[ReleaseAsset], usable: list[BuildAsset], gpus: list[GpuInfo], where: str
) -> tuple[AssetChoice | None, str]:
    """The newest CUDA build the driver runs, or None and why not."""
    cuda = sorted(
        (b for b in usable if b.backend == Backend.CUDA and _has_runtime(assets, b)),
        key=lambda b: b.version or (),
        reverse=True,
    )
    if not cuda:
        return None, f"this release has no CUDA build for {where}"
    gpu = gpus[0]
    driver = max(
        (v for g in gpus if (v := _version(g.cuda_version or "")) is not None), default=None
    )
    ccs = [cc for g in gpus if (cc := _version(g.compute_capability or "")) is not None]
    cc = min(ccs) if ccs else None
    skipped: list[str] = []
    fitting: list[BuildAsset] = []
    for build in cuda:
        if build.version and build.version[0] >= 13 and cc is not None and cc < _CUDA13_MIN_CC:
            skipped.append(
                f"CUDA {build.version_text} needs compute capability 7.5 or newer, "
                f"{gpu.name} has {_text(cc)}"
            )
        else:
            fitting.append(build)
    if not fitting:
        return None, "; ".join(skipped)
    if driver is None:
        # NVML did not say: the oldest CUDA build asks the least of the driver.
        build = fitting[-1]
        why = (
            f"CUDA {build.version_text} build for {gpu.name}: the driver's CUDA version is "
            f"unknown; this build needs a driver for CUDA {build.version_text} or newer."
        )
        return _choice(build, why, assets), ""
    for build in fitting:
        if build.version and build.version[:2] <= driver[:2]:
            why = (
                f"CUDA {build.version_text} build: the NVIDIA driver supports CUDA {_text(driver)}"
            )
            if skipped:
                why += f" ({'; '.join(skipped)})"
            return _choice(build, why + ".", assets), ""
        skipped.append(f"CUDA {build.version_text} needs a newer driver")
    oldest = fitting[-1].version_text
    return None, (
        f"the NVIDIA driver supports CUDA {_text(driver)}, older than the oldest CUDA build "
        f"({oldest}); update the driver to use CUDA"
    )


def _for_amd(usable: list[BuildAsset], gpus: list[GpuInfo], system: str) -> AssetChoice:
    gpu = gpus[0]
    rocm = _best(usable, Backend.ROCM)
    vulkan = _best(usable, Backend.VULKAN)
    # amd-smi ships with ROCm: a GPU seen through it means the ROCm libraries are there.
    has_rocm = system == "Linux" and any(g.source == "amdsmi" for g in gpus)
    if rocm is not None and has_rocm:
        version = f" {rocm.version_text}" if rocm.version_text else ""
        return _choice(rocm, f"ROCm{version} build: {gpu.name}, and ROCm is installed.")
    if vulkan is not None:
        if system == "Linux":
            why = "ROCm was not found (the ROCm build needs it); Vulkan works with Mesa's driver"
        else:
            why = "Vulkan works on every AMD GPU; ask for ROCm to get the HIP build (RX 6000+)"
        return _choice(vulkan, f"Vulkan build for {gpu.name}: {why}.")
    if rocm is not None:
        return _choice(rocm, f"ROCm build: {gpu.name}; this release has no Vulkan build.")
    return _cpu(usable, f"this release has no build for {gpu.name}")


def _preferred(
    assets: Sequence[ReleaseAsset],
    usable: list[BuildAsset],
    prefer: Backend,
    gpus: Sequence[GpuInfo],
    where: str,
) -> AssetChoice:
    if prefer == Backend.CUDA and any(b.backend == Backend.CUDA for b in usable):
        nvidia = [g for g in gpus if g.vendor == GpuVendor.NVIDIA]
        if nvidia:
            choice, why = _pick_cuda(assets, usable, nvidia, where)
            if choice is None:
                raise NotFoundError(f"No CUDA build of this release suits this machine: {why}.")
            return choice
        cuda = [b for b in usable if b.backend == Backend.CUDA and _has_runtime(assets, b)]
        if cuda:
            # No NVIDIA GPU seen (NVML missing?): the oldest build asks the least of the driver.
            oldest = min(cuda, key=lambda b: b.version or ())
            why = f"CUDA {oldest.version_text} build, as asked (no NVIDIA GPU was seen)."
            return _choice(oldest, why, assets)
    build = _best(usable, prefer)
    if build is None or not _has_runtime(assets, build):
        have = ", ".join(sorted({b.backend.value for b in usable}))
        raise NotFoundError(
            f"This llama.cpp release has no {prefer.value} build for {where} (it has: {have}); "
            "choose another GPU API or release."
        )
    return _choice(build, f"{_words(build)} build, as asked.", assets)


def _cpu(usable: list[BuildAsset], why: str) -> AssetChoice:
    cpu = _best(usable, Backend.CPU)
    if cpu is None:
        other = usable[0]
        return _choice(other, f"{_words(other)} build: {why}, and there is no CPU-only build.")
    return _choice(cpu, f"CPU build: {why}.")


def _best(builds: list[BuildAsset], backend: Backend) -> BuildAsset | None:
    mine = [b for b in builds if b.backend == backend]
    return max(mine, key=lambda b: b.version or ()) if mine else None


def _has_runtime(assets: Sequence[ReleaseAsset], build: BuildAsset) -> bool:
    if build.backend != Backend.CUDA or build.os != "Windows":
        return True
    return cudart_for(assets, build) is not None


def _choice(build: BuildAsset, reason: str, assets: Sequence[ReleaseAsset] = ()) -> AssetChoice:
    extras: list[ReleaseAsset] = []
    if build.backend == Backend.CUDA and build.os == "Windows":
        runtime = cudart_for(assets, build)
        if runtime is not None:
            extras.append(runtime)
    return AssetChoice(
        asset=build.asset,
        extras=extras,
        backend=build.backend,
        backend_version=build.version_text,
        reason=reason,
    )


def _words(build: BuildAsset) -> str:
    names = {
        Backend.CPU: "CPU",
        Backend.METAL: "Metal",
        Backend.CUDA: "CUDA",
        Backend.VULKAN: "Vulkan",
        Backend.ROCM: "ROCm" if build.os == "Linux" else "HIP (ROCm)",
        Backend.OTHER: "Other",
    }
    version = f" {build.version_text}" if build.version_text else ""
    return names[build.backend] + version


def _version(text: str) -> tuple[int, ...] | None:
    found = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?", text.strip())
    if not found:
        return None
    return tuple(int(p) for p in found.groups() if p is not None)


def _text(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else "unknown"
