"""The local model library: the HF cache, the user's folders, LM Studio's and Ollama's models."""

from roundhouse.core.models.library.facts import FactsCache, GgufProbe, ModelFacts
from roundhouse.core.models.library.ollama_source import OllamaAccess, default_ollama_access
from roundhouse.core.models.library.places import (
    LibraryPlaces,
    hub_cache_dir,
    library_places,
    places_from_settings,
)
from roundhouse.core.models.library.service import LibraryService

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
