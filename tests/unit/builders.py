"""Made-up values of the API's types for unit tests: a ready instance, one metrics sample."""

from __future__ import annotations

import dataclasses
from typing import Any

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.metrics.point import Inputs
from roundhouse.core.metrics.process import ProcessReading


def ready_instance(
    instance_id: str = "a",
    *,
    engine: EngineId = EngineId.LLAMA_CPP,
    model: str | None = "/m.gguf",
    origin: InstanceOrigin = InstanceOrigin.STARTED,
    port: int = 8000,
    **extra: Any,
) -> InstanceInfo:
    """An instance serving on loopback at `port`; `extra` sets any other field."""
    url = f"http://127.0.0.1:{port}"
    return InstanceInfo(
        id=instance_id,
        engine=engine,
        model=model,
        origin=origin,
        status=InstanceStatus.READY,
        host="127.0.0.1",
        port=port,
        url=url,
        base_url=f"{url}/v1",
        started_at=0.0,
        **extra,
    )


def idle_inputs(info: InstanceInfo, **changes: Any) -> Inputs:
    """One sample's inputs for an instance serving nothing, read at t=1, with `changes`."""
    idle = Inputs(
        info=info,
        t=1.0,
        live=None,
        previous=None,
        running=0,
        queued=0,
        process=ProcessReading(None, None, None),
        vram_bytes=None,
        figures={},
        inventory=None,
    )
    return dataclasses.replace(idle, **changes)
