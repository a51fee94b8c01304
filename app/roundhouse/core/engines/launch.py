"""Prepare an engine's start: a pure function from the user's choices to a LaunchPlan."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roundhouse.api.engines import DetectedEngine, EngineId, EngineSpec, LaunchParams, LaunchPlan
from roundhouse.core.engines import llamacpp, mlx, ollama, sglang, vllm
from roundhouse.core.engines.common import Extras, check_host, refuse
from roundhouse.core.engines.exo import NOT_STARTED_HERE

Builder = Callable[[EngineSpec, DetectedEngine, LaunchParams, Extras], LaunchPlan]

_BUILDERS: dict[EngineId, Builder] = {
    EngineId.LLAMA_CPP: llamacpp.build,
    EngineId.OLLAMA: ollama.build,
    EngineId.MLX: mlx.build,
    EngineId.VLLM: vllm.build,
    EngineId.SGLANG: sglang.build,
}


# Engines that take no key of any kind (ADR 21): Ollama guards itself against other sites,
# and listens on a port no browser reaches, so that pages served from localhost cannot
# reach it either.
KEYLESS = frozenset({EngineId.OLLAMA})


def keyless(engine: EngineId) -> bool:
    return engine in KEYLESS


def build_launch(
    spec: EngineSpec,
    detected: DetectedEngine,
    params: LaunchParams,
    *,
    api_key: str | None = None,
    hf_hub_cache: str | None = None,
    media_domains: Sequence[str] = (),
) -> LaunchPlan:
    """The argv, environment and URLs that start `detected` with `params`; runs nothing.

    Raises InvalidInputError, in words a user can act on, for choices the engine cannot
    honour. `api_key` only ever reaches the environment; `hf_hub_cache` must exist;
    `media_domains` are the hosts an engine that can be told may fetch media from.
    """
    if detected.id != spec.id:
        raise ValueError(f"detected {detected.id} does not match spec {spec.id}")
    builder = _BUILDERS.get(spec.id)
    if spec.id == EngineId.EXO:
        refuse(NOT_STARTED_HERE)
    if builder is None:
        refuse(f"Roundhouse attaches to an {spec.title} but does not start one.")
    check_host(params)
    extras = Extras(api_key=api_key, hf_hub_cache=hf_hub_cache, media_domains=tuple(media_domains))
    return builder(spec, detected, params, extras)
