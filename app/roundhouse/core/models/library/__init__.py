"""The local model library: the HF cache, the user's folders, LM Studio's and Ollama's models."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roundhouse.core.models.library.facts import FactsCache, GgufProbe, ModelFacts
    from roundhouse.core.models.library.ollama_source import OllamaAccess, default_ollama_access
    from roundhouse.core.models.library.places import (
        LibraryPlaces,
        hub_cache_dir,
        library_places,
        places_from_settings,
    )
    from roundhouse.core.models.library.service import LibraryService

# Each name loads with its module on first use: the daemon reads `places` at start, while the
# service and its libraries (huggingface_hub's API, gguf) load in a thread beside the start.
_MODULE_OF = {
    "FactsCache": "facts",
    "GgufProbe": "facts",
    "ModelFacts": "facts",
    "OllamaAccess": "ollama_source",
    "default_ollama_access": "ollama_source",
    "LibraryPlaces": "places",
    "hub_cache_dir": "places",
    "library_places": "places",
    "places_from_settings": "places",
    "LibraryService": "service",
}

__all__ = [
    "FactsCache",
    "GgufProbe",
    "LibraryPlaces",
    "LibraryService",
    "ModelFacts",
    "OllamaAccess",
    "default_ollama_access",
    "hub_cache_dir",
    "library_places",
    "places_from_settings",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
