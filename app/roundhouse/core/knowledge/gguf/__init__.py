"""GGUF headers: a bounded reader (file and HTTP Range), a summary and the model's shape."""

from __future__ import annotations

from roundhouse.core.knowledge.gguf.errors import GgufError, GgufFetchError
from roundhouse.core.knowledge.gguf.header import GgufHeader, TensorInfo
from roundhouse.core.knowledge.gguf.layers import shape_from_gguf, sliding_window
from roundhouse.core.knowledge.gguf.reader import read_gguf_header, read_gguf_metadata
from roundhouse.core.knowledge.gguf.remote import read_gguf_header_url
from roundhouse.core.knowledge.gguf.summary import GgufSummary, summarize
from roundhouse.core.knowledge.gguf.values import ArrayInfo, GgufValue

__all__ = [
    "ArrayInfo",
    "GgufError",
    "GgufFetchError",
    "GgufHeader",
    "GgufSummary",
    "GgufValue",
    "TensorInfo",
    "read_gguf_header",
    "read_gguf_header_url",
    "read_gguf_metadata",
    "shape_from_gguf",
    "sliding_window",
    "summarize",
]
