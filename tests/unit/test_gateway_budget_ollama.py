"""The context budget on Ollama, asked of its strict stand-in (a real process): the context is
the loaded model's `context_length` from `/api/ps`; a request that may not fit is counted by
one token generated through Ollama's own API with `truncate: false`, whose refusal says it is
over; and each engine's own words of refusal are read with the numbers they carry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.budget import ContextBudget
from roundhouse.core.gateway.budget_engines import ENGINES, Refusal
from roundhouse.core.gateway.errors import ContextTooLong
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS
from roundhouse.core.gateway.ollama.from_openai import native_chat
from roundhouse.core.gateway.upstream import Upstream
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.processes import free_port
from tests.unit.builders import ready_instance

CONTEXT = 1000  # OLLAMA_CONTEXT_LENGTH for the stand-in: the loaded model's context
MODEL = "tiny:latest"


@pytest.fixture
def ollama(tmp_path: Path) -> Iterator[OllamaStandin]:
    standin = start_standin(
        tmp_path / "ollama", free_port(), env={"OLLAMA_CONTEXT_LENGTH": str(CONTEXT)}
    )
    try:
        yield standin
    finally:
        standin.stop()


def _chat(words: int, **extra: Any) -> dict[str, Any]:
    # The stand-in counts one token per word, plus one per message.
    return {"model": "alias", "messages": [{"role": "user", "content": "w " * words}], **extra}


def _load(standin: OllamaStandin) -> None:
    """Pull the model, then load it as Roundhouse does when it starts it."""
    with httpx.Client(base_url=standin.base_url, timeout=10) as client:
        client.post("/api/pull", json={"model": MODEL, "stream": False}).raise_for_status()
        client.post("/api/generate", json={"model": MODEL}).raise_for_status()


def _run(standin: OllamaStandin, *checks: tuple[str, dict[str, Any]]) -> list[Exception | None]:
    """Each (api, body) checked in turn by one budget; what each raised."""
    info = ready_instance(
        "o", engine=EngineId.OLLAMA, port=standin.port, options=InstanceOptions(ctx_size=CONTEXT)
    )
    outcomes: list[Exception | None] = []

    async def main() -> None:
        upstream = Upstream()

        async def headers(_info: InstanceInfo) -> dict[str, str]:
            return {"content-type": "application/json"}

        budget = ContextBudget(upstream, headers)
        try:
            for api, body in checks:
                size = len(json.dumps(body).encode())
                try:
                    await budget.check(info, MODEL, api, body, size)
                    outcomes.append(None)
                except ContextTooLong as exc:
                    outcomes.append(exc)
        finally:
            await upstream.aclose()

    asyncio.run(main())
    return outcomes


def _generated(standin: OllamaStandin) -> list[str]:
    """The routes Ollama generated on, as its log says them."""
    return [
        line.split('"POST ')[1].split()[0]
        for line in standin.log_text().splitlines()
        if '"POST /api/' in line
    ]


def test_a_model_not_loaded_is_loaded_as_the_request_would_be_then_checked(
    ollama: OllamaStandin,
) -> None:
    with httpx.Client(base_url=ollama.base_url, timeout=10) as client:
        client.post("/api/pull", json={"model": MODEL, "stream": False}).raise_for_status()
    # Nothing loaded, so /api/ps has no context for it yet: the budget loads it, reads the
    # context it got, and counts the request against it.
    (refused,) = _run(ollama, (CHAT, _chat(CONTEXT + 100, max_tokens=10)))
    assert isinstance(refused, ContextTooLong) and refused.context == CONTEXT
    assert _generated(ollama) == ["/api/pull", "/api/generate", "/api/chat"]


def test_a_long_prompt_is_counted_by_ollama_and_refused_over_its_context(
    ollama: OllamaStandin,
) -> None:
    _load(ollama)
    over, fits = _chat(CONTEXT + 100), _chat(CONTEXT - 50, max_tokens=49)
    too_much = _chat(CONTEXT - 50, max_tokens=50)
    small = _chat(3, max_tokens=10)
    refused, passed, reply_over, uncounted = _run(
        ollama, (CHAT, over), (CHAT, fits), (CHAT, too_much), (CHAT, small)
    )
    # Ollama said no to the prompt without its count: the context is named, and the setting.
    assert isinstance(refused, ContextTooLong)
    assert refused.prompt_tokens is None and refused.context == CONTEXT
    assert f"longer than the {CONTEXT} tokens" in refused.message
    assert "OLLAMA_CONTEXT_LENGTH" in refused.message and "ctx_size" in refused.message
    # Counted exactly (the words plus one for the message): 551 + 49 fits, 551 + 50 does not.
    assert passed is None
    assert isinstance(reply_over, ContextTooLong)
    assert (reply_over.prompt_tokens, reply_over.max_tokens) == (CONTEXT - 49, 50)
    assert reply_over.param == "max_tokens"
    assert uncounted is None
    # The pull and load, then a probe for each long request; the short one not counted.
    assert _generated(ollama) == ["/api/pull", "/api/generate", *["/api/chat"] * 3]


def test_a_completion_is_counted_through_generate(ollama: OllamaStandin) -> None:
    _load(ollama)
    body = {"model": "alias", "prompt": "w " * (CONTEXT - 10), "max_tokens": 20}
    (refused,) = _run(ollama, (COMPLETIONS, body))
    assert isinstance(refused, ContextTooLong)
    assert (refused.prompt_tokens, refused.max_tokens) == (CONTEXT - 9, 20)


def test_an_openai_chat_becomes_ollamas_own_as_ollama_converts_it() -> None:
    body = {
        "model": "m",
        "reasoning_effort": "none",
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "messages": [
            {
                "role": "system",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "hm",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"x": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ],
    }
    assert native_chat(body) == {
        "model": "m",
        "tools": body["tools"],
        "think": False,
        "messages": [
            {"role": "system", "content": "a"},
            {"role": "system", "content": "b"},
            {
                "role": "assistant",
                "content": "",
                "thinking": "hm",
                "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}],
            },
            {"role": "tool", "content": "42", "tool_name": "f"},
        ],
    }
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    assert native_chat({"messages": [{"role": "user", "content": [image]}]}) is None
    bad_call = {"function": {"name": "f", "arguments": "{not json"}}
    assert native_chat({"messages": [{"role": "assistant", "tool_calls": [bad_call]}]}) is None


@pytest.mark.parametrize(
    ("engine", "message", "said"),
    [
        (
            EngineId.LLAMA_CPP,
            "request (4476 tokens) exceeds the available context size (4096 tokens), try "
            "increasing it",
            Refusal(4476),
        ),
        (
            EngineId.VLLM,
            "This model's maximum context length is 1000 tokens. However, your request has "
            "1200 input tokens. Please reduce the length of the input messages.",
            Refusal(1200),
        ),
        (
            EngineId.VLLM,
            "This model's maximum context length is 1000 tokens. However, you requested 1100 "
            "tokens (900 in the messages, 200 in the completion). Please reduce the length of "
            "the messages or completion.",
            Refusal(900, 200),
        ),
        (
            EngineId.SGLANG,
            "The input (1200 tokens) is longer than the model's context length (1000 tokens).",
            Refusal(1200),
        ),
        (
            EngineId.SGLANG,
            "Requested token count exceeds the model's maximum context length of 1000 tokens. "
            "You requested a total of 1100 tokens: 900 tokens from the input messages and 200 "
            "tokens for the completion. Please reduce the number of tokens in the input "
            "messages or the completion to fit within the limit.",
            Refusal(900, 200),
        ),
        (EngineId.OLLAMA, "the input length exceeds the context length", Refusal(None)),
        (
            EngineId.OLLAMA,
            "the prompt is longer than the context length currently available to the model; "
            "shorten the prompt, adjust the context length in settings, or use a model with a "
            "longer context length",
            Refusal(None),
        ),
        (
            EngineId.OLLAMA,
            "request (5000 tokens) exceeds the available context size (4096 tokens), try "
            "increasing it",
            Refusal(5000),
        ),
    ],
)
def test_each_engines_refusal_is_read_with_its_numbers(
    engine: EngineId, message: str, said: Refusal
) -> None:
    assert ENGINES[engine].refused(message) == said
    # Any other error is not a refusal over the context.
    assert ENGINES[engine].refused("model 'x' not found") is None
