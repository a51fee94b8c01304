"""Schemas of "will it fit": the options of a fit estimate, the verdict and its breakdown."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from roundhouse.api.engines import InstanceOptions

MIB = 1024**2


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FitEngine(StrEnum):
    """The engines a fit is estimated for (the values are the engines' catalog ids)."""

    LLAMA_CPP = "llama.cpp"
    OLLAMA = "ollama"
    MLX = "mlx"
    VLLM = "vllm"
    SGLANG = "sglang"


class CacheType(StrEnum):
    """Element types of the KV cache, as llama.cpp's `--cache-type-k/-v` name them."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    Q8_0 = "q8_0"
    Q5_1 = "q5_1"
    Q5_0 = "q5_0"
    Q4_1 = "q4_1"
    Q4_0 = "q4_0"
    IQ4_NL = "iq4_nl"


UNQUANTIZED_CACHE_TYPES = frozenset({CacheType.F32, CacheType.F16, CacheType.BF16})


class FitOptions(_Frozen):
    """How the model would be run; every field has the engines' usual default."""

    engine: FitEngine | None = Field(
        default=None,
        description="None: llama.cpp for GGUF, mlx for MLX, mlx on Apple or vLLM elsewhere "
        "for safetensors",
    )
    context_length: int | None = Field(
        default=None,
        ge=1,
        description="tokens one request may hold (per parallel slot); None: the model's "
        "trained context, at most 8192. llama-server's -c is this x n_parallel",
    )
    n_parallel: int = Field(default=1, ge=1, le=256, description="requests served at once")
    cache_type_k: CacheType = CacheType.F16
    cache_type_v: CacheType = CacheType.F16
    flash_attention: bool = Field(
        default=True, description="llama.cpp's -fa (auto turns it on where the GPU has it)"
    )
    ubatch_size: int = Field(default=512, ge=1, description="llama.cpp's -ub")
    kv_unified: bool = Field(
        default=False,
        description="llama.cpp's --kv-unified (on with -np auto): the requests share one "
        "cache of context_length x n_parallel tokens, and attention spans all of it",
    )
    gpu_layers: int | None = Field(
        default=None,
        ge=0,
        description="llama.cpp's -ngl: blocks on the GPU counted from the last, plus one "
        "for the output layer (n_layer + 1 = all); None: as many as fit",
    )
    devices: list[int] | None = Field(
        default=None,
        description="indices of the GPUs to use; None: every NVIDIA, AMD and Apple GPU of "
        "one vendor; []: the CPU only",
    )
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="vLLM/SGLang: the share of each GPU they take"
    )
    margin_bytes: int = Field(
        default=512 * MIB, ge=0, description="kept free on every device, for what we miss"
    )
    n_cpu_moe: int = Field(
        default=0,
        ge=0,
        description="llama.cpp's --n-cpu-moe: the expert weights of the first N blocks stay "
        "in RAM (n_layer or more: --cpu-moe, every block's)",
    )
    draft_bytes: int = Field(
        default=0,
        ge=0,
        description="a draft model's weights and cache, on the first GPU used (llama.cpp's "
        "-ngld default), else in RAM",
    )
    adapter_bytes: int = Field(
        default=0, ge=0, description="LoRA adapters, placed with the blocks they change"
    )

    @model_validator(mode="after")
    def _quantized_v_needs_flash_attention(self) -> Self:
        if self.cache_type_v not in UNQUANTIZED_CACHE_TYPES and not self.flash_attention:
            raise ValueError(
                f"a {self.cache_type_v} V cache needs flash attention: turn flash attention "
                "on or keep the V cache in f16"
            )
        return self


class FitVerdict(StrEnum):
    FULL_GPU = "full_gpu"
    # Some blocks on the GPU(s), the rest on the CPU: runs, slower.
    PARTIAL_OFFLOAD = "partial_offload"
    CPU_ONLY = "cpu_only"
    DOES_NOT_FIT = "does_not_fit"


class DeviceKind(StrEnum):
    GPU = "gpu"
    CPU = "cpu"


class DeviceFit(_Frozen):
    """What one device would hold, against what it has free; sizes in bytes."""

    label: str = Field(description='"GPU 0 (NVIDIA GeForce RTX 4090)" or "RAM"')
    kind: DeviceKind
    index: int | None = Field(default=None, description="the GPU's index; None for RAM")
    layers: int = Field(default=0, description="model blocks placed here")
    weights_bytes: int
    kv_bytes: int
    compute_bytes: int = Field(description="the engine's work buffers (activations)")
    footprint_bytes: int = Field(description="the runtime itself: GPU context, libraries")
    total_bytes: int = Field(description="weights + KV + compute + footprint")
    free_bytes: int = Field(description="free now (NVML free; Apple: cap minus use; RAM)")
    capacity_bytes: int | None = Field(
        default=None, description="the device's size (Apple: the Metal working-set cap)"
    )
    margin_bytes: int = 0
    fits: bool
    note: str = ""


