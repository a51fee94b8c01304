"""What the gateway forwards of a request body: OpenAI's fields, the engine extras users need,
and media only inline or from hosts the user allowed.

Engines take more than OpenAI's fields, and some of those make them load things: mlx_lm
downloads a `draft_model` and opens `adapters` from any path, vLLM imports the
`logits_processors` it is named and deserializes `prompt_embeds`, llama-server pins a request
to another conversation's slot with `id_slot`, and every multimodal engine fetches the URL of
an image from this machine (an SSRF, CVE-2025-6242 in vLLM). So the gateway forwards a list:

- a field on the list for its API goes on;
- a field in REFUSED is answered with 400, naming it: a request that counted on it must not
  run without it, and nothing a client needs is in there;
- any other field is dropped, and the reply names it in `x-roundhouse-dropped-fields`:
  clients send vendor fields of their own (and new OpenAI fields appear), which must not
  break them, and the engine never sees what nobody vetted;
- a media reference (an image, audio or video part, a file) must be a `data:` URL or base64,
  or an http(s) URL whose host is in `gateway.media_domains`; anything else is 400.

docs/gateway-security.md names each extra and each refused field (a test checks that it
does). A route the gateway proxies needs its own list here: `screen` knows no other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from roundhouse.base.host_names import canonical_host
from roundhouse.core.gateway.errors import BadRequest

CHAT = "chat/completions"
COMPLETIONS = "completions"
EMBEDDINGS = "embeddings"
RERANK = "rerank"
SCORE = "score"

# OpenAI's own request fields (openai-python's create params), forwarded as they are:
# engines that do not know one ignore or refuse it themselves.
OPENAI: dict[str, frozenset[str]] = {
    CHAT: frozenset(
        {
            "messages", "model", "audio", "frequency_penalty", "function_call", "functions",
            "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata",
            "modalities", "moderation", "n", "parallel_tool_calls", "prediction",
            "presence_penalty", "prompt_cache_key", "prompt_cache_options",
            "prompt_cache_retention", "reasoning_effort", "response_format",
            "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
            "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
            "user", "verbosity", "web_search_options",
        }
    ),
    COMPLETIONS: frozenset(
        {
            "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias",
            "logprobs", "max_tokens", "n", "presence_penalty", "seed", "stop", "stream",
            "stream_options", "suffix", "temperature", "top_p", "user",
        }
    ),
    EMBEDDINGS: frozenset({"model", "input", "dimensions", "encoding_format", "user"}),
}  # fmt: skip

# Engine extras for generation (chat and completions): each with who takes it and why a
# user wants it. None of them names a file, a model, a URL, code or another request.
SAMPLING: dict[str, str] = {
    "top_k": "llama.cpp, vLLM, SGLang, MLX: sample only from the k likeliest tokens",
    "min_p": "llama.cpp, vLLM, SGLang, MLX: drop tokens far less likely than the best one",
    "typical_p": "llama.cpp: locally typical sampling",
    "top_n_sigma": "llama.cpp: top-n-sigma sampling",
    "min_keep": "llama.cpp: the fewest tokens a sampler may leave",
    "dynatemp_range": "llama.cpp: dynamic temperature range",
    "dynatemp_exponent": "llama.cpp: dynamic temperature exponent",
    "mirostat": "llama.cpp: Mirostat sampling (0, 1 or 2)",
    "mirostat_tau": "llama.cpp: Mirostat target entropy",
    "mirostat_eta": "llama.cpp: Mirostat learning rate",
    "xtc_probability": "llama.cpp, MLX: XTC sampling, chance of removing top tokens",
    "xtc_threshold": "llama.cpp, MLX: XTC sampling, probability threshold",
    "samplers": "llama.cpp: the order the samplers run in",
    "repeat_penalty": "llama.cpp: penalty on repeated tokens",
    "repeat_last_n": "llama.cpp: how many recent tokens the repeat penalty looks at",
    "repetition_penalty": "vLLM, SGLang, MLX: penalty on repeated tokens",
    "repetition_context_size": "MLX: how many recent tokens the repetition penalty looks at",
    "dry_multiplier": "llama.cpp: DRY repetition penalty, multiplier",
    "dry_base": "llama.cpp: DRY repetition penalty, base",
    "dry_allowed_length": "llama.cpp: DRY repetition penalty, length repeated freely",
    "dry_penalty_last_n": "llama.cpp: DRY repetition penalty, tokens looked at",
    "dry_sequence_breakers": "llama.cpp: DRY repetition penalty, strings that reset it",
    "n_predict": "llama.cpp: the most tokens to generate (its name for max_tokens)",
    "min_tokens": "vLLM, SGLang: generate at least this many tokens",
    "ignore_eos": "llama.cpp, vLLM, SGLang: go on past the end token (benchmarks)",
    "stop_token_ids": "vLLM, SGLang: stop at these token ids",
    "include_stop_str_in_output": "vLLM: keep the stop string in the output",
    "no_stop_trim": "SGLang: keep the stop string in the output",
    "skip_special_tokens": "vLLM, SGLang: leave special tokens out of the text",
    "spaces_between_special_tokens": "vLLM: spacing around special tokens",
    "bad_words": "vLLM: words never to generate",
    "allowed_token_ids": "vLLM: the only tokens that may be generated",
    "truncate_prompt_tokens": "vLLM: keep only the last N prompt tokens",
    "n_probs": "llama.cpp: return the probabilities of the top N tokens",
    "post_sampling_probs": "llama.cpp: those probabilities after sampling",
    "cache_prompt": "llama.cpp: reuse the cached prompt prefix (false for exact repeats)",
    "cache_salt": "vLLM: keep this request's prefix cache apart from other users'",
    "grammar": "llama.cpp: constrain the output to a GBNF grammar",
    "json_schema": "llama.cpp: constrain the output to a JSON schema",
    "structured_outputs": "vLLM: constrain the output (json, regex, choice, grammar)",
    "guided_json": "vLLM (before structured_outputs): constrain the output to a JSON schema",
    "guided_regex": "vLLM (before structured_outputs): constrain the output to a regex",
    "guided_choice": "vLLM (before structured_outputs): constrain the output to a choice",
    "guided_grammar": "vLLM (before structured_outputs): constrain the output to a grammar",
    "regex": "SGLang: constrain the output to a regex",
    "ebnf": "SGLang: constrain the output to an EBNF grammar",
    "num_draft_tokens": "MLX: tokens the draft model chosen at start proposes at a time",
    "thinking_token_budget": "vLLM: the most tokens a reasoning model may think for",
}
CHAT_ONLY: dict[str, str] = {
    "chat_template_kwargs": "llama.cpp, vLLM, SGLang, MLX: values for the model's own "
    "template, e.g. enable_thinking",
    "reasoning_format": "llama.cpp: how reasoning is returned (reasoning_content or inline)",
    "parse_tool_calls": "llama.cpp: return tool calls parsed",
    "include_reasoning": "vLLM: return the reasoning",
    "separate_reasoning": "SGLang: return the reasoning apart from the answer",
    "stream_reasoning": "SGLang: stream the reasoning",
    "add_generation_prompt": "vLLM: end the prompt with the assistant's turn",
    "continue_final_message": "vLLM, SGLang: continue the last message (prefill)",
}
EMBEDDING_EXTRAS: dict[str, str] = {
    "embd_normalize": "llama.cpp: how embeddings are normalized",
    "truncate_prompt_tokens": "vLLM: keep only the last N input tokens",
    "messages": "vLLM: embed a conversation (multimodal embedding models)",
}
EXTRAS: dict[str, dict[str, str]] = {
    CHAT: SAMPLING | CHAT_ONLY,
    COMPLETIONS: SAMPLING,
    EMBEDDINGS: EMBEDDING_EXTRAS,
}
FORWARDED: dict[str, frozenset[str]] = {api: OPENAI[api] | set(EXTRAS[api]) for api in OPENAI}
# Rerank and score have no OpenAI API: the fields are the engines' own (llama-server's
# /v1/rerank, Jina's and Cohere's shape; vLLM's /rerank and /score; SGLang's /v1/rerank and
# /v1/score). None names a file, a model or a URL; media inside them is checked below.
RANKING: dict[str, frozenset[str]] = {
    RERANK: frozenset(
        {
            "model", "query", "documents", "texts", "top_n", "return_documents",
            "return_text", "truncate_prompt_tokens",
        }
    ),
    SCORE: frozenset(
        {
            "model", "text_1", "text_2", "queries", "documents", "data_1", "data_2", "query",
            "items", "label_token_ids", "apply_softmax", "item_first",
            "truncate_prompt_tokens",
        }
    ),
}  # fmt: skip
FORWARDED |= RANKING
# The ranking fields that may hold multimodal content (vLLM takes image parts there).
_RANKED_INPUTS = ("query", "documents", "texts", "text_1", "text_2", "queries", "data_1",
                  "data_2", "items")  # fmt: skip

# Fields an engine would act on beyond generating: each names what it would do.
REFUSED: dict[str, str] = {
    "draft_model": "mlx_lm.server downloads the Hugging Face repository it names and runs it",
    "adapters": "mlx_lm.server loads LoRA adapters from any path on this machine (and its "
    "error says whether a file exists)",
    "lora_path": "SGLang loads the LoRA adapter it names",
    "id_slot": "llama-server runs the request in that slot, over another conversation's cache",
    "slot_id": "older llama-server builds run the request in that slot, over another "
    "conversation's cache",
    "logits_processors": "vLLM imports and runs the Python classes it names",
    "custom_logit_processor": "SGLang deserializes and runs the Python function it carries",
    "prompt_embeds": "vLLM deserializes tensors sent in the request (CVE-2025-62164)",
    "chat_template": "vLLM renders this template instead of the model's own",
    "kv_transfer_params": "vLLM exchanges its cache with the hosts it names",
    "bootstrap_host": "SGLang connects to the host it names (disaggregated serving)",
    "bootstrap_port": "SGLang connects to the port it names (disaggregated serving)",
    "bootstrap_room": "SGLang joins the transfer it names (disaggregated serving)",
}

# Where a content part carries media: the part's key, and in it the keys holding a URL
# (refused unless data: or an allowed host) or base64 (which has no ':', so one with a ':'
# is a URL and checked as one: llama-server reads a URL or a file:// path there too).
_URL_KEYS = ("url",)
_DATA_KEYS = ("data", "file_data")
MEDIA_PARTS = ("image_url", "input_image", "video_url", "audio_url", "input_audio", "input_video")
PART_TYPES = frozenset({"text", "refusal", "file", *MEDIA_PARTS})
# vLLM deserializes tensors from these (CVE-2025-62164): never forwarded.
EMBEDS_PARTS = frozenset({"image_embeds", "audio_embeds", "prompt_embeds"})

MEDIA_SETTING = "gateway.media_domains"
DROPPED_HEADER = "x-roundhouse-dropped-fields"
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
# A URL scheme as the error names it; one letter is a Windows drive, not a scheme.
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]{1,19}")
# Characters no URL that engines and Python read alike may carry (parsers disagree on them).
_UNSAFE_IN_URL = re.compile(r"[\x00-\x20\x7f\\]")


class FieldRefused(BadRequest):
    """A field or media reference the gateway does not forward, in OpenAI's shape."""

    code = "field_not_allowed"

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class MediaRefused(FieldRefused):
    code = "media_url_not_allowed"


