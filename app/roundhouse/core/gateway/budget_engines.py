"""How each engine says the context one request may use and counts a prompt, for the budget.

Each engine here answers three questions from its own HTTP API: its context per request
(None: not known, or not a limit the engine enforces), the exact count of a request's prompt
by its own tokenizer (None: it cannot count this one), and which setting gives more
context. What each does and does not catch is in docs/gateway.md, "Context budget".
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS

# The engine's JSON answer at its root `/path` (a GET when the payload is None); None for
# any failure, a status other than 200, or an answer that is not a JSON object.
Asker = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any] | None]]

# The first llama-server build known to start with context shift off (the default changed in
# b62xx, ggml-org/llama.cpp#15416, 2025-08-19; a margin past it).
CONTEXT_SHIFT_OFF_BUILD = 6300
_BUILD = re.compile(r"b(\d+)")
# What llama-server's chat template reads of a chat request besides its messages.
TEMPLATE_FIELDS = ("messages", "tools", "chat_template_kwargs")
# What vLLM's /tokenize reads of a chat (TokenizeChatRequest): the same fields its chat
# completions render and tokenize the prompt from.
VLLM_TEMPLATE_FIELDS = (
    "messages",
    "tools",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
    "mm_processor_kwargs",
)
# With this flag vLLM renders a chat whose tool_choice is "none" without its tools.
VLLM_EXCLUDE_TOOLS = "--exclude-tools-when-tool-choice-none"


class EngineContext(Protocol):
    """One engine's answers for the context budget."""

    async def context(self, info: InstanceInfo, ask: Asker) -> int | None:
        """The context of one request, as the engine says it."""

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        """The request's prompt in tokens, as the engine will count it."""

    def how(self, info: InstanceInfo) -> str:
        """How the instance's options make that context (words after the number)."""

    def setting(self, info: InstanceInfo) -> str:
        """What to change for more context."""


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_shift_off(info: InstanceInfo, build_info: object) -> bool:
    """Whether llama-server surely stops at the end of its context rather than shifting it."""
    if info.options is None:
        return False  # started by someone else, with flags Roundhouse does not know
    said = [a for a in info.options.extra_args if a in ("--context-shift", "--no-context-shift")]
    if said:
        return said[-1] == "--no-context-shift"
    found = _BUILD.match(build_info) if isinstance(build_info, str) else None
    return found is not None and int(found.group(1)) >= CONTEXT_SHIFT_OFF_BUILD


class LlamaServer:
    """llama-server: `/props` says the context of one slot; `/apply-template` then
    `/tokenize` count a prompt. Checked only where context shift is known to be off."""

    async def context(self, info: InstanceInfo, ask: Asker) -> int | None:
        props = await ask("props", None)
        if props is None:
            return None
        settings = props.get("default_generation_settings")
        n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
        return n_ctx if context_shift_off(info, props.get("build_info")) else None

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        if api == CHAT:
            rendered = await ask(
                "apply-template", {k: body[k] for k in TEMPLATE_FIELDS if k in body}
            )
            prompt = rendered.get("prompt") if rendered is not None else None
        else:
            prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return None
        # As the engine tokenizes a prompt it runs: with BOS, special tokens read as such.
        counted = await ask(
            "tokenize", {"content": prompt, "add_special": True, "parse_special": True}
        )
        tokens = counted.get("tokens") if counted is not None else None
        return len(tokens) if isinstance(tokens, list) else None

    def how(self, info: InstanceInfo) -> str:
        options = info.options
        if options is None or not options.ctx_size:
            return ""
        slots = options.parallel or 1
        if slots == 1:
            return f" (ctx_size {options.ctx_size})"
        return f" (ctx_size {options.ctx_size} shared by {slots} parallel slots)"

    def setting(self, info: InstanceInfo) -> str:
        return (
            "raise ctx_size, or lower the parallel slots, in the model's preset or the start "
            f"dialog (`roundhouse engines start {info.engine.value} --ctx-size N --parallel 1`), "
            "then restart the model"
        )


