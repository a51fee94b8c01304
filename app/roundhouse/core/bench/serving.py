"""The context of the instance a benchmark runs against, for the advice on context failures."""

from __future__ import annotations

import logging

import aiohttp

from roundhouse.api.bench import ServingContext
from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo

log = logging.getLogger(__name__)
# Asked once before a run: a slow engine must not hold the benchmark's start.
ASK_TIMEOUT_S = 3.0


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def serving_context(info: InstanceInfo, key: str | None) -> ServingContext:
    """What the instance was started with, and for llama-server what it runs (`/props`: the
    context of one slot and the number of slots, also where both were left to the engine)."""
    options = info.options
    context = ServingContext(
        ctx_size=options.ctx_size or None if options is not None else None,
        parallel=options.parallel if options is not None else None,
    )
    if info.engine is not EngineId.LLAMA_CPP:
        return context
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = aiohttp.ClientTimeout(total=ASK_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout, trust_env=False) as session,
            session.get(
                info.url.rstrip("/") + "/props", headers=headers, allow_redirects=False
            ) as response,
        ):
            props = await response.json(content_type=None) if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.info("benchmark: asking %s for /props failed: %r", info.id, exc)
        return context
    if not isinstance(props, dict):
        return context
    settings = props.get("default_generation_settings")
    slot_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return context.model_copy(
        update={"slot_ctx": slot_ctx, "slots": _positive(props.get("total_slots"))}
    )
