"""Ollama's own figures for the metrics: memory of its loaded models, from /api/ps."""

from __future__ import annotations

from roundhouse.api.ollama import OllamaLoadedModel
from roundhouse.core.engines.ollama_api import OllamaClient
from roundhouse.core.metrics.engine_figures import OLLAMA_LOADED, OLLAMA_SIZE, OLLAMA_VRAM

# /api/ps answers from memory; one that takes longer is busy loading and is asked next time.
PS_TIMEOUT_S = 5.0


def figures_of(loaded: list[OllamaLoadedModel]) -> dict[str, float]:
    """One Ollama serves every model it holds, so the instance's memory is their sum:
    `size_vram` is the GPU's share, which NVML cannot attribute where Ollama's runner is
    not ours to see (macOS, Windows, an Ollama started outside Roundhouse)."""
    return {
        OLLAMA_VRAM: float(sum(m.size_vram for m in loaded)),
        OLLAMA_SIZE: float(sum(m.size for m in loaded)),
        OLLAMA_LOADED: float(len(loaded)),
    }


async def scrape_ollama(url: str) -> dict[str, float]:
    """The figures of the Ollama at `url` (its root); RoundhouseError in words when it does
    not answer."""
    async with OllamaClient(url, timeout_s=PS_TIMEOUT_S) as ollama:
        return figures_of(await ollama.loaded_models())