async def _models_max_len(ask: Asker) -> int | None:
    """`max_model_len` of the model `/v1/models` lists (both engines serve one)."""
    listed = await ask("v1/models", None)
    data = listed.get("data") if listed is not None else None
    for entry in data if isinstance(data, list) else []:
        found = _positive(entry.get("max_model_len")) if isinstance(entry, dict) else None
        if found is not None:
            return found
    return None


class _OpenAIServer:
    """vLLM and SGLang: one length limit for prompt and reply together, `max_model_len`
    (listed by `/v1/models`), the same for every request whatever the parallel setting."""

    flag = "--max-model-len"

    async def context(self, info: InstanceInfo, ask: Asker) -> int | None:
        return await _models_max_len(ask)

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        raise NotImplementedError

    def how(self, info: InstanceInfo) -> str:
        options = info.options
        length = (options.max_model_len or options.ctx_size) if options is not None else None
        return f" (ctx_size {length})" if length else ""

    def setting(self, info: InstanceInfo) -> str:
        if info.options is None:
            return f"start the server with a larger {self.flag}"
        return (
            f"raise ctx_size (the engine's {self.flag}) in the model's preset or the start "
            f"dialog (`roundhouse engines start {info.engine.value} --ctx-size N`) as far as "
            "the model and the memory for its KV cache allow, then restart the model"
        )


def _count_of(counted: dict[str, Any] | None) -> int | None:
    value = counted.get("count") if counted is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Vllm(_OpenAIServer):
    """vLLM: `POST /tokenize` renders a chat with the model's template (tools included) and
    counts it, or counts a completion's prompt, as its chat and completions do."""

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        # No `model`: the client's name may be an alias vLLM does not know (it serves one).
        if api == CHAT:
            payload = {k: body[k] for k in VLLM_TEMPLATE_FIELDS if k in body}
            if body.get("tool_choice") == "none" and "tools" in payload:
                if info.options is None:
                    return None  # whether it renders the tools depends on flags not known here
                if VLLM_EXCLUDE_TOOLS in info.options.extra_args:
                    del payload["tools"]
        elif api == COMPLETIONS:
            payload = {k: body[k] for k in ("prompt", "add_special_tokens") if k in body}
        else:
            return None
        return _count_of(await ask("tokenize", payload))


class Sglang(_OpenAIServer):
    """SGLang: `POST /v1/tokenize` (current releases) counts a text, not a chat: a
    completion's prompt is counted exactly; a chat is not (its template is not reachable
    over HTTP), so it passes to SGLang, which refuses an over-long one in its own words."""

    flag = "--context-length"

    async def context(self, info: InstanceInfo, ask: Asker) -> int | None:
        # SGLang refuses a request whose prompt plus max_tokens reaches its context length
        # (tokenizer_manager: `>= context_len`): one token less is what a request may use.
        length = await _models_max_len(ask)
        return length - 1 if length is not None and length > 1 else None

    def how(self, info: InstanceInfo) -> str:
        said = super().how(info)
        return f"{said[:-1]}, less the one token SGLang keeps free)" if said else ""

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        if api != COMPLETIONS:
            return None
        # As its completions tokenize a prompt: with the tokenizer's special tokens.
        return _count_of(
            await ask("v1/tokenize", {"prompt": body.get("prompt"), "add_special_tokens": True})
        )


# Ollama is not here: it has no tokenizer endpoint, so nothing it serves can be counted
# (its `/api/ps` does say each loaded model's `context_length`). mlx_lm.server has no
# context limit to check: its KV cache grows without one.
ENGINES: dict[EngineId, EngineContext] = {
    EngineId.LLAMA_CPP: LlamaServer(),
    EngineId.VLLM: Vllm(),
    EngineId.SGLANG: Sglang(),
}
