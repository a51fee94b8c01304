"""The context budget: what a request asks of the context, when it is counted, when it is
refused (only on the engine's own count), and a stand-in llama-server over real HTTP for the
asking: once per instance, with its key, and no refusal when the engine cannot say."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.budget import (
    TEMPLATE_ALLOWANCE,
    Ask,
    ContextBudget,
    asked,
    fits_uncounted,
    refusal,
)
from roundhouse.core.gateway.budget_engines import context_shift_off
from roundhouse.core.gateway.errors import ContextTooLong
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS, EMBEDDINGS
from roundhouse.core.gateway.upstream import Upstream
from roundhouse.server.routes.gateway import _gateway_error
from tests.unit.builders import ready_instance

INFO = ready_instance("i1", options=InstanceOptions(ctx_size=512, parallel=2))


def _size(body: dict[str, Any]) -> int:
    """The body's bytes as an OpenAI client sends it (non-ASCII escaped)."""
    return len(json.dumps(body).encode())


def _chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


# -- what a request asks ------------------------------------------------------------------


def test_a_request_is_bounded_by_its_bytes_and_the_template_allowance() -> None:
    body = _chat("é" * 10, max_tokens=5)
    ask = asked(CHAT, body, _size(body))
    assert ask is not None
    # No tokenizer makes more than one token per byte of the body, escapes and all.
    assert ask.most_prompt_tokens == _size(body) + TEMPLATE_ALLOWANCE
    assert _size(body) >= len(("é" * 10).encode())
    assert (ask.max_tokens, ask.max_tokens_param, ask.prompt_param) == (5, "max_tokens", "messages")


def test_max_completion_tokens_wins_and_unlimited_or_odd_values_are_absent() -> None:
    ask = asked(CHAT, _chat("x", max_tokens=5, max_completion_tokens=7), 100)
    assert ask is not None and (ask.max_tokens, ask.max_tokens_param) == (
        7,
        "max_completion_tokens",
    )
    for odd in (-1, True, "9", 2.5):
        ask = asked(CHAT, _chat("x", n_predict=odd), 100)
        assert ask is not None and ask.max_tokens is None, odd
    ask = asked(COMPLETIONS, {"prompt": "abc", "n_predict": 3}, 100)
    assert ask is not None and (ask.max_tokens, ask.max_tokens_param, ask.prompt_param) == (
        3,
        "n_predict",
        "prompt",
    )


def test_what_the_budget_leaves_to_the_engine() -> None:
    assert asked(EMBEDDINGS, {"input": "x"}, 100) is None
    assert asked(COMPLETIONS, {"prompt": ["a", "b"]}, 100) is None
    assert asked(COMPLETIONS, {"prompt": [1, 2, 3]}, 100) is None
    assert asked(CHAT, {"messages": "not a list"}, 100) is None


def test_a_small_request_passes_uncounted_and_a_large_one_is_counted() -> None:
    ask = Ask("messages", most_prompt_tokens=600, max_tokens=100, max_tokens_param="max_tokens")
    assert fits_uncounted(ask, 700)
    assert not fits_uncounted(ask, 699)


# -- refusing on the count ----------------------------------------------------------------


def _ask(max_tokens: int | None) -> Ask:
    return Ask("messages", 10_000, max_tokens, "max_tokens")


def test_exactly_full_fits_and_one_more_token_is_refused() -> None:
    assert refusal(INFO, _ask(56), prompt_tokens=200, context=256) is None
    error = refusal(INFO, _ask(57), prompt_tokens=200, context=256)
    assert isinstance(error, ContextTooLong)
    assert (error.status, error.code, error.kind, error.param) == (
        400,
        "context_length_exceeded",
        "invalid_request_error",
        "max_tokens",
    )
    assert (error.prompt_tokens, error.max_tokens, error.context) == (200, 57, 256)
    words_said = (
        "200 prompt tokens",
        "max_tokens 57",
        "257",
        "256 tokens of context",
        "at most 56",
        "ctx_size 512 shared by 2 parallel slots",
        "--ctx-size",
    )
    for words in words_said:
        assert words in error.message, (words, error.message)