def screen(api: str, body: dict[str, Any], media_domains: Sequence[str]) -> list[str]:
    """Drop from `body`, in place, the fields `api` does not forward, and return their names;
    raise FieldRefused for a field in REFUSED or a media reference that is not allowed."""
    forwarded = FORWARDED[api]
    dropped: list[str] = []
    for name in body:
        if name in forwarded:
            continue
        if name in REFUSED:
            raise FieldRefused(
                f"The gateway does not forward '{name}': {REFUSED[name]}. Remove it from the "
                "request (docs/gateway-security.md lists what is forwarded).",
                name,
            )
        dropped.append(name)
    for name in dropped:
        del body[name]
    if api == CHAT:
        _messages(body.get("messages"), "messages", media_domains)
    elif api == COMPLETIONS:
        _prompt(body.get("prompt"), media_domains)
    elif api in RANKING:
        _ranked(body, media_domains)
    else:
        _messages(body.get("messages"), "messages", media_domains)
        _inputs(body.get("input"), media_domains)
    return dropped


def dropped_header(names: list[str]) -> str:
    """The dropped names for a reply header: plain names only (a header carries no other)."""
    safe = sorted(n for n in names if _SAFE_NAME.fullmatch(n))
    more = len(names) - len(safe)
    return ", ".join(safe + ([f"{more} more"] if more else []))


