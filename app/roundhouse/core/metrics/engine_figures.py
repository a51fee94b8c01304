"""The engines' own figures, scraped from their /metrics every few seconds while watched."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.metrics.scraped_rates import ScrapedRates

log = logging.getLogger(__name__)

# While someone watches (a stream is open, or the figures were asked for lately): often.
WATCHED_EVERY_S = 5.0
# Otherwise seldom: a scrape costs the engine as much as it costs us.
IDLE_EVERY_S = 60.0

# Share of the KV cache in use, 0..1, by the name each engine gives it.
_KV_NAMES = (
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
)

Scrape = Callable[[str], Awaitable[dict[str, float]]]

# Ollama's /api/ps, summed over the models it holds (see ollama_figures.py).
OLLAMA_VRAM = "ollama:size_vram_bytes"
OLLAMA_SIZE = "ollama:size_bytes"
OLLAMA_LOADED = "ollama:models_loaded"


def kv_usage(figures: dict[str, float]) -> float | None:
    for name in _KV_NAMES:
        if name in figures:
            return figures[name]
    return None


def ollama_vram(figures: dict[str, float]) -> int | None:
    """Bytes of GPU memory Ollama says its loaded models hold; None when it did not say."""
    value = figures.get(OLLAMA_VRAM)
    return None if value is None else int(value)


class EngineFigures:
    """Last figures per instance; `due` says when to scrape again, `refresh` does it."""

    def __init__(self, scrape: Scrape) -> None:
        self._scrape = scrape
        self._figures: dict[str, dict[str, float]] = {}
        self._at: dict[str, float] = {}
        # Instances whose engine serves no metrics, or refused them: not asked again.
        self._none: set[str] = set()
        # vLLM's and SGLang's own tokens/s, from one scrape to the next.
        self.rates = ScrapedRates()
        self._task: asyncio.Task[None] | None = None

    def get(self, instance_id: str) -> dict[str, float]:
        return self._figures.get(instance_id, {})

    def refresh_due(self, ids: list[str], now: float, watched: bool) -> None:
        """Scrape in the background the instances due, unless a scrape still runs."""
        if self._task is not None and not self._task.done():
            return
        every = WATCHED_EVERY_S if watched else IDLE_EVERY_S
        due = [i for i in ids if i not in self._none and now - self._at.get(i, -every) >= every]
        if not due:
            return
        for i in due:
            self._at[i] = now
        self._task = asyncio.create_task(self._refresh(due), name="engine-metrics")

    async def _refresh(self, ids: list[str]) -> None:
        for instance_id in ids:
            try:
                figures = await self._scrape(instance_id)
                self._figures[instance_id] = figures
                self.rates.update(instance_id, figures)
            except NotFoundError:
                # The engine serves no metrics: the gateway's view stands alone.
                self._none.add(instance_id)
            except RoundhouseError as exc:
                # Off, or not answering now (still loading): asked again when next due.
                log.debug("No engine metrics for %s: %s", instance_id, exc)
                self._figures.pop(instance_id, None)
                self.rates.lost(instance_id)

    def forget_except(self, present: set[str]) -> None:
        for store in (self._figures, self._at):
            for gone in store.keys() - present:
                del store[gone]
        self._none &= present
        self.rates.forget_except(present)

    async def aclose(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task, reraise=False)
            self._task = None
