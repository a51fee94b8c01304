"""Send a benchmark's requests to an OpenAI-compatible endpoint and record every stream."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

from roundhouse.api.bench import Endpoint
from roundhouse.core.bench.failures import reason_of
from roundhouse.core.bench.records import RequestRecord
from roundhouse.core.errors import InvalidInputError

if TYPE_CHECKING:
    from roundhouse.core.bench.workloads import Prompt

# (requests done, requests in all, of those done the ones that failed)
Progress = Callable[[int, int, int], None]


class WarmupError(InvalidInputError):
    title = "The benchmark's warm-up failed"


@dataclass(frozen=True)
class Target:
    """Where the requests go: an OpenAI base URL ending in /v1, and its bearer key."""

    base_url: str
    api_key: str
    model: str
    endpoint: Endpoint = Endpoint.CHAT
    ignore_eos: bool = True
    timeout_s: float = 600.0


def build_body(target: Target, prompt: Prompt) -> dict[str, Any]:
    """The request body: streamed, with usage, at temperature 0 for the fixed length."""
    body: dict[str, Any] = {
        "model": target.model,
        "max_tokens": prompt.output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    if target.ignore_eos:
        body["ignore_eos"] = True
    if target.endpoint is Endpoint.CHAT:
        body["messages"] = [{"role": "user", "content": prompt.text}]
    else:
        body["prompt"] = prompt.text
    return body


def _content(choice: dict[str, Any]) -> str:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or delta.get("reasoning_content") or "")
    return str(choice.get("text") or "")


# Tries of one request whose kept-alive connection was gone before any answer.
SEND_ATTEMPTS = 3


def _take_event(record: RequestRecord, payload: bytes, now: float) -> None:
    data = json.loads(payload)
    if not isinstance(data, dict):
        return
    record.last_chunk_s = now
    if error := data.get("error"):
        message = error.get("message") if isinstance(error, dict) else error
        raise _StreamError(str(message))
    choices = data.get("choices")
    if choices:
        record.choice_s.append(now)
        if _content(choices[0]):
            record.content_s.append(now)
    usage = data.get("usage")
    if isinstance(usage, dict):
        record.output_tokens = usage.get("completion_tokens", record.output_tokens)
        record.prompt_tokens = usage.get("prompt_tokens", record.prompt_tokens)


class _StreamError(Exception):
    pass


async def send_one(
    session: aiohttp.ClientSession, target: Target, prompt: Prompt, record: RequestRecord, t0: float
) -> None:
    """Stream one request, filling `record`; failures are recorded, never raised."""
    path = "/chat/completions" if target.endpoint is Endpoint.CHAT else "/completions"
    headers = {"Authorization": f"Bearer {target.api_key}"}
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    record.sent_s = time.perf_counter() - t0
    body = build_body(target, prompt)
    try:
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                # A redirect is not followed: the key goes only to the address chosen, and
                # the 3xx is recorded as the request's error.
                response = await session.post(
                    target.base_url + path,
                    json=body,
                    headers=headers,
                    timeout=timeout,
                    allow_redirects=False,
                )
                break
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                # A kept-alive connection the engine closed as it was reused (llama-server
                # closes one after a number of requests): nothing was answered, so send it
                # again on another. Only before any answer: a reply is never sent twice.
                if attempt == SEND_ATTEMPTS:
                    raise
        async with response:
            if response.status != 200:
                text = (await response.text())[:300]
                record.error = f"HTTP {response.status}: {text}"
                return
            async for line in response.content:
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    continue
                _take_event(record, payload, time.perf_counter() - t0)
        if not record.choice_s:
            record.error = "the stream ended without any token"
    except _StreamError as exc:
        record.error = f"the engine reported an error: {exc}"
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        record.error = f"{type(exc).__name__}: {exc}"
    finally:
        record.end_s = time.perf_counter() - t0


def new_session(limit: int) -> aiohttp.ClientSession:
    # No connection limit of its own: the benchmark's concurrency is the limit. No proxies
    # from the environment: the target is usually loopback.
    connector = aiohttp.TCPConnector(limit=limit, force_close=False)
    return aiohttp.ClientSession(connector=connector, trust_env=False)


async def warm_up(
    session: aiohttp.ClientSession,
    target: Target,
    prompts: Sequence[Prompt],
    advise: Callable[[str], str | None] | None = None,
) -> None:
    """Send the warm-up requests one by one; the first failure stops the benchmark, said in
    the engine's words with `advise`'s advice on them where it has any."""
    for i, prompt in enumerate(prompts):
        record = RequestRecord(-1 - i, prompt.input_len, prompt.output_len)
        await send_one(session, target, prompt, record, time.perf_counter())
        if record.error:
            reason = reason_of(record.error)
            advice = advise(reason) if advise is not None else None
            then = (
                f" What to change: {advice}"
                if advice
                else " Check that the gateway serves this model (`roundhouse gateway status`)."
            )
            raise WarmupError(
                f"A warm-up request to {target.model!r} failed: {reason.rstrip('.')}.{then}"
            )


async def run_requests(
    session: aiohttp.ClientSession,
    target: Target,
    prompts: Sequence[Prompt],
    offsets: Sequence[float],
    max_concurrency: int | None = None,
    progress: Progress | None = None,
) -> tuple[list[RequestRecord], float]:
    """Send request i at `offsets[i]` seconds (later when `max_concurrency` are in flight);
    returns the records and the run's duration in seconds.

    The dispatch delay of a request is how late it went out against the later of its
    arrival time and the moment a slot freed for it: the client's own lag. A closed loop's
    opening burst has no schedule, hence no delay.
    """
    records = [RequestRecord(i, p.input_len, p.output_len) for i, p in enumerate(prompts)]
    limit = min(max_concurrency or len(prompts), len(prompts)) or 1
    closed_loop = max_concurrency is not None
    next_index = 0
    done = failed = 0
    t0 = time.perf_counter()

    # A pool of `limit` workers, each taking the next request as soon as it is free: the
    # request goes out in the same step that ended the last one, with no hop through a
    # semaphore and a dispatcher task (two loop turns, each behind every stream's events
    # under load, which the dispatch delay then charged to the client).
    async def worker() -> None:
        nonlocal next_index, done, failed
        free_at: float | None = None
        while next_index < len(records):
            i = next_index
            next_index += 1
            offset = offsets[i]
            wait = offset - (time.perf_counter() - t0)
            if wait > 0:
                await asyncio.sleep(wait)
            if free_at is not None:
                records[i].scheduled_s = max(offset, free_at)
            elif closed_loop and offset == 0.0:
                records[i].scheduled_s = None
            else:
                records[i].scheduled_s = offset
            try:
                await send_one(session, target, prompts[i], records[i], t0)
            finally:
                done += 1
                failed += records[i].error is not None
                free_at = time.perf_counter() - t0
                if progress is not None:
                    progress(done, len(records), failed)

    await asyncio.gather(*(worker() for _ in range(limit)))
    return records, time.perf_counter() - t0
