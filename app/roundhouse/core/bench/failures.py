"""A benchmark's failed requests grouped by reason, each with what to change where it is known."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from roundhouse.api.bench import BenchRequest, BenchResult, FailureGroup, ServingContext

# What the runner puts before an error the engine sent inside its stream.
_STREAM_PREFIX = "the engine reported an error: "
_HTTP = re.compile(r"^HTTP (?P<status>\d{3}): (?P<body>.*)$", re.DOTALL)
# Numbers differ from request to request ("request (417 tokens) exceeds ..."): one group.
_NUMBER = re.compile(r"\d+")
# llama-server's KV cache ran out while requests were generating together (the slots share
# one cache: `kv_unified`, its default when `parallel` is left to it).
_SHARED_FULL = re.compile(r"context size has been exceeded", re.IGNORECASE)
# One request alone is longer than the context of a slot: llama-server's refusal, the
# gateway's own (OpenAI's words) and vLLM's.
_TOO_LONG = re.compile(
    r"exceeds the available context size|maximum context length|context_length_exceeded"
    r"|longer than the maximum model length",
    re.IGNORECASE,
)


def reason_of(error: str) -> str:
    """The words of one request's error, without the transport around them: the message of
    an HTTP error's JSON body, or of an error event in the stream. The same failure comes
    either way (llama-server answers 500 before the stream starts, an event after), so the
    HTTP status is not part of it."""
    text = error.removeprefix(_STREAM_PREFIX).strip()
    found = _HTTP.match(text)
    if found is None:
        return text
    body = found.group("body")
    try:
        data = json.loads(body)
    except ValueError:
        return text
    error_obj = data.get("error") if isinstance(data, dict) else None
    message = error_obj.get("message") if isinstance(error_obj, dict) else error_obj
    if not isinstance(message, str) and isinstance(data, dict):
        message = data.get("message") or data.get("detail")
    return message if isinstance(message, str) and message else text


def _need(request: BenchRequest) -> int:
    """The most tokens one request asks of the context: its prompt and its reply."""
    spread = 1.0 + request.range_ratio
    return int(request.input_len * spread) + int(request.output_len * spread)


def advice(reason: str, request: BenchRequest, serving: ServingContext | None) -> str | None:
    """What to change so that requests failing for `reason` succeed; None when not known."""
    serving = serving or ServingContext()
    need = _need(request)
    at_once = request.max_concurrency or request.num_prompts
    if _SHARED_FULL.search(reason):
        total = serving.slot_ctx if serving.slot_ctx else serving.ctx_size
        slots = serving.slots or serving.parallel
        if total:
            shared = f" shared by its {slots} slots" if slots and slots > 1 else ""
            fit = max(1, total // need)
            return (
                f"The engine's context of {total} tokens is{shared}; {at_once} requests at "
                f"once of up to {need} tokens each ({request.input_len} in, "
                f"{request.output_len} out) need about {at_once * need}. Start the model "
                f"with a context of at least {at_once * need} (ctx_size), or run at most "
                f"{fit} at once (maximum concurrency)."
            )
        return (
            "The requests in flight together needed more context than the engine has: "
            "the context is shared by its parallel slots. Start the model with a larger "
            "context (ctx_size), or lower the maximum concurrency."
        )
    if _TOO_LONG.search(reason):
        slot = serving.slot_ctx
        if slot is None and serving.ctx_size:
            slot = serving.ctx_size // (serving.parallel or 1)
        where = ""
        if slot:
            where = f" of one slot ({slot} tokens"
            if serving.ctx_size and serving.parallel and serving.parallel > 1:
                where += f" = ctx_size {serving.ctx_size} / parallel {serving.parallel}"
            where += ")"
        return (
            f"A prompt with its reply (up to {need} tokens: {request.input_len} in, "
            f"{request.output_len} out) does not fit the context{where}. Use shorter "
            "input and output lengths, or start the model with a larger context (ctx_size) "
            "or fewer parallel slots."
        )
    return None


def group_failures(
    errors: Iterable[str], request: BenchRequest, serving: ServingContext | None
) -> list[FailureGroup]:
    """Every error grouped by its reason (numbers aside), the largest group first."""
    groups: dict[str, FailureGroup] = {}
    for error in errors:
        reason = reason_of(error)
        key = _NUMBER.sub("#", reason)
        group = groups.get(key)
        if group is None:
            groups[key] = FailureGroup(
                reason=reason, count=1, advice=advice(reason, request, serving)
            )
        else:
            group.count += 1
    return sorted(groups.values(), key=lambda g: -g.count)


def with_groups(result: BenchResult) -> BenchResult:
    """A result kept before failures were grouped gets its groups from the failures it kept
    (at most 50; failure_lines says how many more had no reason kept)."""
    m = result.metrics
    if not m.failed or m.failure_groups:
        return result
    groups = group_failures((f.error for f in m.failures), result.request, result.serving)
    return result.model_copy(update={"metrics": m.model_copy(update={"failure_groups": groups})})
