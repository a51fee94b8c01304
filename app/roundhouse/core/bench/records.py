"""What the runner records of one request: clock readings in seconds from the run's start."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestRecord:
    """One benchmark request as the client saw it; enough for either convention's metrics."""

    index: int
    requested_input: int
    requested_output: int
    # None for the opening burst of a closed loop: sent as fast as the client can, with no
    # schedule to fall behind, so it has no dispatch delay.
    scheduled_s: float | None = 0.0
    sent_s: float = 0.0
    # Every chunk carrying `choices` (vLLM's token events) and every non-empty content chunk
    # (sglang's), as arrival times.
    choice_s: list[float] = field(default_factory=list)
    content_s: list[float] = field(default_factory=list)
    # The last data chunk (vLLM's latency) and the end of the stream (sglang's).
    last_chunk_s: float = 0.0
    end_s: float = 0.0
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None

    @property
    def success(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RequestRecord:
        return cls(**data)
