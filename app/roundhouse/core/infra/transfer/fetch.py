"""One file over HTTP into its partial file: Range resume, If-Range, stall retries with backoff.

The partial file's bytes are the progress: a later attempt, or a later process, asks for the
rest with `Range: bytes=<have>-`. What a crash may have left unflushed is not trusted: the
file is cut back to the size last made durable (fsync) and recorded.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp
import certifi

from roundhouse.core.infra.transfer.words import PLAIN_WORDS, TransferWords
from roundhouse.core.infra.transfer.writer import (
    Opener,
    PartialWriter,
    open_partial,
    partial_size,
    truncate_partial,
)

_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
MiB = 1024 * 1024
# An attempt that brought this much counts as progress: the count of failures starts over.
PROGRESS_RESETS_FAILURES = MiB

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


@dataclass(frozen=True)
class TransferPolicy:
    """How hard to try, and how often to report and make bytes durable."""

    stall_timeout_s: float = 30.0
    attempts: int = 5
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    connect_timeout_s: float = 30.0
    buffer_bytes: int = 4 * MiB
    # A slow transfer still reaches the file (and the progress) this often.
    flush_every_s: float = 0.5
    progress_every_s: float = 0.25
    # fsync and record the durable size this often: at most what a crash costs.
    checkpoint_every_s: float = 2.0

    def backoff(self, failures: int) -> float:
        return float(min(self.backoff_cap_s, self.backoff_base_s * 2 ** max(0, failures - 1)))


@dataclass
class TransferPlan:
    """One file to fetch: where from, into which partial, how big, resumed from where."""

    label: str  # how to name the file to a user: "org/name: path", "llama-b1.tar.gz"
    url: str
    partial: Path
    size: int
    headers: dict[str, str]  # authorization and user agent
    durable: int = 0  # bytes of the partial known to be on disk
    validator: str | None = None  # the server's strong ETag for those bytes (If-Range)
    words: TransferWords = PLAIN_WORDS  # the caller's sentences for each failure


class TransferHooks(Protocol):
    """What a transfer tells its caller as it goes."""

    def attempt_started(self, offset: int) -> None: ...
    def received(self, received: int) -> None: ...  # every chunk: keep it cheap
    def progress(self, received: int) -> None: ...  # a few times a second
    async def checkpoint(self, durable: int, validator: str | None) -> None: ...
    def retrying(self, reason: str, delay_s: float) -> None: ...


def new_session() -> aiohttp.ClientSession:
    """The HTTP session transfers use: aiohttp for its C parser (httpx reached half of
    curl's speed here, aiohttp more than curl's; ADR 28), the proxy from the environment and
    certifi's certificates, as huggingface_hub and httpx use; nothing decompressed."""
    context = ssl.create_default_context(cafile=certifi.where())
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=context),
        trust_env=True,
        auto_decompress=False,
    )


