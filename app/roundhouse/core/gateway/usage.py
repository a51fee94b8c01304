"""Tokens and requests counted per instance from the usage the engines report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class InstanceUsage:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Requests per API and path taken ("anthropic/translated", "openai/passthrough"...).
    by_api: Counter[str] = field(default_factory=Counter)


class UsageCounter:
    """In memory for now: counts since the daemon started, per instance id."""

    def __init__(self) -> None:
        self._by_instance: dict[str, InstanceUsage] = {}

    def record(self, instance_id: str, usage: Any, api: str = "openai/passthrough") -> None:
        """Count one request of `api`, with its tokens when `usage` is OpenAI's usage object
        or Anthropic's (an engine passing Anthropic's API through reports it so)."""
        counted = self._by_instance.setdefault(instance_id, InstanceUsage())
        counted.requests += 1
        counted.by_api[api] += 1
        if isinstance(usage, dict):
            counted.prompt_tokens += prompt_tokens(usage)
            counted.completion_tokens += _int(
                usage.get("completion_tokens", usage.get("output_tokens"))
            )

    def get(self, instance_id: str) -> InstanceUsage:
        return self._by_instance.get(instance_id, InstanceUsage())

    def all(self) -> dict[str, InstanceUsage]:
        return dict(self._by_instance)


def prompt_tokens(usage: dict[str, Any]) -> int:
    """The prompt's tokens: OpenAI's prompt_tokens, or Anthropic's input_tokens plus the
    tokens it says were read from or written to the prompt cache (counted apart there)."""
    if "prompt_tokens" in usage:
        return _int(usage["prompt_tokens"])
    return sum(
        _int(usage.get(k))
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )


def _int(value: Any) -> int:
    # bool is an int subclass; a token count never is one.
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
