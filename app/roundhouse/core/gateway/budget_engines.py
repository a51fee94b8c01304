"""How each engine says the context one request may use and counts a prompt, for the budget.

Each engine here answers four questions from its own HTTP API: its context per request
(None: not known, or not a limit the engine enforces), the exact count of a request's prompt
by its own tokenizer (None: it cannot count this one), what its own words say when it refuses
a request too long for that context, and which setting gives more context. What each does
and does not catch is in docs/gateway.md, "Context budget".
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.fields import CHAT, COMPLETIONS
from roundhouse.core.gateway.ollama.from_openai import native_chat, native_generate

# The engine's JSON answer at its root `/path` (a GET when the payload is None); None for
# any failure, a status other than 200, or an answer that is not a JSON object.
Asker = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any] | None]]

# Asking an engine's tokenizer is quick; a slow answer leaves the request unchecked.
ASK_TIMEOUT_S = 5.0
# What Ollama is asked does the request's own work (loading the model, reading the prompt
# into the cache it then reuses), so it may take as long as that work does.
OLLAMA_ASK_TIMEOUT_S = 600.0

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


@dataclass(frozen=True)
class Refusal:
    """An engine's refusal of a request too long for its context, as its words say it."""

    prompt_tokens: int | None  # None where the engine does not say the count
    max_tokens: int | None = None


class EngineRefused(Exception):
    """The engine refused what it was asked for the budget: the prompt is over its context."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


class EngineContext(Protocol):
    """One engine's answers for the context budget."""

    # Whether a context the engine cannot say now is kept as unknown; False where it says it
    # later (Ollama, once the model is loaded).
    keeps_unknown: bool
    # How long one question may take before the request goes on unchecked.
    ask_timeout_s: float

    async def context(self, info: InstanceInfo, model: str, ask: Asker) -> int | None:
        """The context of one request to `model` (the engine's name for it), as the engine
        says it."""

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        """The request's prompt in tokens, as the engine will count it."""

    def refused(self, message: str) -> Refusal | None:
        """The engine's error `message`, read as a refusal over the context; None for any
        other error."""

    def how(self, info: InstanceInfo) -> str:
        """How the instance's options make that context (words after the number)."""

    def setting(self, info: InstanceInfo) -> str:
        """What to change for more context."""


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _refusal_in(pattern: re.Pattern[str], message: str) -> Refusal | None:
    """The refusal `pattern` finds in `message`: its count of the prompt alone (`alone`),
    else of the prompt (`prompt`) and the reply asked for (`reply`), where it names them."""
    found = pattern.search(message)
    if found is None:
        return None
    said = {k: int(v) for k, v in found.groupdict().items() if v is not None}
    if "alone" in said:
        return Refusal(said["alone"])
    return Refusal(said.get("prompt"), said.get("reply"))