class AdviceKind(StrEnum):
    MAX_CONTEXT = "max_context"
    KV_Q8_0 = "kv_q8_0"
    KV_Q4_0 = "kv_q4_0"
    OFFLOAD_LAYERS = "offload_layers"
    FEWER_PARALLEL = "fewer_parallel"
    SMALLER_QUANT = "smaller_quant"
    FREE_MEMORY = "free_memory"
    GPU_MEMORY_UTILIZATION = "gpu_memory_utilization"
    RAISE_GPU_LIMIT = "raise_gpu_limit"
    OTHER_ENGINE = "other_engine"
    CPU_MOE = "cpu_moe"


class FitAdvice(_Frozen):
    """One change that makes the model fit (better), in words and as a value to apply."""

    kind: AdviceKind
    text: str
    value: int | str | None = Field(
        default=None,
        description="max_context: tokens; kv_*: the cache type; offload_layers: -ngl; "
        "smaller_quant: a quantization name; free_memory: bytes missing; "
        "gpu_memory_utilization: a fraction as text; raise_gpu_limit: MiB; cpu_moe: the "
        "blocks whose experts stay in RAM (--n-cpu-moe)",
    )


class FitReport(_Frozen):
    """The estimate: a verdict, where everything goes, and what would make it fit."""

    verdict: FitVerdict
    engine: FitEngine
    summary: str = Field(description='"Fits on the GPU: 6.1 GiB of 23.6 GiB free."')
    context_length: int = Field(description="per request, as estimated")
    n_parallel: int
    gpu_layers: int = Field(description="llama.cpp's -ngl for this placement (0: CPU only)")
    total_layers: int = Field(description="blocks + 1 for the output layer")
    devices: list[DeviceFit]
    weights_bytes: int
    kv_bytes: int
    kv_bytes_per_token: int = Field(description="all layers, at this cache type")
    compute_bytes: int
    total_bytes: int = Field(description="memory the model needs in all (unified: once)")
    missing_bytes: int = Field(default=0, description="does_not_fit: how much is short")
    advice: list[FitAdvice] = []
    assumptions: list[str] = []


class FitQuery(_Frozen):
    """What to estimate: one choice of a Hub repository, or a model of the local library."""

    repo: str | None = Field(default=None, description="a Hub repository id")
    revision: str = Field(default="main", max_length=256)
    group: str | None = Field(
        default=None,
        description="a file choice of that repo ('Q4_K_M'); None: the largest that fits fully "
        "on the GPU(s), else the smallest",
    )
    library_id: str | None = Field(default=None, description="a model of the local library")
    path: str | None = Field(
        default=None,
        description="a GGUF file, or a safetensors/MLX folder, on the daemon's machine",
    )
    options: FitOptions = FitOptions()
    instance: InstanceOptions | None = Field(
        default=None,
        description="size it as an instance started with these options would run "
        "(context, slots, cache types, GPU layers); replaces `options`",
    )

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if sum(t is not None for t in (self.repo, self.library_id, self.path)) != 1:
            raise ValueError(
                "name one of a Hub repository (repo), a library model (library_id) or a file (path)"
            )
        return self


class ModelFit(_Frozen):
    """A fit estimate for a named model."""

    target: str = Field(description="what was estimated: 'org/repo Q4_K_M' or a library name")
    group: str | None = Field(default=None, description="the file choice estimated")
    size_bytes: int = Field(default=0, ge=0, description="bytes of its files")
    report: FitReport


def start_context(report: FitReport) -> tuple[int, str]:
    """The context per slot to start with, and why when it is not the estimate's first choice
    (the estimate says it does not fit: its largest context that fits, when it names one)."""
    if report.verdict != FitVerdict.DOES_NOT_FIT:
        return report.context_length, ""
    for advice in report.advice:
        if advice.kind == AdviceKind.MAX_CONTEXT and isinstance(advice.value, int):
            return advice.value, (
                f" At {report.context_length} tokens it would not fit, so the context is "
                f"lowered to {advice.value}."
            )
    return report.context_length, " It may not load: the start is tried all the same."
