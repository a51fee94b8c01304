"""Reading GGUF headers over HTTP Range from a real local server (stdlib, in a thread)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from roundhouse.core.errors import NotFoundError
from roundhouse.core.knowledge.gguf import (
    GgufError,
    GgufFetchError,
    read_gguf_header,
    read_gguf_header_url,
    summarize,
)
from tests.fixtures.models.gguf_headers import LLAMA_3_1_8B, write_known_gguf
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

TOKEN = "Bearer hf_test"


@dataclass
class Files:
    """What the server serves and what it saw."""

    paths: dict[str, Path] = field(default_factory=dict)
    honour_range: bool = True
    ranges: list[str] = field(default_factory=list)
    sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    files: Files

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != TOKEN:
            self._reply(401, b"token needed")
            return
        path = self.files.paths.get(self.path)
        if path is None:
            self._reply(404, b"no such file")
            return
        size = path.stat().st_size
        wanted = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if wanted is None or not self.files.honour_range:
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self._send(path, 0, size)
            return
        self.files.ranges.append(wanted[0])
        start, end = int(wanted[1]), min(int(wanted[2]), size - 1)
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._send(path, start, end + 1)

    def _reply(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, path: Path, start: int, end: int) -> None:
        with path.open("rb") as file:
            file.seek(start)
            while start < end:
                chunk = file.read(min(1 << 16, end - start))
                try:
                    self.wfile.write(chunk)
                except OSError:  # the client went away: what a Range-less reply should see
                    return
                start += len(chunk)
                with self.files.lock:
                    self.files.sent += len(chunk)


@pytest.fixture
def server() -> Iterator[tuple[str, Files]]:
    files = Files()
    handler = type("Handler", (_Handler,), {"files": files})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", files
    finally:
        httpd.shutdown()
        httpd.server_close()


async def _read(url: str, headers: dict[str, str] | None = None) -> object:
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        return await read_gguf_header_url(client, url, headers)


def test_a_small_model_in_one_request(server: tuple[str, Files], tmp_path: Path) -> None:
    base, files = server
    files.paths["/tiny.gguf"] = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    header = asyncio.run(_read(f"{base}/tiny.gguf", {"Authorization": TOKEN}))
    assert header == read_gguf_header(tmp_path / "tiny.gguf")
    assert len(files.ranges) == 1


def test_a_big_header_in_growing_ranges(server: tuple[str, Files], tmp_path: Path) -> None:
    base, files = server
    path = write_known_gguf(LLAMA_3_1_8B, tmp_path)  # 4.9 GB sparse, a 9 MiB header
    files.paths["/llama.gguf"] = path
    header = asyncio.run(_read(f"{base}/llama.gguf", {"Authorization": TOKEN}))
    local = read_gguf_header(path)
    assert header == local
    assert summarize(header).quantization == "Q4_K_M"
    assert header.file_size == path.stat().st_size
    # Geometric growth: a handful of requests, and not much more than the header fetched.
    assert 2 <= len(files.ranges) <= 6, files.ranges
    assert files.sent < 2 * local.data_offset


def test_a_server_that_ignores_range_is_refused_without_the_download(
    server: tuple[str, Files], tmp_path: Path
) -> None:
    base, files = server
    files.paths["/llama.gguf"] = write_known_gguf(LLAMA_3_1_8B, tmp_path, tokenizer=False)
    files.honour_range = False
    with pytest.raises(GgufFetchError, match="ignores partial requests"):
        asyncio.run(_read(f"{base}/llama.gguf", {"Authorization": TOKEN}))
    assert files.sent < 64 << 20  # socket buffers at most, never the 4.9 GB


def test_a_small_file_sent_whole_is_fine(server: tuple[str, Files], tmp_path: Path) -> None:
    base, files = server
    files.paths["/tiny.gguf"] = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    files.honour_range = False
    header = asyncio.run(_read(f"{base}/tiny.gguf", {"Authorization": TOKEN}))
    assert header.architecture == "llama"


def test_http_errors_in_words(server: tuple[str, Files], tmp_path: Path) -> None:
    base, files = server
    files.paths["/tiny.gguf"] = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    with pytest.raises(GgufFetchError, match="refused access"):
        asyncio.run(_read(f"{base}/tiny.gguf"))
    with pytest.raises(NotFoundError):
        asyncio.run(_read(f"{base}/missing.gguf", {"Authorization": TOKEN}))
    (tmp_path / "empty.gguf").write_bytes(b"")
    files.paths["/empty.gguf"] = tmp_path / "empty.gguf"
    with pytest.raises(GgufError, match="empty"):
        asyncio.run(_read(f"{base}/empty.gguf", {"Authorization": TOKEN}))
    (tmp_path / "page.gguf").write_bytes(b"<html>rate limited</html>")
    files.paths["/page.gguf"] = tmp_path / "page.gguf"
    with pytest.raises(GgufError, match="signature") as caught:
        asyncio.run(_read(f"{base}/page.gguf", {"Authorization": TOKEN}))
    assert f"{base}/page.gguf" in str(caught.value)


def test_an_unreachable_server_in_words() -> None:
    with pytest.raises(GgufFetchError, match="Check the connection"):
        asyncio.run(_read("http://127.0.0.1:9/model.gguf"))
