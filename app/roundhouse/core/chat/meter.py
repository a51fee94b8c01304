"""One streamed chat reply's chunks read, and the reply timed and counted as the daemon relays
it to the user."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roundhouse.api.chat import ReplyStats

ENGINE_HEADER = "x-roundhouse-engine"
INSTANCE_HEADER = "x-roundhouse-instance"


@dataclass(frozen=True)
class Chunk:
    """What one `data:` line of an OpenAI chat stream says."""

    content: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def error_message(body: Any) -> str | None:
    """The words of an error body: OpenAI's `{"error": {"message"}}`, a bare `{"error": "..."}`
    or the daemon's problem `{"detail"}`; None when it is none of them."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str) and error:
        return error
    detail = body.get("detail")
    return detail if isinstance(detail, str) and detail else None


def parse_chunk(data: str) -> Chunk:
    """Read one chunk; a line that is not JSON is an error chunk, in words."""
    try:
        body = json.loads(data)
    except ValueError:
        return Chunk(error=f"The gateway sent something that is not JSON: {data[:200]!r}.")
    message = error_message(body)
    if message is not None or not isinstance(body, dict):
        return Chunk(error=message or f"The gateway sent an unexpected event: {data[:200]!r}.")
    content = reasoning = ""
    finish_reason = None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = _text(delta.get("content"))
            # llama.cpp, vLLM and SGLang say reasoning_content; Ollama and others reasoning.
            reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        reason = choice.get("finish_reason")
        finish_reason = reason if isinstance(reason, str) else None
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Chunk(
        content=content,
        reasoning=reasoning,
        finish_reason=finish_reason,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
    )


class ReplyMeter:
    """Times and counts one reply from the moment the request goes out.

    `stats()` answers at any moment, so a reply stopped mid-stream still has its figures.
    """

    def __init__(self, model: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self.model = model
        self._clock = clock
        self.started = clock()
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.ended_at: float | None = None
        self.deltas = 0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.finish_reason: str | None = None
        self.engine: str | None = None
        self.instance: str | None = None

    def start(self) -> None:
        self.started = self._clock()

    def read_headers(self, headers: Mapping[str, str]) -> None:
        self.engine = headers.get(ENGINE_HEADER) or None
        self.instance = headers.get(INSTANCE_HEADER) or None

    def add(self, chunk: Chunk) -> None:
        if chunk.content or chunk.reasoning:
            now = self._clock()
            if self.first_at is None:
                self.first_at = now
            self.last_at = now
            self.deltas += 1
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.prompt_tokens is not None:
            self.prompt_tokens = chunk.prompt_tokens
        if chunk.completion_tokens is not None:
            self.completion_tokens = chunk.completion_tokens

    def end(self) -> None:
        if self.ended_at is None:
            self.ended_at = self._clock()

    def stats(self, *, stopped: bool = False, error: str | None = None) -> ReplyStats:
        ended = self.ended_at if self.ended_at is not None else self._clock()
        # Without a usage chunk (a stopped reply, an engine that sends none), each chunk
        # carrying text counts as one token: what llama.cpp, vLLM and Ollama stream.
        tokens = self.completion_tokens if self.completion_tokens is not None else self.deltas
        rate = None
        if self.first_at is not None and self.last_at is not None and tokens > 1:
            span = self.last_at - self.first_at
            # The first token's time is the TTFT; the rate is of the tokens after it.
            rate = round((tokens - 1) / span, 2) if span > 0 else None
        return ReplyStats(
            model=self.model,
            engine=self.engine,
            instance=self.instance,
            ttft_ms=round((self.first_at - self.started) * 1000, 2)
            if self.first_at is not None
            else None,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=tokens,
            tokens_per_s=rate,
            # To the TTFT's resolution (10 µs): a short reply relayed in process may end
            # within a millisecond of its first token.
            duration_s=round(ended - self.started, 5),
            finish_reason=self.finish_reason,
            stopped=stopped,
            error=error,
        )
