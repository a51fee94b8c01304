"""Will it fit: a model's memory on this machine's devices, with a verdict and advice."""

from __future__ import annotations

from roundhouse.core.knowledge.fit.cache import kv_bytes_per_token, kv_layer_bytes
from roundhouse.core.knowledge.fit.compute import llama_cpp_compute
from roundhouse.core.knowledge.fit.estimate import DEFAULT_CONTEXT, estimate_fit
from roundhouse.core.knowledge.fit.placement import Placement, place

__all__ = [
    "DEFAULT_CONTEXT",
    "Placement",
    "estimate_fit",
    "kv_bytes_per_token",
    "kv_layer_bytes",
    "llama_cpp_compute",
    "place",
]
