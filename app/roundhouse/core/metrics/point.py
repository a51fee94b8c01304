"""One instance's figures at one tick, from the counters, the process and the engine."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.metrics import SERIES, InstanceMetrics
from roundhouse.core.gateway.live import InstanceLive
from roundhouse.core.metrics.engine_figures import kv_usage, ollama_vram
from roundhouse.core.metrics.flags import LOW_BANDWIDTH_USE, bandwidth_use, cpu_fallback
from roundhouse.core.metrics.process import ProcessReading


@dataclass
class Previous:
    """Counters at the last tick, to turn totals into rates."""

    t: float
    output_tokens: int
    prompt_tokens: int


@dataclass(frozen=True)
class Inputs:
    info: InstanceInfo
    t: float
    live: InstanceLive | None
    previous: Previous | None
    running: int
    queued: int
    process: ProcessReading
    vram_bytes: int | None
    figures: dict[str, float]
    inventory: HardwareInventory | None
    # (prompt, generation) tokens/s from the engine's /metrics (vLLM, SGLang).
    scraped_rates: tuple[float | None, float | None] = (None, None)


def build_point(x: Inputs) -> InstanceMetrics:
    live = x.live
    out = live.output_tokens if live else 0
    prompt = live.prompt_tokens if live else 0
    output_tps = prompt_tps = 0.0
    if x.previous is not None and x.t > x.previous.t:
        dt = x.t - x.previous.t
        # Never below 0: the live count is corrected down when a reply's usage arrives.
        output_tps = max(0.0, (out - x.previous.output_tokens) / dt)
        prompt_tps = max(0.0, (prompt - x.previous.prompt_tokens) / dt)
    ttft_ms = itl_ms = engine_prompt = engine_output = None
    if live is not None:
        ttfts, itls = live.recent()
        ttft_ms = statistics.median(ttfts) * 1000 if ttfts else None
        itl_ms = statistics.median(itls) * 1000 if itls else None
        prompts, outputs = live.recent_engine_rates()
        engine_prompt = statistics.median(prompts) if prompts else None
        engine_output = statistics.median(outputs) if outputs else None
    # Engines whose replies carry no timings say it in their /metrics instead.
    scraped_prompt, scraped_output = x.scraped_rates
    engine_prompt = scraped_prompt if engine_prompt is None else engine_prompt
    engine_output = scraped_output if engine_output is None else engine_output
    vram = x.vram_bytes
    if not vram:
        # NVML could not attribute it (not NVIDIA, or another process holds it): the
        # engine's own word, where it gives one (Ollama's /api/ps).
        told = ollama_vram(x.figures)
        vram = told if told is not None else vram
    bandwidth = bandwidth_use(x.info, output_tps, x.inventory)
    return InstanceMetrics(
        instance=x.info.id,
        engine=x.info.engine.value,
        model=x.info.models[0] if x.info.models else x.info.model,
        t=x.t,
        output_tps=output_tps,
        prompt_tps=prompt_tps,
        running=x.running,
        queued=x.queued,
        ttft_ms=ttft_ms,
        itl_ms=itl_ms,
        requests=live.requests if live else 0,
        output_tokens=out,
        prompt_tokens=prompt,
        engine_prompt_tps=engine_prompt,
        engine_output_tps=engine_output,
        cpu_percent=x.process.cpu_percent,
        rss_bytes=x.process.rss_bytes,
        mapped_bytes=x.process.mapped_bytes,
        vram_bytes=vram,
        kv_usage=kv_usage(x.figures),
        engine_figures=x.figures,
        bandwidth_use=bandwidth.use,
        bandwidth_note=bandwidth.note,
        bandwidth_low=bandwidth.use is not None and bandwidth.use < LOW_BANDWIDTH_USE,
        cpu_fallback=cpu_fallback(x.info, vram, x.inventory),
    )


def row_of(point: InstanceMetrics) -> list[float]:
    """The point's SERIES as floats, NaN for None (the ring's storage)."""
    row = []
    for name in SERIES:
        value = getattr(point, name)
        row.append(math.nan if value is None else float(value))
    return row
