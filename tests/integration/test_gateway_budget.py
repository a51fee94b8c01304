"""The context budget through a real daemon and the real llama-server (256 tokens of context,
one slot), with the official `openai` client: a reply asked beyond the context and a prompt
longer than it are refused with both numbers; a request that exactly fits still runs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from openai import OpenAI

from roundhouse.api.instances import InstanceInfo
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving

CONTEXT = 256
MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello."}
]


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    client: OpenAI


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("budget") / "home"
    # The test build reports no build number, so only its own flag says that it stops at
    # the end of its context rather than shifting it (and so may be checked).
    request = llama_cpp(tiny_gguf, ctx_size=CONTEXT, parallel=1, extra_args=("--no-context-shift",))
    with serving(root, request, env=path_with(llama_server_binary)) as (daemon, [info]):
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], client)
        client.close()


def _prompt_tokens(served: Served, messages: object) -> int:
    """The chat's prompt as the engine itself counts it, asked directly with its key."""
    headers = served.daemon.engine_headers(served.instance.id)
    with httpx.Client(base_url=served.instance.url, headers=headers, timeout=30) as engine:
        prompt = engine.post("/apply-template", json={"messages": messages}).json()["prompt"]
        tokens = engine.post(
            "/tokenize", json={"content": prompt, "add_special": True, "parse_special": True}
        ).json()["tokens"]
    return len(tokens)


def test_a_reply_asked_beyond_the_context_is_refused_with_both_numbers(served: Served) -> None:
    prompt_tokens = _prompt_tokens(served, MESSAGES)
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as caught:
            served.client.chat.completions.create(
                model=served.model, messages=MESSAGES, max_tokens=1000, stream=stream
            )
        error = caught.value
        assert error.code == "context_length_exceeded", error.body
        assert error.param == "max_tokens"
        for number in (prompt_tokens, 1000, CONTEXT):
            assert str(number) in error.message, (number, error.message)
        assert "ctx_size" in error.message and "--ctx-size" in error.message


def test_a_prompt_longer_than_the_context_is_refused(served: Served) -> None:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": "hello " * 300}
    ]
    prompt_tokens = _prompt_tokens(served, messages)
    assert prompt_tokens > CONTEXT
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.chat.completions.create(model=served.model, messages=messages)
    error = caught.value
    assert (error.code, error.param) == ("context_length_exceeded", "messages")
    assert str(prompt_tokens) in error.message and str(CONTEXT) in error.message


def test_a_completion_prompt_is_counted_too(served: Served) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.completions.create(model=served.model, prompt="hello " * 300, max_tokens=4)
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "prompt"


def test_a_request_that_exactly_fits_runs(served: Served) -> None:
    room = CONTEXT - _prompt_tokens(served, MESSAGES)
    reply = served.client.chat.completions.create(
        model=served.model, messages=MESSAGES, max_tokens=room
    )
    assert reply.choices[0].message.content is not None
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    small = served.client.chat.completions.create(
        model=served.model, messages=MESSAGES, max_tokens=8
    )
    assert small.usage is not None and small.usage.completion_tokens > 0
