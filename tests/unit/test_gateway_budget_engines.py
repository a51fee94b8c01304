"""The context budget on vLLM and SGLang, asked of their strict stand-ins (real processes):
the context is `max_model_len` from `/v1/models`, asked once; vLLM counts a chat or a prompt
with `/tokenize`, SGLang a prompt with `/v1/tokenize` and a chat not at all; the error names
both numbers and the engine's own setting. Ollama and mlx_lm.server are not asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.budget import ContextBudget
from roundhouse.core.gateway.budget_engines import ENGINES
from roundhouse.core.gateway.errors import ContextTooLong
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS
from roundhouse.core.gateway.upstream import Upstream
from tests.fakes.openai_engines import EngineStandin, start_standin
from tests.processes import free_port
from tests.unit.builders import ready_instance

CONTEXT = 1000
# The stand-ins count one token per word, plus one per chat message.
WORDS = 900


def _size(body: dict[str, Any]) -> int:
    return len(json.dumps(body).encode())


def _chat(words: int, **extra: Any) -> dict[str, Any]:
    return {"model": "alias", "messages": [{"role": "user", "content": "w " * words}], **extra}


def _prompt(words: int, **extra: Any) -> dict[str, Any]:
    return {"model": "alias", "prompt": "w " * words, **extra}


@pytest.fixture(params=[EngineId.VLLM, EngineId.SGLANG])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EngineStandin]:
    port = free_port()
    record = str(tmp_path / "requests.jsonl")
    common = ("--load-seconds", "0", "--record-requests", record)
    if request.param == EngineId.VLLM:
        args: tuple[str, ...] = ("serve", "org/Tiny", "--max-model-len", str(CONTEXT), *common)
        standin = start_standin("vllm", tmp_path, port, *args)
    else:
        args = ("--model-path", "org/Tiny", "--context-length", str(CONTEXT), *common)
        standin = start_standin("sglang", tmp_path, port, *args)
    try:
        yield standin
    finally:
        standin.stop()


def _usable(standin: EngineStandin) -> int:
    """The context one request may use: SGLang refuses a total that reaches its length."""
    return CONTEXT - 1 if standin.personality == "sglang" else CONTEXT


def _asked(standin: EngineStandin) -> list[str]:
    """The POST paths the stand-in was sent, in order."""
    lines = (standin.state / "requests.jsonl").read_text().splitlines()
    return [json.loads(line)["path"] for line in lines if "path" in json.loads(line)]


Check = Callable[[str, dict[str, Any]], Awaitable[None]]


def _against(
    standin: EngineStandin, test: Callable[[Check, ContextBudget, InstanceInfo], Awaitable[None]]
) -> InstanceInfo:
    engine = EngineId(standin.personality)
    options = InstanceOptions(model="org/Tiny", ctx_size=CONTEXT)
    info = ready_instance("e1", engine=engine, port=standin.port, options=options)

    async def main() -> None:
        upstream = Upstream()

        async def headers(_info: InstanceInfo) -> dict[str, str]:
            return {"content-type": "application/json"}

        budget = ContextBudget(upstream, headers)

        async def check(api: str, body: dict[str, Any]) -> None:
            await budget.check(info, "org/Tiny", api, body, _size(body))

        try:
            await test(check, budget, info)
        finally:
            await upstream.aclose()

    asyncio.run(main())
    return info


def test_the_context_is_max_model_len_and_a_small_request_is_not_counted(
    engine: EngineStandin,
) -> None:
    async def test(check: Check, budget: ContextBudget, info: InstanceInfo) -> None:
        assert await budget.context(info, "org/Tiny") == _usable(engine)
        await check(CHAT, _chat(3, max_tokens=10))
        await check(COMPLETIONS, _prompt(3, max_tokens=10))

    _against(engine, test)
    assert _asked(engine) == []


def test_a_completion_over_the_budget_is_refused_on_the_engines_count(
    engine: EngineStandin,
) -> None:
    flag = "--max-model-len" if engine.personality == "vllm" else "--context-length"
    usable = _usable(engine)

    async def test(check: Check, budget: ContextBudget, info: InstanceInfo) -> None:
        with pytest.raises(ContextTooLong) as caught:
            await check(COMPLETIONS, _prompt(WORDS, max_tokens=usable - WORDS + 1))
        error = caught.value
        assert (error.prompt_tokens, error.context, error.param) == (WORDS, usable, "max_tokens")
        for words in (f"{WORDS} prompt tokens", f"{usable} tokens of context", flag, "ctx_size"):
            assert words in error.message, (words, error.message)
        # Exactly full fits; no max_tokens is checked on the prompt alone.
        await check(COMPLETIONS, _prompt(WORDS, max_tokens=usable - WORDS))
        await check(COMPLETIONS, _prompt(WORDS))
        with pytest.raises(ContextTooLong) as alone:
            await check(COMPLETIONS, _prompt(usable + 1))
        assert (alone.value.prompt_tokens, alone.value.param) == (usable + 1, "prompt")

    _against(engine, test)
    path = "/tokenize" if engine.personality == "vllm" else "/v1/tokenize"
    assert _asked(engine) == [path] * 4


def test_vllm_renders_and_counts_a_chat_and_sglang_leaves_it_to_the_engine(
    engine: EngineStandin,
) -> None:
    over = _chat(WORDS, max_tokens=CONTEXT - WORDS, tools=[])

    async def test(check: Check, budget: ContextBudget, info: InstanceInfo) -> None:
        if engine.personality == "sglang":
            await check(CHAT, over)  # no count: not refused on a guess
            return
        with pytest.raises(ContextTooLong) as caught:
            await check(CHAT, over)
        # The message's words plus one for its turn, as the stand-in renders it.
        assert (caught.value.prompt_tokens, caught.value.param) == (WORDS + 1, "max_tokens")
        await check(CHAT, _chat(WORDS, max_tokens=CONTEXT - WORDS - 1))

    _against(engine, test)
    if engine.personality == "sglang":
        assert _asked(engine) == []
        return
    assert _asked(engine) == ["/tokenize", "/tokenize"]
    lines = (engine.state / "requests.jsonl").read_text().splitlines()
    sent = next(json.loads(line)["body"] for line in lines if "path" in json.loads(line))
    # The template's fields only: no model (the client's name may be an alias), no sampling.
    assert set(json.loads(sent)) == {"messages", "tools"}


def test_an_engine_that_cannot_count_or_say_its_context_refuses_nothing(tmp_path: Path) -> None:
    port = free_port()
    # vLLM before /tokenize existed is played by SGLang's routes here: a chat cannot be
    # counted; an engine that is not there at all says no context.
    standin = start_standin(
        "sglang",
        tmp_path,
        port,
        "--model-path",
        "m",
        "--context-length",
        "10",
        "--load-seconds",
        "0",
    )
    try:
        info = ready_instance("v", engine=EngineId.VLLM, port=port)
        gone = ready_instance("g", engine=EngineId.VLLM, port=free_port())

        async def main() -> None:
            upstream = Upstream()

            async def headers(_info: InstanceInfo) -> dict[str, str]:
                return {}

            budget = ContextBudget(upstream, headers)
            body = _chat(WORDS, max_tokens=1000)
            try:
                await budget.check(info, "m", CHAT, body, _size(body))
                await budget.check(gone, "m", CHAT, body, _size(body))
                assert await budget.context(gone, "m") is None
            finally:
                await upstream.aclose()

        asyncio.run(main())
    finally:
        standin.stop()


def test_the_words_name_each_engines_setting() -> None:
    vllm = ready_instance("v", engine=EngineId.VLLM, options=InstanceOptions(max_model_len=4096))
    assert ENGINES[EngineId.VLLM].how(vllm) == " (ctx_size 4096)"
    assert "--max-model-len" in ENGINES[EngineId.VLLM].setting(vllm)
    assert "--ctx-size N`" in ENGINES[EngineId.VLLM].setting(vllm)
    sglang = ready_instance("s", engine=EngineId.SGLANG, options=InstanceOptions(ctx_size=2048))
    assert ENGINES[EngineId.SGLANG].how(sglang) == (
        " (ctx_size 2048, less the one token SGLang keeps free)"
    )
    assert "--context-length" in ENGINES[EngineId.SGLANG].setting(sglang)
    # Attached, not started by Roundhouse: the server's own flag.
    attached = ready_instance("a", engine=EngineId.VLLM)
    assert ENGINES[EngineId.VLLM].how(attached) == ""
    assert (
        ENGINES[EngineId.VLLM].setting(attached) == "start the server with a larger --max-model-len"
    )
    # Parallel requests do not split a vLLM or SGLang context.
    shared = InstanceOptions(ctx_size=2048, parallel=8)
    assert "parallel" not in ENGINES[EngineId.SGLANG].how(
        ready_instance("p", engine=EngineId.SGLANG, options=shared)
    )
    assert EngineId.MLX not in ENGINES


def test_vllm_is_sent_the_tools_it_will_render() -> None:
    sent: list[dict[str, Any] | None] = []

    async def ask(path: str, payload: dict[str, Any] | None) -> dict[str, Any] | None:
        sent.append(payload)
        return {"count": 7, "max_model_len": CONTEXT, "tokens": list(range(7))}

    body = _chat(3, tools=[{"type": "function"}], tool_choice="none", temperature=0.5)
    vllm = ENGINES[EngineId.VLLM]
    plain = ready_instance("v", engine=EngineId.VLLM, options=InstanceOptions())
    flagged = InstanceOptions(extra_args=("--exclude-tools-when-tool-choice-none",))
    excluding = ready_instance("x", engine=EngineId.VLLM, options=flagged)
    attached = ready_instance("a", engine=EngineId.VLLM)

    async def main() -> list[int | None]:
        return [await vllm.count(info, CHAT, body, ask) for info in (plain, excluding, attached)]

    # By default vLLM renders the tools even with tool_choice "none"; with the flag it drops
    # them; an instance started elsewhere may have either, so it is not counted.
    assert asyncio.run(main()) == [7, 7, None]
    assert sent == [
        {"messages": body["messages"], "tools": body["tools"]},
        {"messages": body["messages"]},
    ]