def _messages(messages: object, where: str, domains: Sequence[str]) -> None:
    if not isinstance(messages, list):
        return
    for i, message in enumerate(messages):
        if isinstance(message, dict):
            _content(message.get("content"), f"{where}[{i}].content", domains)


def _content(content: object, where: str, domains: Sequence[str]) -> None:
    # A string (most messages) holds no media: nothing to walk.
    if not isinstance(content, list):
        return
    for j, part in enumerate(content):
        if isinstance(part, dict):
            _part(part, f"{where}[{j}]", domains)


def _part(part: dict[str, Any], where: str, domains: Sequence[str]) -> None:
    kind = part.get("type")
    if kind in EMBEDS_PARTS:
        raise FieldRefused(
            f"The gateway does not forward '{kind}' content: vLLM deserializes tensors sent "
            "that way (CVE-2025-62164). Send the image, audio or text itself.",
            f"{where}.type",
        )
    if kind not in PART_TYPES:
        raise FieldRefused(
            f"The gateway does not forward content parts of type {str(kind)[:40]!r}; it takes "
            f"{', '.join(sorted(PART_TYPES))}.",
            f"{where}.type",
        )
    # Every media key present is checked, whatever the type says: engines disagree on which
    # key a type reads.
    for key in MEDIA_PARTS:
        if key in part:
            _media(part[key], f"{where}.{key}", domains)
    if "file" in part:
        _media(part["file"], f"{where}.file", domains)


