"""Schemas of the engine catalog, engines found on this machine, and prepared launches."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EngineId(StrEnum):
    LLAMA_CPP = "llama.cpp"
    OLLAMA = "ollama"
    MLX = "mlx"
    VLLM = "vllm"
    SGLANG = "sglang"
    # A server Roundhouse attaches to but does not run (LM Studio, Jan, a remote machine).
    OPENAI_COMPATIBLE = "openai"
    # exo's cluster API (Macs sharing one model); attached, never installed or started.
    EXO = "exo"


class ModelFormat(StrEnum):
    GGUF = "gguf"
    SAFETENSORS = "safetensors"
    MLX = "mlx"
    OLLAMA = "ollama"


class SupportLevel(StrEnum):
    SUPPORTED = "supported"
    # Installs and runs, but is not what the engine is built for (mlx[cpu] on Linux).
    EXPERIMENTAL = "experimental"


class StopMethod(StrEnum):
    # SIGTERM (CTRL_BREAK on Windows), wait, then kill the process tree.
    SIGNAL = "signal"
    # Nothing to stop: Roundhouse only attached to it.
    DETACH = "detach"


class LaunchStyle(StrEnum):
    EXECUTABLE = "executable"
    PYTHON_MODULE = "python-module"
    ATTACH = "attach"


class Platform(_Frozen):
    os: Literal["Darwin", "Linux", "Windows"] = Field(description="as platform.system()")
    arch: Literal["x86_64", "arm64", "any"]
    support: SupportLevel = SupportLevel.SUPPORTED
    note: str | None = None


class ReadinessProbe(_Frozen):
    """How to tell that a started engine serves: poll `path` until `ready_status`."""

    path: str
    ready_status: int = 200
    # Answers that mean "alive, still loading" (llama-server: 503 while the model loads).
    loading_statuses: list[int] = []
    # vLLM opens its port only once the model is loaded.
    refused_while_loading: bool = False
    # Answers that mean "the model failed to load and will not" while the process lives on
    # (mlx_lm.server: 503).
    failed_statuses: list[int] = []
    # Text the ready answer must contain (Ollama's "Ollama is running").
    expect_text: str | None = None


class InstallPlace(_Frozen):
    """A usual install location; `path` may hold ~, %LOCALAPPDATA% and the like."""

    os: Literal["Darwin", "Linux", "Windows"]
    path: str
    label: str


class InstallerLink(_Frozen):
    """Where a person downloads an engine's own installer for one OS."""

    os: Literal["Darwin", "Linux", "Windows"]
    url: str
    label: str


class PipRequirement(_Frozen):
    """One requirement `pip install` gets when Roundhouse makes the engine's environment."""

    spec: str = Field(description='as pip takes it: "mlx-lm", "mlx[cpu]"')
    os: Literal["Darwin", "Linux", "Windows"] | None = Field(
        default=None, description="only on this OS"
    )


class NativeApi(_Frozen):
    """A client API beside OpenAI's chat that an engine serves itself: the gateway passes
    requests of that API through to it instead of translating them to chat completions."""

    api: str = Field(description="the gateway surface's name: 'anthropic', 'responses'")
    path: str = Field(description="the engine's path for it under its /v1 base: 'messages'")
    since: str = Field(description="the first engine version that serves it, in words")


class EngineSpec(_Frozen):
    """One catalog entry: what the supervisor, detection and launch builders need to know."""

    id: EngineId
    title: str
    homepage: str
    formats: list[ModelFormat]
    platforms: list[Platform]
    launch: LaunchStyle
    default_port: int | None = Field(
        default=None, description="the engine's own default; always pass one"
    )
    port_env: str | None = Field(default=None, description="env var that sets the bind address")
    readiness: ReadinessProbe
    version_path: str | None = None
    models_path: str = "/v1/models"
    metrics_path: str | None = None
    metrics_flag: str | None = Field(default=None, description="flag that turns metrics on")
    metric_names: list[str] = []
    stop: StopMethod
    stop_grace_s: float = 10.0
    executables: list[str] = []
    python_modules: list[str] = Field(default=[], description="run as `python -m MODULE`")
    python_package: str | None = Field(default=None, description="distribution for its version")
    install_places: list[InstallPlace] = []
    options: list[str] = Field(
        default=[], description="the InstanceOptions fields it takes; the rest are refused"
    )
    managed_subdir: str | None = Field(
        default=None, description="folder under Roundhouse's engines dir holding <version>/"
    )
    installers: list[InstallerLink] = Field(
        default=[], description="the engine's own installers, for engines Roundhouse cannot install"
    )
    pip_requirements: list[PipRequirement] = Field(
        default=[], description="what a managed environment gets; empty: python_package alone"
    )
    notes: list[str] = []
    native_apis: list[NativeApi] = Field(
        default=[],
        description="client APIs it serves itself; an instance that answers 404 on one is "
        "translated for from then on (an older build)",
    )


