"""What a GGUF header says: its metadata and where each tensor lies, with typed lookups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from roundhouse.core.knowledge.gguf.constants import GGMLQuantizationType, GGUFValueType
from roundhouse.core.knowledge.gguf.values import ArrayInfo, GgufValue


@dataclass(frozen=True)
class TensorInfo:
    """One tensor: its name, shape in GGML order (row length first), type and place."""

    name: str
    shape: tuple[int, ...]
    type: GGMLQuantizationType
    offset: int  # from the start of the data section (GgufHeader.data_offset)
    n_elements: int
    n_bytes: int


@dataclass(frozen=True)
class GgufHeader:
    """A parsed header. Arrays longer than values.MAX_LIST are ArrayInfo summaries."""

    version: int
    file_size: int
    metadata: Mapping[str, GgufValue]
    value_types: Mapping[str, GGUFValueType]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int  # where tensor data starts in the file
    # False for the first metadata entries only (read_gguf_metadata): no tensors, no
    # data_offset, and nothing checked past the last entry read.
    complete: bool = True

    @property
    def architecture(self) -> str | None:
        return self.str_value("general.architecture")

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    def arch_key(self, suffix: str) -> str:
        """`<architecture>.<suffix>`, the spelling of every per-model hyperparameter."""
        return f"{self.architecture or ''}.{suffix}"

    def get(self, key: str) -> GgufValue | None:
        return self.metadata.get(key)

    def int_value(self, key: str) -> int | None:
        """An integer value of any width; None when absent or of another type."""
        value = self.metadata.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def float_value(self, key: str) -> float | None:
        value = self.metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def str_value(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None

    def int_list(self, key: str) -> list[int] | None:
        """A list of integers (such as per-layer head counts); None for anything else."""
        value = self.metadata.get(key)
        if not isinstance(value, list):
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return None
        return [int(v) for v in value]  # type: ignore[arg-type]

    def array_length(self, key: str) -> int | None:
        """The length of an array value, kept or summarized."""
        value = self.metadata.get(key)
        if isinstance(value, ArrayInfo):
            return value.length
        return len(value) if isinstance(value, list) else None