# llama-server's refusal (server_context, exceed_context_size_error), also what Ollama relays
# from the llama-server it runs: "request (N tokens) exceeds the available context size
# (C tokens), try increasing it".
_LLAMA_REFUSAL = re.compile(
    r"request \((?P<prompt>\d+) tokens\) exceeds the available context size"
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


class LlamaServer:
    """llama-server: `/props` says the context of one slot; `/apply-template` then
    `/tokenize` count a prompt. Checked only where context shift is known to be off."""

    keeps_unknown = True
    ask_timeout_s = ASK_TIMEOUT_S

    async def context(self, info: InstanceInfo, model: str, ask: Asker) -> int | None:
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

    def refused(self, message: str) -> Refusal | None:
        return _refusal_in(_LLAMA_REFUSAL, message)

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
    keeps_unknown = True
    ask_timeout_s = ASK_TIMEOUT_S

    async def context(self, info: InstanceInfo, model: str, ask: Asker) -> int | None:
        return await _models_max_len(ask)

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        raise NotImplementedError

    def refused(self, message: str) -> Refusal | None:
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


# vLLM's refusals (serving_engine, _validate_input): the prompt alone ("However, your request
# has N input tokens"), or with the reply ("However, you requested T tokens (N in the
# messages, M in the completion)").
_VLLM_REFUSAL = re.compile(
    r"maximum context length is \d+ tokens\. However, (?:your request has (?P<alone>\d+) "
    r"input tokens|you requested \d+ tokens \((?P<prompt>\d+) in the messages, "
    r"(?P<reply>\d+) in the completion\))"
)


class Vllm(_OpenAIServer):
    """vLLM: `POST /tokenize` renders a chat with the model's template (tools included) and
    counts it, or counts a completion's prompt, as its chat and completions do."""

    def refused(self, message: str) -> Refusal | None:
        return _refusal_in(_VLLM_REFUSAL, message)

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


# SGLang's refusals (tokenizer_manager, _validate_one_request): "The input (N tokens) is longer
# than the model's context length (C tokens)." and "... You requested a total of T tokens:
# N tokens from the input messages and M tokens for the completion."
_SGLANG_REFUSAL = re.compile(
    r"The input \((?P<alone>\d+) tokens\) is longer than the model's context length"
    r"|You requested a total of \d+ tokens: (?P<prompt>\d+) tokens from the input messages "
    r"and (?P<reply>\d+) tokens for the completion"
)


class Sglang(_OpenAIServer):
    """SGLang: `POST /v1/tokenize` (current releases) counts a text, not a chat: a
    completion's prompt is counted exactly; a chat is not (its template is not reachable
    over HTTP), so it goes to SGLang, whose refusal of an over-long one, which names the
    count, the gateway then says in its own words."""

    flag = "--context-length"

    def refused(self, message: str) -> Refusal | None:
        return _refusal_in(_SGLANG_REFUSAL, message)

    async def context(self, info: InstanceInfo, model: str, ask: Asker) -> int | None:
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


# Ollama's refusals of a prompt over its context when told not to cut it: its runners' "the
# input length exceeds the context length", its llama-server's (above), and, in releases
# that run llama-server, "the prompt is longer than the context length currently available".
_OLLAMA_REFUSAL = re.compile(
    r"exceeds the context length|longer than the context length"
    r"|exceeds the available context size"
)
# What Ollama generates to count a prompt: one token, the least it takes.
_OLLAMA_PROBE_OPTIONS = {"num_predict": 1}


class Ollama:
    """Ollama: `/api/ps` says the context of each loaded model. It has no tokenizer
    endpoint, and its OpenAI-compatible API cuts a prompt longer than that context to fit
    without a word; its own API, told `truncate: false` and `shift: false` (0.12.6 on),
    refuses one instead. So a request that may not fit is first sent there to generate one
    token: the reply's `prompt_eval_count` is the prompt as Ollama counts it, or the refusal
    says it is over. The prompt stays in Ollama's cache for the request that follows, so the
    count costs the one token, not a second reading of the prompt."""

    keeps_unknown = False  # a model that would not load now may load later
    ask_timeout_s = OLLAMA_ASK_TIMEOUT_S

    async def context(self, info: InstanceInfo, model: str, ask: Asker) -> int | None:
        loaded = await self._loaded_context(model, ask)
        if loaded is not None:
            return loaded
        # Not loaded: its context is whatever Ollama loads it with. Loaded now, as the
        # request would load it anyway (Ollama's own way: a generate with no prompt).
        if await ask("api/generate", {"model": model}) is None:
            return None
        return await self._loaded_context(model, ask)

    @staticmethod
    async def _loaded_context(model: str, ask: Asker) -> int | None:
        running = await ask("api/ps", None)
        models = running.get("models") if running is not None else None
        names = {model, model if ":" in model else f"{model}:latest"}
        for entry in models if isinstance(models, list) else []:
            if isinstance(entry, dict) and names & {entry.get("name"), entry.get("model")}:
                return _positive(entry.get("context_length"))
        return None

    async def count(
        self, info: InstanceInfo, api: str, body: dict[str, Any], ask: Asker
    ) -> int | None:
        probe: dict[str, Any] | None
        if api == CHAT:
            probe, path = native_chat(body), "api/chat"
        elif api == COMPLETIONS:
            probe, path = native_generate(body), "api/generate"
        else:
            return None
        if probe is None:
            return None  # media, or a shape Ollama would not take: left to it
        probe |= {
            "stream": False,
            "truncate": False,
            "shift": False,
            "options": _OLLAMA_PROBE_OPTIONS,
        }
        answer = await ask(path, probe)
        return _positive(answer.get("prompt_eval_count")) if answer is not None else None

    def refused(self, message: str) -> Refusal | None:
        if _OLLAMA_REFUSAL.search(message) is None:
            return None
        # Its llama-server's words name the count; its runners' do not.
        return _refusal_in(_LLAMA_REFUSAL, message) or Refusal(None)

    def how(self, info: InstanceInfo) -> str:
        options = info.options
        return f" (ctx_size {options.ctx_size})" if options is not None and options.ctx_size else ""

    def setting(self, info: InstanceInfo) -> str:
        if info.options is None:
            return (
                "raise the model's num_ctx (its Modelfile, or OLLAMA_CONTEXT_LENGTH where "
                "Ollama starts), then load it again"
            )
        return (
            "raise ctx_size (Ollama's OLLAMA_CONTEXT_LENGTH) in the start dialog "
            "(`roundhouse engines start ollama --ctx-size N`), or the model's num_ctx in its "
            "Modelfile, then restart the model"
        )


# mlx_lm.server is not here: its KV cache grows without a context limit to check.
ENGINES: dict[EngineId, EngineContext] = {
    EngineId.LLAMA_CPP: LlamaServer(),
    EngineId.VLLM: Vllm(),
    EngineId.SGLANG: Sglang(),
    EngineId.OLLAMA: Ollama(),
}