class EngineCatalog(_Frozen):
    engines: list[EngineSpec]

    def spec(self, engine: EngineId) -> EngineSpec:
        for spec in self.engines:
            if spec.id == engine:
                return spec
        raise KeyError(engine)


class FoundBy(StrEnum):
    MANAGED = "managed"
    PATH = "path"
    INSTALL_PLACE = "install-place"
    PYTHON = "python"


class DetectedEngine(_Frozen):
    """An engine found on this machine: an executable, or a module in a chosen Python."""

    id: EngineId
    found_by: FoundBy
    path: str | None = Field(default=None, description="the executable, when there is one")
    python: str | None = Field(default=None, description="the interpreter that runs `module`")
    module: str | None = None
    version: str | None = None
    build_info: str | None = None
    support: SupportLevel = SupportLevel.SUPPORTED
    where: str = Field(description="in words: 'on PATH', 'Ollama.app', 'in /venv/bin/python'")
    notes: list[str] = []
    rpc_server: str | None = Field(
        default=None,
        description="llama.cpp: the rpc-server beside llama-server (builds with GGML_RPC), "
        "which lends this machine's memory to a model split across machines",
    )


class MissingEngine(_Frozen):
    id: EngineId
    why: str
    looked_in: list[str] = []
    install_hint: str | None = Field(default=None, description="how to get it, in words")


class EngineDetection(_Frozen):
    found: list[DetectedEngine]
    missing: list[MissingEngine]


class FlashAttention(StrEnum):
    ON = "on"
    OFF = "off"
    AUTO = "auto"


class LoraAdapter(_Frozen):
    """One LoRA adapter applied to the model at start (ADR 48)."""

    path: str = Field(
        min_length=1,
        description="llama.cpp: a LoRA GGUF; vLLM / SGLang: an adapter folder or Hub repo id",
    )
    scale: float = Field(
        default=1.0, ge=-100, le=100, description="llama.cpp: its strength (--lora-scaled)"
    )


