"""Which engines suit this machine, ranked, each with one reason in the machine's own figures."""

from __future__ import annotations

from roundhouse.api.hardware import (
    CpuInfo,
    EngineRecommendation,
    GpuInfo,
    GpuVendor,
    MemoryInfo,
)
from roundhouse.core.hardware.backend import gib

# vLLM and SGLang ship kernels for Volta (7.0) and newer only.
MIN_VLLM_COMPUTE_CAPABILITY = (7, 0)

_OLLAMA_WHY = "the easiest start: one installer, models pulled by name, GPU used automatically."


def _cc(gpu: GpuInfo) -> tuple[int, int] | None:
    try:
        major, minor = (gpu.compute_capability or "").split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def _gpu_figures(gpu: GpuInfo) -> str:
    free = gpu.memory_free_bytes
    total = gpu.memory_total_bytes
    if free is not None:
        return f"{gpu.name} with {gib(free)} free VRAM"
    return f"{gpu.name} with {gib(total)} VRAM" if total is not None else gpu.name


def _best(gpus: list[GpuInfo], vendor: GpuVendor) -> GpuInfo | None:
    mine = [g for g in gpus if g.vendor == vendor]
    return max(mine, key=lambda g: g.memory_total_bytes or 0) if mine else None


def recommend(
    *,
    os_name: str,
    cpu: CpuInfo,
    memory: MemoryInfo,
    gpus: list[GpuInfo],
    wsl: bool = False,
) -> list[EngineRecommendation]:
    """Engines ranked for this machine (rules in docs: fit-and-hardware.md)."""
    picks: list[tuple[str, str, str]] = []  # (engine id, title, reason)
    linux = os_name == "Linux"
    where = "WSL" if wsl else os_name
    nvidia = _best(gpus, GpuVendor.NVIDIA)
    amd = _best(gpus, GpuVendor.AMD)
    apple = _best(gpus, GpuVendor.APPLE)

    if apple is not None and os_name == "Darwin" and cpu.arch == "arm64":
        figures = f"{apple.name} with {gib(memory.total_bytes)} unified memory"
        if apple.memory_total_bytes:
            figures += f", of which the GPU may use {gib(apple.memory_total_bytes)}"
        picks.append(("mlx", "MLX", f"{figures}: MLX is built for Apple Silicon's GPU."))
        why = f"{apple.name}: GGUF models on the Metal GPU, the widest choice of quantizations."
        picks.append(("llama.cpp", "llama.cpp (Metal)", why))
    elif nvidia is not None:
        figures = _gpu_figures(nvidia)
        cc = _cc(nvidia)
        cc_text = f" (compute capability {nvidia.compute_capability})" if cc else ""
        if linux and cc is not None and cc >= MIN_VLLM_COMPUTE_CAPABILITY:
            why = f"{figures}{cc_text}: vLLM serves many concurrent users fastest on {where}."
            picks.append(("vllm", "vLLM", why))
            why = f"{figures}: SGLang is the pick when requests share long prompt prefixes."
            picks.append(("sglang", "SGLang", why))
            why = f"{figures}: llama.cpp with CUDA is the best fit for a single user and GGUF."
            picks.append(("llama.cpp", "llama.cpp (CUDA)", why))
        else:
            limit = (
                "vLLM and SGLang need Linux or WSL"
                if not linux
                else f"vLLM and SGLang need compute capability 7.0 or newer{cc_text}"
            )
            why = f"{figures}: llama.cpp with CUDA runs GGUF models here ({limit})."
            picks.append(("llama.cpp", "llama.cpp (CUDA)", why))
    elif amd is not None:
        figures = _gpu_figures(amd)
        backend = "ROCm or Vulkan" if linux else "Vulkan"
        why = f"{figures}: Ollama supports AMD GPUs out of the box; {_OLLAMA_WHY}"
        picks.append(("ollama", "Ollama", why))
        why = f"{figures}: llama.cpp runs GGUF models on it through {backend}."
        picks.append(("llama.cpp", f"llama.cpp ({backend})", why))
        if linux:
            why = f"{figures}: vLLM on ROCm, for many concurrent users (needs ROCm installed)."
            picks.append(("vllm", "vLLM (ROCm)", why))
    else:
        picks.append(("llama.cpp", "llama.cpp (CPU)", _cpu_reason(cpu, memory)))

    if not any(engine == "ollama" for engine, _, _ in picks):
        picks.append(("ollama", "Ollama", f"Ollama is {_OLLAMA_WHY}"))
    return [
        EngineRecommendation(engine=engine, title=title, rank=rank, reason=reason)
        for rank, (engine, title, reason) in enumerate(picks, start=1)
    ]


def _cpu_reason(cpu: CpuInfo, memory: MemoryInfo) -> str:
    figures = (
        f"{cpu.brand} with {cpu.logical_cores} thread{'s' if cpu.logical_cores != 1 else ''} "
        f"and {gib(memory.total_bytes)} RAM, "
        "no usable GPU"
    )
    if cpu.arch == "x86_64":
        if "avx2" in cpu.features:
            return f"{figures}: llama.cpp runs GGUF models on the CPU; AVX2 is present."
        if "avx2" in cpu.features_unknown:
            return f"{figures}: llama.cpp runs GGUF models on the CPU; AVX2 could not be checked."
        return (
            f"{figures}: llama.cpp runs GGUF models on the CPU, but this CPU lacks AVX2, so "
            "prebuilt x64 builds stop with 'illegal instruction'; use a build without AVX2 "
            "(slower)."
        )
    if "dotprod" in cpu.features:
        return f"{figures}: llama.cpp runs GGUF models with NEON and dot-product instructions."
    return f"{figures}: llama.cpp runs GGUF models on the CPU (no dot-product instructions)."
