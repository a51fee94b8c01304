"""Reading a GGUF header over HTTP Range requests, before (or instead of) a download."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx

from roundhouse.core.errors import NotFoundError
from roundhouse.core.knowledge.gguf.cursor import MAX_HEADER_BYTES
from roundhouse.core.knowledge.gguf.errors import GgufError, GgufFetchError, NeedMoreBytes
from roundhouse.core.knowledge.gguf.header import GgufHeader
from roundhouse.core.knowledge.gguf.parser import HeaderParser
from roundhouse.core.knowledge.gguf.sources import BufferSource

# Enough for most headers in one request (a 150k-token vocabulary is 2-3 MiB with its
# merges, so those take two or three); each further request at least doubles the bytes.
FIRST_FETCH = 1 << 20
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)


async def read_gguf_header_url(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str] | None = None
) -> GgufHeader:
    """The header of the GGUF file at `url`, fetched with Range requests (never the whole
    file: a server that ignores Range is refused). `headers` may carry authorization.

    Raises GgufError (not a readable GGUF), NotFoundError (HTTP 404) or GgufFetchError.
    """
    fetch = _Fetcher(client, url, dict(headers or {}))
    data, size = await fetch.range(0, FIRST_FETCH, None)
    source = BufferSource(size, data)
    parser = HeaderParser(source)
    while True:
        try:
            # Parsing a big vocabulary takes milliseconds of CPU: not on the event loop.
            return await asyncio.to_thread(parser.run)
        except NeedMoreBytes as need:
            end = min(max(need.end + FIRST_FETCH, 2 * source.fetched), size, MAX_HEADER_BYTES)
            more, _ = await fetch.range(source.fetched, end, size)
            source.extend(more)
        except GgufError as exc:
            raise exc.located(url) from None


class _Fetcher:
    def __init__(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self._client = client
        self._url = url
        self._headers = headers
        self._host = urlsplit(url).hostname or url

    async def range(self, start: int, end: int, size: int | None) -> tuple[bytes, int]:
        """Bytes [start, end) and the file's size (checked against `size` when known)."""
        headers = {**self._headers, "Range": f"bytes={start}-{end - 1}"}
        headers["Accept-Encoding"] = "identity"  # Content-Range counts the bytes as stored
        try:
            async with self._client.stream(
                "GET", self._url, headers=headers, follow_redirects=True
            ) as response:
                total = self._check(response, start, end, size)
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) >= end - start:
                        break  # a server may send more than asked: never read on
        except httpx.HTTPError as exc:
            raise GgufFetchError(
                f"Could not read the model file from {self._host} ({exc or type(exc).__name__})."
                " Check the connection and try again."
            ) from None
        want = min(end, total) - start
        if len(body) < want:
            raise GgufFetchError(
                f"{self._host} closed the connection early. Try again in a moment."
            )
        return bytes(body[:want]), total

    def _check(self, response: httpx.Response, start: int, end: int, size: int | None) -> int:
        code = response.status_code
        if code == 404:
            raise NotFoundError(f"There is no file at {self._url}.")
        if code in (401, 403):
            raise GgufFetchError(
                f"{self._host} refused access (HTTP {code}). If the repository is gated, "
                "accept its terms on its page and add your Hugging Face token."
            )
        if code == 416:
            raise GgufError("it is empty or shorter than a GGUF header", source=self._url)
        if code == 200:
            length = response.headers.get("Content-Length")
            if start == 0 and length is not None and length.isdigit() and int(length) <= end:
                return int(length)  # the whole file, and it is small: as good as a range
            raise GgufFetchError(
                f"{self._host} ignores partial requests (HTTP Range), so the model's header "
                "cannot be read without downloading the whole file. Download it first."
            )
        if code != 206:
            raise GgufFetchError(f"{self._host} answered HTTP {code}. Try again later.")
        return self._total(response.headers.get("Content-Range", ""), start, size)

    def _total(self, content_range: str, start: int, size: int | None) -> int:
        match = _CONTENT_RANGE.fullmatch(content_range.strip())
        if match is None or match[3] == "*" or int(match[1]) != start:
            raise GgufFetchError(
                f"{self._host} answered a partial request with a range that does not match "
                f"({content_range or 'none'}). Try again later."
            )
        total = int(match[3])
        if size is not None and total != size:
            raise GgufFetchError(
                f"The file at {self._host} changed while its header was read. Try again."
            )
        return total