class InstanceOptions(_Frozen):
    """What the user chose for one instance; each engine accepts a subset (others refused).

    Saved per model as presets; `LaunchParams` adds where the instance listens.
    """

    model: str | None = Field(
        default=None, description="GGUF file, model folder, HF repo id or Ollama tag"
    )
    model_format: ModelFormat | None = Field(default=None, description="None: from the name")
    ctx_size: int | None = Field(default=None, ge=0)
    n_gpu_layers: int | Literal["auto", "all"] | None = None
    threads: int | None = Field(default=None, ge=1)
    parallel: int | None = Field(default=None, ge=1)
    flash_attn: FlashAttention | None = None
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    served_name: str | None = Field(default=None, description="alias the model is served as")
    metrics: bool = True
    jinja: bool = True
    extra_args: tuple[str, ...] = ()
    # vLLM / SGLang
    tensor_parallel: int | None = Field(default=None, ge=1)
    pipeline_parallel: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1)
    dtype: str | None = None
    mmproj: str | None = Field(
        default=None,
        description="llama.cpp: the vision projector GGUF paired with the model (--mmproj); "
        "None: the one found beside the model, if any",
    )
    # Speculative decoding: MLX, llama.cpp (a GGUF), vLLM and SGLang (ADR 48)
    draft_model: str | None = None
    num_draft_tokens: int | None = Field(default=None, ge=1)
    # Ollama
    max_loaded_models: int | None = Field(default=None, ge=0)
    trust_remote_code: bool = Field(
        default=False,
        description="vLLM / SGLang: run Python code from the model's repository "
        "(--trust-remote-code); only for repositories you trust",
    )
    tool_parser: str | None = Field(
        default=None,
        description="vLLM / SGLang: the tool-call parser (--tool-call-parser); None: chosen "
        "from the model's family, 'none': off",
    )
    reasoning_parser: str | None = Field(
        default=None,
        description="vLLM / SGLang: the reasoning parser (--reasoning-parser); llama.cpp: its "
        "--reasoning-format; None: chosen for the model, 'none': thoughts stay in the content",
    )
    reranking: bool = Field(
        default=False,
        description="llama.cpp: serve /v1/rerank for a reranker model (--reranking); vLLM "
        "and SGLang serve rerank and score for such models on their own",
    )
    memory_report: bool = Field(
        default=False,
        description="llama.cpp: log at info level (-lv 4), where current builds report each "
        "device's buffers after the load; about 30 more log lines per request",
    )
    # llama.cpp RPC: one model split across machines (ADR 36)
    rpc: tuple[str, ...] = Field(
        default=(),
        description="llama.cpp: the rpc-servers (HOST:PORT) that hold part of the model "
        "(--rpc); those on 127.0.0.1 are started and stopped with the instance",
    )
    tensor_split: tuple[float, ...] = Field(
        default=(),
        description="llama.cpp: each device's share of the model (--tensor-split), the RPC "
        "workers first in --rpc order, then this machine's GPUs; empty: by free memory",
    )
    across: tuple[str, ...] = Field(
        default=(),
        description="llama.cpp: paired machines (names or ids) that each lend an rpc-server "
        "for this instance, reached over mutual TLS (ADR 40); asked for at each start",
    )
    # The engines' capabilities in the start dialog (ADR 48)
    n_cpu_moe: Annotated[int, Field(ge=0)] | Literal["all"] | None = Field(
        default=None,
        description="llama.cpp: keep the expert weights of the first N layers in RAM "
        "(--n-cpu-moe N), 'all': of every layer (--cpu-moe); a mixture-of-experts model "
        "then fits a smaller GPU",
    )
    draft_min: int | None = Field(
        default=None, ge=0, description="llama.cpp: the fewest draft tokens used at a time"
    )
    draft_gpu_layers: int | Literal["auto", "all"] | None = Field(
        default=None, description="llama.cpp: the draft model's layers on the GPU (-ngld)"
    )
    thinking: bool | None = Field(
        default=None,
        description="reasoning on or off for every request (llama.cpp: a budget of 0 turns "
        "it off; vLLM: the chat template's enable_thinking); None: the model's default",
    )
    reasoning_budget: int | None = Field(
        default=None,
        ge=-1,
        description="llama.cpp: the most tokens a reply may think for (--reasoning-budget; "
        "-1: no limit, 0: off)",
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None,
        description="llama.cpp: the effort given to the chat template (--reasoning-effort); "
        "vLLM: the template's reasoning_effort",
    )
    lora: tuple[LoraAdapter, ...] = Field(
        default=(),
        max_length=16,
        description="LoRA adapters applied to the model (llama.cpp --lora, vLLM "
        "--enable-lora --lora-modules, SGLang --lora-paths)",
    )


class LaunchParams(InstanceOptions):
    """The options of one instance plus the address it listens on."""

    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)


class LaunchPlan(_Frozen):
    """A prepared start: run `argv` with the inherited environment updated by `env`."""

    engine: EngineId
    argv: tuple[str, ...]
    env: dict[str, str]
    # Names in `env` whose values are secrets: never log or show them.
    secret_env: tuple[str, ...] = ()
    cwd: str | None = None
    host: str
    port: int
    base_url: str
    probe_url: str
    readiness: ReadinessProbe
    models_url: str
    metrics_url: str | None
    expected_model_id: str | None = Field(description="the id /v1/models should list")
    stop: StopMethod
    stop_grace_s: float
    notes: tuple[str, ...] = Field(
        default=(), description="what the builder chose for the user and why, for the log"
    )

    def redacted_env(self) -> dict[str, str]:
        return {k: ("***" if k in self.secret_env else v) for k, v in self.env.items()}


class EnginesOverview(_Frozen):
    """What `GET /api/v1/engines` answers: the catalog and what was found on this machine."""

    catalog: EngineCatalog
    detection: EngineDetection
    detected_at: float = Field(description="seconds since the Unix epoch")