class _Retry(Exception):
    """The attempt ended early for a reason worth another try; the partial is kept."""

    def __init__(self, reason: str, *, restart: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.restart = restart  # the partial is no good: start from byte 0


class Transfer:
    """Fetch `plan.url` until the partial file holds `plan.size` bytes, or raise the error
    `plan.words` builds; cancellation leaves the partial synced and recorded."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        plan: TransferPlan,
        hooks: TransferHooks,
        policy: TransferPolicy,
        *,
        opener: Opener = open_partial,
        monotonic: Clock,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._session = session
        self.plan = plan
        self._hooks = hooks
        self._policy = policy
        self._opener = opener
        self._monotonic = monotonic
        self._sleep = sleep
        self._received = 0

    async def run(self) -> None:
        failures = 0
        while True:
            offset = await asyncio.to_thread(self._resume_point)
            if offset != self.plan.durable:
                await self._checkpoint(offset)  # cut back, or started over: say so first
            if offset == self.plan.size:
                return
            try:
                await self._attempt(offset)
                return
            except _Retry as exc:
                if exc.restart:
                    self.plan.validator = None
                    await self._checkpoint(0)
                failures = 0 if self._received - offset >= PROGRESS_RESETS_FAILURES else failures
                failures += 1
                if failures >= self._policy.attempts:
                    raise self.plan.words.gave_up(
                        self.plan.label, exc.reason, failures, self.plan.durable
                    ) from exc
                delay = self._policy.backoff(failures)
                self._hooks.retrying(exc.reason, delay)
                await self._sleep(delay)

    def _resume_point(self) -> int:
        """Where to continue: the partial's size, cut back to what was recorded durable."""
        if self.plan.size == 0:
            # Nothing to fetch, but a file to install: made as every partial file is.
            self._opener(self.plan.partial, False).close()
            self._received = 0
            return 0
        have = partial_size(self.plan.partial)
        offset = min(have, self.plan.durable)
        if offset > self.plan.size:
            offset = 0
        if have > offset:
            truncate_partial(self.plan.partial, offset, self.plan.words)
        self._received = offset
        return offset

    async def _attempt(self, offset: int) -> None:
        headers = {**self.plan.headers, "Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
            if self.plan.validator:
                headers["If-Range"] = self.plan.validator
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self._policy.connect_timeout_s,
            sock_read=self._policy.stall_timeout_s,  # no byte for this long: a stall
        )
        self._hooks.attempt_started(offset)
        try:
            # Redirects are followed; one to another origin (the CDN) loses the
            # Authorization header on the way (aiohttp drops it, as huggingface_hub does).
            async with self._session.get(
                self.plan.url, headers=headers, timeout=timeout, allow_redirects=True
            ) as reply:
                start = self._check(reply, offset)
                await self._receive(reply, start)
        except TimeoutError as exc:
            raise _Retry(f"no data arrived for {self._policy.stall_timeout_s:g} s") from exc
        except (aiohttp.TooManyRedirects, aiohttp.InvalidURL) as exc:
            raise self.plan.words.redirects(self.plan.label, exc) from exc
        except aiohttp.ClientError as exc:
            raise _Retry(f"the connection failed ({exc or type(exc).__name__})") from exc
        if self._received < self.plan.size:
            raise _Retry("the connection ended early")

    def _check(self, reply: aiohttp.ClientResponse, offset: int) -> int:
        """Where the reply's bytes start (0 when the server sends the whole file)."""
        status = reply.status
        encoding = reply.headers.get("content-encoding", "identity").lower()
        if status in (200, 206) and encoding not in ("identity", ""):
            raise _Retry(f"the server compressed the file ({encoding})", restart=True)
        if status == 206:
            found = _CONTENT_RANGE.match(reply.headers.get("content-range", ""))
            if not found:
                raise _Retry("the server sent a range without saying which", restart=True)
            self._check_size(None if found.group(3) == "*" else int(found.group(3)))
            if int(found.group(1)) != offset:
                raise _Retry("the server resumed at the wrong place", restart=True)
            self._take_validator(reply)
            return offset
        if status == 200:
            length = reply.headers.get("content-length")
            self._check_size(int(length) if length and length.isdigit() else None)
            self._take_validator(reply)
            return 0  # a whole file: to a Range request it means the file changed
        if status == 416:
            raise _Retry("the server refused to resume", restart=True)
        if status in (408, 429) or status >= 500:
            raise _Retry(f"the server answered HTTP {status}")
        raise self.plan.words.refused(self.plan.label, self.plan.url, status, reply.headers)

    def _check_size(self, total: int | None) -> None:
        if total is not None and total != self.plan.size:
            raise self.plan.words.wrong_size(self.plan.label, total, self.plan.size)

    def _take_validator(self, reply: aiohttp.ClientResponse) -> None:
        etag = reply.headers.get("etag")
        # If-Range takes only a strong validator (RFC 9110 13.1.5).
        self.plan.validator = etag if etag and not etag.startswith("W/") else None

    async def _receive(self, reply: aiohttp.ClientResponse, start: int) -> None:
        policy = self._policy
        writer = await PartialWriter.open(self.plan.partial, start, self._opener, self.plan.words)
        self._received = start
        self._hooks.received(start)
        if start < self.plan.durable:  # started over: the file was emptied
            await self._checkpoint(start)
        # Chunks as they came (no copy into one buffer), handed to the writer by the MiB.
        chunks: list[bytes] = []
        buffered = 0
        now = self._monotonic()
        last_flush = last_progress = last_checkpoint = now
        keep = True
        words = self.plan.words
        try:
            async for chunk in reply.content.iter_any():
                self._received += len(chunk)
                if self._received > self.plan.size:
                    keep = False
                    raise words.oversent(self.plan.label, self.plan.size)
                chunks.append(chunk)
                buffered += len(chunk)
                self._hooks.received(self._received)
                now = self._monotonic()
                if now - last_progress >= policy.progress_every_s:
                    last_progress = now
                    self._hooks.progress(self._received)
                if buffered < policy.buffer_bytes and now - last_flush < policy.flush_every_s:
                    continue
                sync = now - last_checkpoint >= policy.checkpoint_every_s
                try:
                    await writer.write(chunks, sync=sync)
                except Exception:
                    keep = False  # the file refused bytes: writing more would fail again
                    raise
                chunks, buffered, last_flush = [], 0, now
                if sync:
                    last_checkpoint = now
                if writer.synced != self.plan.durable:
                    await self._checkpoint(writer.synced)
        except aiohttp.ClientPayloadError:
            # The connection broke: the bytes that came before the break are valid, but
            # aiohttp raises the break before handing them over. Kept, they spare a resume
            # from fetching them again (and the partial holds all that arrived).
            tail = _unread(reply.content)
            if tail and self._received + len(tail) <= self.plan.size:
                self._received += len(tail)
                chunks.append(tail)
                self._hooks.received(self._received)
            raise
        finally:
            await self._finish(writer, chunks if keep else [])

    async def _finish(self, writer: PartialWriter, chunks: list[bytes]) -> None:
        """Write what was received (valid bytes, even when the connection broke) and
        record what is durable; the write's own failure is raised unless another error is
        on its way. A complete file is not synced here: the runner does it before the
        digest check, so the transfer's speed is the network's."""
        try:
            if chunks:
                await writer.write(chunks)
        finally:
            try:
                await writer.close(sync=writer.written < self.plan.size)
            finally:
                self._received = writer.written
                self._hooks.progress(writer.written)
                await self._checkpoint(writer.synced)

    async def _checkpoint(self, durable: int) -> None:
        self.plan.durable = durable
        await self._hooks.checkpoint(durable, self.plan.validator)


def _unread(content: aiohttp.StreamReader) -> bytes:
    """What arrived but was not read yet. StreamReader.readany raises a broken connection
    before the buffer; its own drain (`_read_nowait`, private) reads the buffer regardless.
    Anything unexpected there gives nothing: the bytes are then fetched again."""
    drain = getattr(content, "_read_nowait", None)
    if drain is None:
        return b""
    try:
        data = drain(-1)
    except Exception:  # noqa: BLE001 - a private method may fail in ways of its own
        return b""
    return data if isinstance(data, bytes) else b""
