"""What an instance can read besides text: llama-server's /props says whether it sees images."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import aiohttp

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo, InstanceStatus

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 5.0


async def read_vision(engine: EngineId, url: str, key: str | None) -> bool | None:
    """Whether the engine takes images: llama-server's /props `modalities.vision` (true when
    it loaded a projector); None where the engine does not say (other engines, older builds)."""
    if engine is not EngineId.LLAMA_CPP:
        return None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = aiohttp.ClientTimeout(total=ASK_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout, trust_env=False) as session,
            session.get(
                url.rstrip("/") + "/props", headers=headers, allow_redirects=False
            ) as response,
        ):
            props = await response.json(content_type=None) if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.info("asking %s for /props failed: %r", url, exc)
        return None
    modalities = props.get("modalities") if isinstance(props, dict) else None
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    return vision if isinstance(vision, bool) else None


def model_sees(instances: Iterable[InstanceInfo], model: str) -> bool | None:
    """Whether the ready instances serving `model` read images: True when one does, False
    when each says it does not, None when none serves it or none says (then the engine's
    own answer decides, turned into the same words by the chat)."""
    said = [
        i.vision
        for i in instances
        if i.status is InstanceStatus.READY and model in i.models and i.vision is not None
    ]
    if any(said):
        return True
    return False if said else None