def test_a_prompt_longer_than_the_context_is_refused_without_max_tokens() -> None:
    assert refusal(INFO, _ask(None), prompt_tokens=256, context=256) is None
    error = refusal(INFO, _ask(None), prompt_tokens=300, context=256)
    assert error is not None and error.param == "messages"
    assert "300 tokens" in error.message and "256 tokens of context" in error.message
    assert "ctx_size" in error.message and "--ctx-size" in error.message


def test_an_instance_started_with_the_models_own_context_names_no_ctx_size() -> None:
    info = ready_instance("x", options=InstanceOptions(ctx_size=0))
    error = refusal(info, _ask(10), prompt_tokens=250, context=256)
    assert error is not None and "(ctx_size" not in error.message


# -- asking a stand-in llama-server -------------------------------------------------------


class Engine:
    """llama-server's /props, /apply-template and /tokenize: one token per character."""

    def __init__(
        self, n_ctx: int | None = 256, key: str = "k", build: str = "b6940-c5023daf"
    ) -> None:
        self.n_ctx = n_ctx
        self.build = build
        self.key = key
        self.calls: list[str] = []
        self.fail: set[str] = set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/props", self._props)
        app.router.add_post("/apply-template", self._template)
        app.router.add_post("/tokenize", self._tokenize)
        return app

    def _allowed(self, request: web.Request) -> web.Response | None:
        self.calls.append(request.path)
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return web.json_response({"error": "Invalid API Key"}, status=401)
        if request.path in self.fail:
            return web.json_response({"error": "no"}, status=500)
        return None

    async def _props(self, request: web.Request) -> web.Response:
        settings = {} if self.n_ctx is None else {"n_ctx": self.n_ctx}
        return self._allowed(request) or web.json_response(
            {"default_generation_settings": settings, "build_info": self.build}
        )

    async def _template(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = "".join(f"<{m['role']}>{m['content']}" for m in body["messages"])
        return self._allowed(request) or web.json_response({"prompt": text})

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body["add_special"] is True and body["parse_special"] is True
        return self._allowed(request) or web.json_response(
            {"tokens": list(range(len(body["content"])))}
        )


Check = Callable[[InstanceInfo, dict[str, Any]], Awaitable[None]]


def _against(
    engine: Engine,
    test: Callable[[Check, InstanceInfo], Awaitable[None]],
    extra_args: tuple[str, ...] = (),
) -> None:
    async def main() -> None:
        runner = web.AppRunner(engine.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        upstream = Upstream()

        async def headers(_info: InstanceInfo) -> dict[str, str]:
            return {"authorization": f"Bearer {engine.key}", "content-type": "application/json"}

        budget = ContextBudget(upstream, headers)
        options = InstanceOptions(ctx_size=256, parallel=1, extra_args=extra_args)
        info = ready_instance("i1", port=port, options=options)

        async def check(target: InstanceInfo, body: dict[str, Any]) -> None:
            await budget.check(target, "tiny", CHAT, body, _size(body))

        try:
            await test(check, info)
        finally:
            await upstream.aclose()
            await runner.cleanup()

    asyncio.run(main())


def test_the_engine_counts_and_a_request_over_the_budget_is_refused() -> None:
    engine = Engine(n_ctx=256)

    async def test(check: Check, info: InstanceInfo) -> None:
        # "<user>" + 100 characters: 106 tokens as this engine counts.
        with pytest.raises(ContextTooLong) as caught:
            await check(info, _chat("a" * 100, max_tokens=151))
        assert (caught.value.prompt_tokens, caught.value.max_tokens) == (106, 151)
        await check(info, _chat("a" * 100, max_tokens=150))
        await check(info, _chat("a" * 100))

    _against(engine, test)
    # The context asked once; each check near the budget counted.
    assert engine.calls.count("/props") == 1
    assert engine.calls.count("/tokenize") == 3


def test_a_request_far_below_the_budget_is_not_counted() -> None:
    engine = Engine(n_ctx=100_000)

    async def test(check: Check, info: InstanceInfo) -> None:
        await check(info, _chat("hello", max_tokens=1000))

    _against(engine, test)
    assert engine.calls == ["/props"]


@pytest.mark.parametrize("failing", ["/props", "/apply-template", "/tokenize"])
def test_nothing_is_refused_when_the_engine_cannot_say(failing: str) -> None:
    engine = Engine(n_ctx=256)
    engine.fail.add(failing)

    async def test(check: Check, info: InstanceInfo) -> None:
        await check(info, _chat("a" * 1000, max_tokens=10_000))

    _against(engine, test)


def test_an_engine_that_does_not_say_its_context_is_asked_once_and_not_checked() -> None:
    engine = Engine(n_ctx=None)

    async def test(check: Check, info: InstanceInfo) -> None:
        await check(info, _chat("a" * 1000, max_tokens=10_000))
        await check(info, _chat("a" * 1000, max_tokens=10_000))

    _against(engine, test)
    assert engine.calls == ["/props"]


def test_a_restarted_instance_is_asked_again_and_other_engines_are_not_asked() -> None:
    engine = Engine(n_ctx=256)

    async def test(check: Check, info: InstanceInfo) -> None:
        await check(info, _chat("a", max_tokens=1))
        await check(info.model_copy(update={"pid": 4242}), _chat("a", max_tokens=1))
        # mlx_lm.server has no context limit: it is asked nothing.
        before = list(engine.calls)
        unchecked = info.model_copy(update={"engine": EngineId.MLX})
        await check(unchecked, _chat("a" * 1000, max_tokens=10_000))
        assert engine.calls == before

    _against(engine, test)
    assert engine.calls.count("/props") == 2


def test_context_shift_is_known_off_from_the_build_or_the_instances_own_flags() -> None:
    plain = ready_instance("s", options=InstanceOptions())
    assert context_shift_off(plain, "b6940-c5023daf")
    assert not context_shift_off(plain, "b6100-0123abc")
    assert not context_shift_off(plain, "b0-unknown")
    assert not context_shift_off(plain, None)
    shifted = ready_instance("s", options=InstanceOptions(extra_args=("--context-shift",)))
    assert not context_shift_off(shifted, "b6940-c5023daf")
    stops = ready_instance("s", options=InstanceOptions(extra_args=("--no-context-shift",)))
    assert context_shift_off(stops, "b0-unknown")
    assert context_shift_off(stops, "b4000-0123abc")
    last = ("--no-context-shift", "--context-shift")
    assert not context_shift_off(
        ready_instance("s", options=InstanceOptions(extra_args=last)), "b6940"
    )
    # Not started by Roundhouse: its flags are unknown.
    assert not context_shift_off(ready_instance("s"), "b6940-c5023daf")


@pytest.mark.parametrize(
    ("build", "extra_args"),
    [("b0-unknown", ()), ("b6100-0123abc", ()), ("b6940-c5023daf", ("--context-shift",))],
)
def test_an_engine_that_may_shift_its_context_is_not_checked(
    build: str, extra_args: tuple[str, ...]
) -> None:
    engine = Engine(n_ctx=256, build=build)

    async def test(check: Check, info: InstanceInfo) -> None:
        await check(info, _chat("a" * 1000, max_tokens=10_000))
        await check(info, _chat("a" * 1000, max_tokens=10_000))

    _against(engine, test, extra_args)
    assert engine.calls == ["/props"]


def test_no_context_shift_in_the_extra_args_is_checked_on_any_build() -> None:
    engine = Engine(n_ctx=256, build="b0-unknown")

    async def test(check: Check, info: InstanceInfo) -> None:
        with pytest.raises(ContextTooLong):
            await check(info, _chat("a" * 100, max_tokens=1000))

    _against(engine, test, ("--no-context-shift",))


def test_the_error_renders_in_openais_shape() -> None:
    error = refusal(INFO, _ask(57), prompt_tokens=200, context=256)
    assert error is not None
    response = asyncio.run(_gateway_error(None, error))  # type: ignore[arg-type]
    assert response.status_code == 400
    body = json.loads(bytes(response.body))["error"]
    assert (body["type"], body["code"], body["param"]) == (
        "invalid_request_error",
        "context_length_exceeded",
        "max_tokens",
    )
    assert "200" in body["message"] and "57" in body["message"]
