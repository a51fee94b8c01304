"""The context budget through a real daemon on the engines other than llama-server, with the
official `openai` client: the vLLM stand-in's chat and prompt, and the SGLang stand-in's
prompt, are refused over the context with both numbers and the setting; a request that fits
runs; a chat SGLang cannot count goes to it, and its refusal comes back in the gateway's
words; Ollama's stand-in counts a long prompt through its own API instead of cutting it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from openai import OpenAI

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from tests.daemon_process import DaemonProcess, start_ready
from tests.security.engine_targets import started
from tests.support.standins import daemon_with, sglang_python, vllm_standin

CONTEXT = 1000
WORDS = 900
FLAG = {EngineId.VLLM: "--max-model-len", EngineId.SGLANG: "--context-length"}
TOKENIZE = {EngineId.VLLM: "/tokenize", EngineId.SGLANG: "/v1/tokenize"}
# Ollama's default context when nothing sets OLLAMA_CONTEXT_LENGTH or num_ctx.
OLLAMA_CONTEXT = 4096


@dataclass
class Served:
    engine: EngineId
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    client: OpenAI


@pytest.fixture(scope="module", params=[EngineId.VLLM, EngineId.SGLANG])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    engine: EngineId = request.param
    work = tmp_path_factory.mktemp(f"budget-{engine.value}")
    settings = Settings(models_dir=str(work / "hub"))
    if engine == EngineId.VLLM:
        vllm_standin(work / "bin")
        dirs = [work / "bin"]
    else:
        python = sglang_python(work)
        settings = settings.model_copy(update={"engines": EngineSettings(python_paths=[python])})
        dirs = []
    options = InstanceOptions(model="org/Tiny-Chat", served_name="tiny", ctx_size=CONTEXT)
    with daemon_with(work / "home", settings, dirs) as daemon:
        info = asyncio.run(start_ready(daemon, StartRequest(engine=engine, options=options)))
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        yield Served(engine, daemon, info, "tiny", client)
        client.close()


def _tokens(served: Served, payload: dict[str, object]) -> int:
    """The prompt as the engine itself counts it, asked directly with its key."""
    headers = served.daemon.engine_headers(served.instance.id)
    with httpx.Client(base_url=served.instance.url, headers=headers, timeout=30) as engine:
        answer = engine.post(TOKENIZE[served.engine], json=payload)
        answer.raise_for_status()
        count = answer.json()["count"]
    assert isinstance(count, int)
    return count


def _refused(
    served: Served, caught: pytest.ExceptionInfo[openai.BadRequestError], *numbers: int
) -> str:
    error = caught.value
    assert error.code == "context_length_exceeded", error.body
    for number in numbers:
        assert str(number) in error.message, (number, error.message)
    assert "ctx_size" in error.message and FLAG[served.engine] in error.message, error.message
    return str(error.param)


def _usable(served: Served) -> int:
    """The context one request may use: SGLang refuses a total that reaches its length."""
    return CONTEXT - 1 if served.engine == EngineId.SGLANG else CONTEXT


def test_a_prompt_over_the_context_is_refused_and_one_that_fits_runs(served: Served) -> None:
    prompt = "w " * WORDS
    tokens = _tokens(served, {"prompt": prompt})
    room = _usable(served) - tokens
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as caught:
            served.client.completions.create(
                model=served.model, prompt=prompt, max_tokens=room + 1, stream=stream
            )
        assert _refused(served, caught, tokens, room + 1, _usable(served)) == "max_tokens"
    with pytest.raises(openai.BadRequestError) as alone:
        served.client.completions.create(model=served.model, prompt="w " * (CONTEXT + 5))
    assert _refused(served, alone, CONTEXT + 5, _usable(served)) == "prompt"
    reply = served.client.completions.create(model=served.model, prompt=prompt, max_tokens=room)
    assert reply.usage is not None and reply.usage.prompt_tokens == tokens


def test_a_chat_over_the_context_is_refused_where_the_engine_counts_it(served: Served) -> None:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": "w " * WORDS}
    ]
    if served.engine == EngineId.SGLANG:
        # SGLang counts no chat over HTTP: the request goes on, SGLang refuses it naming the
        # counts, and the gateway says it with the setting, as it says its own refusals.
        with pytest.raises(openai.BadRequestError) as engine_said:
            served.client.chat.completions.create(
                model=served.model, messages=messages, max_tokens=CONTEXT
            )
        # The message's words plus one for its turn, as the stand-in renders it.
        assert _refused(served, engine_said, WORDS + 1, CONTEXT, _usable(served)) == "max_tokens"
        with pytest.raises(openai.BadRequestError) as too_long:
            served.client.chat.completions.create(
                model=served.model, messages=[{"role": "user", "content": "w " * CONTEXT}]
            )
        assert _refused(served, too_long, CONTEXT + 1, _usable(served)) == "messages"
        return
    tokens = _tokens(served, {"messages": messages})
    room = CONTEXT - tokens
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.chat.completions.create(
            model=served.model, messages=messages, max_tokens=room + 1
        )
    assert _refused(served, caught, tokens, room + 1, CONTEXT) == "max_tokens"
    reply = served.client.chat.completions.create(
        model=served.model, messages=messages, max_tokens=room
    )
    assert reply.usage is not None and reply.usage.prompt_tokens == tokens


def test_ollama_counts_a_long_prompt_instead_of_cutting_it(tmp_path: Path) -> None:
    with started(EngineId.OLLAMA, tmp_path) as target:
        client = OpenAI(
            base_url=target.daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60
        )
        with client:
            # Far more words than the loaded context: Ollama's own API, told not to cut it,
            # refuses it, and the gateway says so with the context and the setting.
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model=target.model,
                    messages=[{"role": "user", "content": "w " * (OLLAMA_CONTEXT + 1000)}],
                    max_tokens=4,
                )
            error = caught.value
            assert error.code == "context_length_exceeded", error.body
            assert f"longer than the {OLLAMA_CONTEXT} tokens" in error.message
            assert "OLLAMA_CONTEXT_LENGTH" in error.message
            # Long, but within the context: counted, then served whole.
            words = OLLAMA_CONTEXT - 100
            reply = client.chat.completions.create(
                model=target.model,
                messages=[{"role": "user", "content": "w " * words}],
                max_tokens=4,
            )
            assert reply.usage is not None and reply.usage.prompt_tokens == words + 1
            # Within the context, but not with the reply it asks room for.
            with pytest.raises(openai.BadRequestError) as no_room:
                client.chat.completions.create(
                    model=target.model,
                    messages=[{"role": "user", "content": "w " * words}],
                    max_tokens=200,
                )
            assert str(words + 1) in no_room.value.message and no_room.value.param == "max_tokens"
        with httpx.Client(base_url=target.base_url, timeout=30) as engine:
            loaded = engine.get("/api/ps").json()["models"]
        assert [m["context_length"] for m in loaded] == [OLLAMA_CONTEXT]
