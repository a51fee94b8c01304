"""The context budget: a request whose prompt, plus the reply it asks room for, cannot fit the
context an instance gives one request is answered with the numbers and the setting to change.

Without it llama-server refuses a prompt longer than its context in its own words, and cuts a
reply that runs out of context short with `finish_reason: "length"`, without a word on why.

What is checked, and when (docs/gateway.md, "Context budget"):

- the context of one request is what the engine says, asked once per instance and kept:
  llama-server's `/props` (`default_generation_settings.n_ctx`, the context of one slot). The
  launch options do not settle it: llama.cpp rounds the context up, `ctx_size` 0 means the
  model's own, and with unified KV (the default when `parallel` is left to llama-server)
  every slot may use the whole context;
- a request whose text is small beside that context is not counted at all: no tokenizer makes
  more tokens than the UTF-8 bytes it reads, so when the bytes of the request body (plus
  TEMPLATE_ALLOWANCE for what the chat template adds) and `max_tokens` fit, it passes as it
  is, at no cost;
- any other is counted exactly by the engine's own tokenizer, the way the engine will count
  it: `/apply-template` then `/tokenize` for a chat, `/tokenize` for a completion (two small
  requests on this machine, about a millisecond each);
- only where llama-server's context shift is known to be off: with it on, the engine drops
  old tokens and goes on, so a long request is not an error. It is off in builds from
  CONTEXT_SHIFT_OFF_BUILD on (llama.cpp changed the default in August 2025) unless the
  instance's extra arguments say `--context-shift`, and wherever they say
  `--no-context-shift`; an engine Roundhouse did not start, or a build that reports no
  number, is not checked;
- it is refused only on that exact count: when the prompt alone is longer than the context,
  or the prompt plus `max_tokens` (`max_completion_tokens`, `n_predict`) is. A request without
  `max_tokens` is checked on its prompt alone. When the engine cannot say its context or
  count (an older build, media the template cannot render here), the request goes on
  unchecked and the engine answers as before: nothing is refused on a guess.

Only llama-server is checked so far (CHECKED); other engines answer such a request themselves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.errors import ContextTooLong
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS
from roundhouse.core.gateway.upstream import UPSTREAM_ERRORS, Upstream

log = logging.getLogger(__name__)

CHECKED = frozenset({EngineId.LLAMA_CPP})
# Tokens a chat template may add beyond the messages' JSON (turn markers, a default system
# prompt, words around the tools): only decides whether a request is counted, never refuses.
TEMPLATE_ALLOWANCE = 512
# Asking the engine is quick on this machine; a slow answer leaves the request unchecked.
ASK_TIMEOUT_S = 5.0
# The first llama-server build known to start with context shift off (the default changed in
# b62xx, ggml-org/llama.cpp#15416, 2025-08-19; a margin past it).
CONTEXT_SHIFT_OFF_BUILD = 6300
_BUILD = re.compile(r"b(\d+)")
# Where a request names the most tokens to generate, in the order engines read them.
MAX_TOKENS_FIELDS = ("max_completion_tokens", "max_tokens", "n_predict")
# What the chat template reads of a chat request besides its messages.
TEMPLATE_FIELDS = ("messages", "tools", "chat_template_kwargs")
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
    change = _setting(info)
    if prompt_tokens > context:
        return ContextTooLong(
            f"The prompt is {prompt_tokens} tokens, more than the {context} tokens of context "
            f"{instance} gives each request{_how(info)}. Shorten the prompt, or give the model "
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
            f"gives each request {context} tokens of context{_how(info)}. Set "
            f"{ask.max_tokens_param} to at most {room}, shorten the prompt, or give the model "
            f"more context: {change}.",
            prompt_tokens=prompt_tokens,
            max_tokens=ask.max_tokens,
            context=context,
            param=ask.max_tokens_param,
        )
    return None


def _how(info: InstanceInfo) -> str:
    """How the instance's options make that context, when Roundhouse started it."""
    options = info.options
    if options is None or not options.ctx_size:
        return ""
    slots = options.parallel or 1
    if slots == 1:
        return f" (ctx_size {options.ctx_size})"
    return f" (ctx_size {options.ctx_size} shared by {slots} parallel slots)"


def _setting(info: InstanceInfo) -> str:
    return (
        "raise ctx_size, or lower the parallel slots, in the model's preset or the start dialog "
        f"(`roundhouse engines start {info.engine.value} --ctx-size N --parallel 1`), then "
        "restart the model"
    )


def context_shift_off(info: InstanceInfo, build_info: object) -> bool:
    """Whether llama-server surely stops at the end of its context rather than shifting it."""
    if info.options is None:
        return False  # started by someone else, with flags Roundhouse does not know
    said = [a for a in info.options.extra_args if a in ("--context-shift", "--no-context-shift")]
    if said:
        return said[-1] == "--no-context-shift"
    found = _BUILD.match(build_info) if isinstance(build_info, str) else None
    return found is not None and int(found.group(1)) >= CONTEXT_SHIFT_OFF_BUILD


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
        if info.engine not in CHECKED:
            return
        ask = asked(api, body, size)
        if ask is None:
            return
        context = await self.context(info)
        if context is None or fits_uncounted(ask, context):
            return
        prompt_tokens = await self._count(info, api, body)
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
        props = await self._ask(info, "props", None)
        if props is None:
            return None  # not kept: the next request asks again
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        context = n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
        if not context_shift_off(info, props.get("build_info")):
            context = None
        self._contexts = {k: v for k, v in self._contexts.items() if k[0] != info.id}
        self._contexts[key] = context
        return context

    async def _count(self, info: InstanceInfo, api: str, body: dict[str, Any]) -> int | None:
        if api == CHAT:
            rendered = await self._ask(
                info, "apply-template", {k: body[k] for k in TEMPLATE_FIELDS if k in body}
            )
            prompt = rendered.get("prompt") if rendered is not None else None
        else:
            prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return None
        # As the engine tokenizes a prompt it runs: with BOS, special tokens read as such.
        counted = await self._ask(
            info, "tokenize", {"content": prompt, "add_special": True, "parse_special": True}
        )
        tokens = counted.get("tokens") if counted is not None else None
        return len(tokens) if isinstance(tokens, list) else None

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
