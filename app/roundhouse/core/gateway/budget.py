"""The context budget: a request whose prompt, plus the reply it asks room for, cannot fit the
context an instance gives one request is answered with the numbers and the setting to change.

Without it llama-server refuses a prompt longer than its context in its own words, and cuts a
reply that runs out of context short with `finish_reason: "length"`, without a word on why;
vLLM and SGLang refuse in their own words, naming neither the setting nor Roundhouse's.

What is checked, and when (docs/gateway.md, "Context budget"; each engine's answers are in
budget_engines):

- the context of one request is what the engine says, asked once per instance and kept:
  llama-server's `/props` (`default_generation_settings.n_ctx`, the context of one slot),
  vLLM's and SGLang's `/v1/models` (`max_model_len`). The launch options do not settle it:
  llama.cpp rounds the context up, `ctx_size` 0 means the model's own, and with unified KV
  (the default when `parallel` is left to llama-server) every slot may use the whole context;
- a request whose text is small beside that context is not counted at all: no tokenizer makes
  more tokens than the UTF-8 bytes it reads, so when the bytes of the request body (plus
  TEMPLATE_ALLOWANCE for what the chat template adds) and `max_tokens` fit, it passes as it
  is, at no cost;
- any other is counted exactly by the engine's own tokenizer, the way the engine will count
  it (llama-server: `/apply-template` then `/tokenize`; vLLM: `/tokenize`, which renders a
  chat itself; SGLang: `/v1/tokenize`, a completion's prompt only);
- llama-server only where its context shift is known to be off: with it on, the engine drops
  old tokens and goes on, so a long request is not an error (budget_engines.context_shift_off);
- it is refused only on that exact count: when the prompt alone is longer than the context,
  or the prompt plus `max_tokens` (`max_completion_tokens`, `n_predict`) is. A request without
  `max_tokens` is checked on its prompt alone. When the engine cannot say its context or
  count (an older build, a chat on SGLang, media the template cannot render here), the
  request goes on unchecked and the engine answers as before: nothing is refused on a guess.

Ollama (no tokenizer endpoint) and mlx_lm.server (no context limit) are not checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.budget_engines import ENGINES, Asker
from roundhouse.core.gateway.errors import ContextTooLong
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS
from roundhouse.core.gateway.upstream import UPSTREAM_ERRORS, Upstream

log = logging.getLogger(__name__)

# Tokens a chat template may add beyond the messages' JSON (turn markers, a default system
# prompt, words around the tools): only decides whether a request is counted, never refuses.
TEMPLATE_ALLOWANCE = 512
# Asking the engine is quick on this machine; a slow answer leaves the request unchecked.
ASK_TIMEOUT_S = 5.0
# Where a request names the most tokens to generate, in the order engines read them.
MAX_TOKENS_FIELDS = ("max_completion_tokens", "max_tokens", "n_predict")
# An engine that cannot be reached, or answers with what is not JSON.
_ASK_ERRORS: tuple[type[Exception], ...] = (*UPSTREAM_ERRORS, ValueError)


@dataclass(frozen=True)
class Ask:
    """What a request asks of the context, before anything is counted."""

    prompt_param: str
    # No tokenizer makes more tokens of the prompt than this.
    most_prompt_tokens: int
    max_tokens: int | None
    max_tokens_param: str


def asked(api: str, body: dict[str, Any], size: int) -> Ask | None:
    """What `body`, `size` bytes as the client sent it, asks of the context; None when the
    budget does not apply to it."""
    if api == CHAT:
        if not isinstance(body.get("messages"), list):
            return None
        param = "messages"
    elif api == COMPLETIONS:
        # A list of prompts or of token ids is left to the engine.
        if not isinstance(body.get("prompt"), str):
            return None
        param = "prompt"
    else:
        return None
    # The body's bytes bound the bytes of the text in it (JSON's escapes only lengthen it),
    # and need no serializing again.
    max_tokens, field = _max_tokens(body)
    return Ask(param, size + TEMPLATE_ALLOWANCE, max_tokens, field)


def _max_tokens(body: dict[str, Any]) -> tuple[int | None, str]:
    for field in MAX_TOKENS_FIELDS:
        value = body.get(field)
        # n_predict -1 is llama.cpp's "no limit"; a bool is not a count.
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value, field
    return None, "max_tokens"


def fits_uncounted(ask: Ask, context: int) -> bool:
    """Whether the request fits whatever the tokenizer makes of it."""
    return ask.most_prompt_tokens + (ask.max_tokens or 0) <= context


def refusal(
    info: InstanceInfo, ask: Ask, prompt_tokens: int, context: int
) -> ContextTooLong | None:
    """The error for a request whose counted prompt (and max_tokens) exceed `context`."""
    instance = f"the {info.engine.value} instance {info.id}"
    engine = ENGINES[info.engine]
    change = engine.setting(info)
    how = engine.how(info)
    if prompt_tokens > context:
        return ContextTooLong(
            f"The prompt is {prompt_tokens} tokens, more than the {context} tokens of context "
            f"{instance} gives each request{how}. Shorten the prompt, or give the model "
            f"more context: {change}.",
            prompt_tokens=prompt_tokens,
            max_tokens=ask.max_tokens,
            context=context,
            param=ask.prompt_param,
        )
    if ask.max_tokens is not None and prompt_tokens + ask.max_tokens > context:
        room = context - prompt_tokens
        return ContextTooLong(
            f"This request needs {prompt_tokens} prompt tokens plus {ask.max_tokens_param} "
            f"{ask.max_tokens}, {prompt_tokens + ask.max_tokens} tokens in all, but {instance} "
            f"gives each request {context} tokens of context{how}. Set "
            f"{ask.max_tokens_param} to at most {room}, shorten the prompt, or give the model "
            f"more context: {change}.",
            prompt_tokens=prompt_tokens,
            max_tokens=ask.max_tokens,
            context=context,
            param=ask.max_tokens_param,
        )
    return None


class ContextBudget:
    """Checks requests against the context of the instance they go to (see the module)."""

    def __init__(
        self, upstream: Upstream, headers: Callable[[InstanceInfo], Awaitable[dict[str, str]]]
    ) -> None:
        self._upstream = upstream
        self._headers = headers
        # Per instance run (id, pid, start): the context of one request, None when the
        # engine answered without saying it or may shift its context (then nothing is checked).
        self._contexts: dict[tuple[str, int | None, float], int | None] = {}

    async def check(self, info: InstanceInfo, api: str, body: dict[str, Any], size: int) -> None:
        """Raise ContextTooLong when `body` (`size` bytes as sent) cannot fit the instance's
        context per request."""
        engine = ENGINES.get(info.engine)
        if engine is None:
            return
        ask = asked(api, body, size)
        if ask is None:
            return
        context = await self.context(info)
        if context is None or fits_uncounted(ask, context):
            return
        prompt_tokens = await engine.count(info, api, body, self._asker(info))
        if prompt_tokens is None:
            return
        error = refusal(info, ask, prompt_tokens, context)
        if error is not None:
            raise error

    async def context(self, info: InstanceInfo) -> int | None:
        """The context of one request on `info`, as the engine says it (asked once); None
        when it is not known, or the engine may shift its context instead of stopping."""
        key = (info.id, info.pid, info.started_at)
        if key in self._contexts:
            return self._contexts[key]
        engine = ENGINES.get(info.engine)
        if engine is None:
            return None
        asker = self._asker(info)
        answered: list[bool] = []

        async def ask(path: str, payload: dict[str, Any] | None) -> dict[str, Any] | None:
            answer = await asker(path, payload)
            answered.append(answer is not None)
            return answer

        context = await engine.context(info, ask)
        if not any(answered):
            return None  # not kept: the next request asks again
        self._contexts = {k: v for k, v in self._contexts.items() if k[0] != info.id}
        self._contexts[key] = context
        return context

    def _asker(self, info: InstanceInfo) -> Asker:
        async def ask(path: str, payload: dict[str, Any] | None) -> dict[str, Any] | None:
            return await self._ask(info, path, payload)

        return ask

    async def _ask(
        self, info: InstanceInfo, path: str, payload: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The engine's JSON answer at its root `/path`; None for any failure (logged)."""
        url = f"{info.url.rstrip('/')}/{path}"
        client = self._upstream.client_for(info)
        try:
            headers = await self._headers(info)
            async with asyncio.timeout(ASK_TIMEOUT_S):
                if payload is None:
                    request = client.get(url, headers=headers, allow_redirects=False)
                else:
                    data = json.dumps(payload).encode()
                    request = client.post(url, data=data, headers=headers, allow_redirects=False)
                async with request as response:
                    if response.status != 200:
                        log.info(
                            "Context budget: %s answered %d on /%s", info.id, response.status, path
                        )
                        return None
                    answer = await response.json(content_type=None)
        except _ASK_ERRORS as exc:
            log.info("Context budget: asking %s /%s failed: %r", info.id, path, exc)
            return None
        return answer if isinstance(answer, dict) else None
