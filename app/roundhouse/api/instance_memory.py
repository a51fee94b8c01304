"""Schemas of an instance's memory: what the engine allocated per device, beside the estimate."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.fit import DeviceKind, FitReport


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DeviceMemoryUse(_Frozen):
    """The buffers one device holds, as the engine reported them; sizes in bytes."""

    device: str = Field(description="the engine's name for it: 'CUDA0', 'Metal', 'CPU'")
    kind: DeviceKind
    index: int | None = Field(default=None, description="the GPU's number; None for RAM")
    weights_bytes: int = 0
    kv_bytes: int = Field(default=0, description="KV cache (and recurrent state)")
    compute_bytes: int = Field(default=0, description="compute and output (logits) buffers")
    total_bytes: int = 0


class MemoryUse(_Frozen):
    """What the engine said it allocated when it loaded the model."""

    devices: list[DeviceMemoryUse]
    weights_bytes: int
    kv_bytes: int
    compute_bytes: int
    total_bytes: int
    offloaded_layers: int | None = Field(
        default=None, description="layers the engine put on GPUs (None: it did not say)"
    )
    total_layers: int | None = Field(default=None, description="blocks + 1 for the output")
    requested_layers: int | None = Field(
        default=None, description="the -ngl asked for; None: left to the engine"
    )
    cpu_fallback: bool = Field(
        default=False, description="GPU layers were asked for and none reached a GPU"
    )
    notes: list[str] = []


class InstanceMemory(_Frozen):
    """After a load: the engine's own figures beside the fit estimate for the same options."""

    actual: MemoryUse | None = Field(
        default=None, description="None: the engine did not report its buffers (see notes)"
    )
    estimate: FitReport | None = Field(
        default=None, description="None: no estimate for this model (see notes)"
    )
    notes: list[str] = []