def _media(value: object, where: str, domains: Sequence[str]) -> None:
    if isinstance(value, str):  # vLLM takes {"image_url": "<url>"} too
        _check_url(value, where, domains)
        return
    if not isinstance(value, dict):
        return
    for key in _URL_KEYS:
        found = value.get(key)
        if isinstance(found, str):
            _check_url(found, f"{where}.{key}", domains)
    for key in _DATA_KEYS:
        found = value.get(key)
        if isinstance(found, str) and ":" in found:
            _check_url(found, f"{where}.{key}", domains)


def _prompt(prompt: object, domains: Sequence[str]) -> None:
    """llama-server takes `{"prompt_string", "multimodal_data": [base64, ...]}` prompts."""
    items = prompt if isinstance(prompt, list) else [prompt]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        data = item.get("multimodal_data")
        for k, entry in enumerate(data if isinstance(data, list) else []):
            if isinstance(entry, str) and ":" in entry:
                _check_url(entry, f"prompt[{i}].multimodal_data[{k}]", domains)


def _ranked(body: dict[str, Any], domains: Sequence[str]) -> None:
    """vLLM scores `{"content": [parts]}` documents and queries, with the chat's media parts."""
    for name in _RANKED_INPUTS:
        value = body.get(name)
        for i, item in enumerate(value if isinstance(value, list) else [value]):
            if isinstance(item, dict):
                _content(item.get("content"), f"{name}[{i}].content", domains)


def _inputs(inputs: object, domains: Sequence[str]) -> None:
    """llama-server embeds `{"content": [parts]}` inputs, with the chat's media parts."""
    if not isinstance(inputs, list):
        return
    for i, item in enumerate(inputs):
        if isinstance(item, dict):
            _content(item.get("content"), f"input[{i}].content", domains)


def check_media_url(url: str, where: str, domains: Sequence[str]) -> None:
    """Raise MediaRefused unless `url` is a `data:` URL or on an allowed host: for APIs whose
    media sit elsewhere than chat's parts (Anthropic's image sources)."""
    _check_url(url, where, domains)


def _check_url(url: str, where: str, domains: Sequence[str]) -> None:
    """A `data:` URL passes; an http(s) URL passes when its host is allowed; nothing else."""
    if url[:5].lower() == "data:":
        return
    host = _allowed_host(url, domains)
    if host is not None:
        return
    scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
    if scheme in ("http", "https") and _host_of(url) is not None:
        what = f"a URL on {_host_of(url)}, which is not an allowed media host"
    elif scheme in ("http", "https"):
        what = "a URL whose host the gateway cannot read safely"
    elif _SCHEME.fullmatch(scheme):
        what = f"a {scheme}: address"
    else:
        what = "neither a data: URL nor an http(s) URL"
    raise MediaRefused(
        f"{where} is {what}. The engine would fetch it from this machine, so the gateway "
        "forwards media only inline, as data: URLs (base64), unless you allow the host: "
        f"add it to {MEDIA_SETTING} (Settings page, Gateway section, or "
        f"`roundhouse settings set {MEDIA_SETTING} HOST`).",
        where,
    )


def _host_of(url: str) -> str | None:
    """The canonical host of an http(s) URL written plainly: no user info, no characters
    that parsers read differently (spaces, controls, backslashes), a host and nothing odd."""
    if _UNSAFE_IN_URL.search(url):
        return None
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or "@" in parts.netloc or not parts.hostname:
        return None
    return canonical_host(parts.hostname)


def _allowed_host(url: str, domains: Sequence[str]) -> str | None:
    if not domains:
        return None
    host = _host_of(url)
    return host if host is not None and host in domains else None
