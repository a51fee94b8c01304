"""Benchmark: a download's transfer from a local server against curl on the same file
(run with `-m perf`). The transfer is what curl does: bytes over HTTP into a file; the
digest check and the move into the cache come after, in both cases."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from roundhouse.core.models.downloads.transfer import (
    Transfer,
    TransferPlan,
    TransferPolicy,
    new_session,
)

SIZE = 512 * 1024 * 1024
ROUNDS = 5


class _Quiet:
    def attempt_started(self, offset: int) -> None: ...
    def received(self, received: int) -> None: ...
    def progress(self, received: int) -> None: ...
    async def checkpoint(self, durable: int, validator: str | None) -> None: ...
    def retrying(self, reason: str, delay_s: float) -> None: ...


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    source = tmp_path / "source.bin"
    block = os.urandom(1024 * 1024)
    with source.open("wb") as handle:
        for _ in range(SIZE // len(block)):
            handle.write(block)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(SIZE))
            self.end_headers()
            with source.open("rb") as handle:
                self.connection.sendfile(handle)  # the server costs little CPU: the kernel's

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/model.gguf"
    server.shutdown()
    server.server_close()


def _settle(*paths: Path) -> None:
    """Start each run alike: no file left, no dirty pages being written back."""
    for path in paths:
        path.unlink(missing_ok=True)
    os.sync()
    time.sleep(0.3)


def _curl(url: str, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["curl", "-sS", "-o", str(out), url], check=True)
    return time.perf_counter() - start


async def _ours(url: str, out: Path) -> float:
    async with new_session() as session:
        plan = TransferPlan("bench", url, out, SIZE, {})
        start = time.perf_counter()
        await Transfer(session, plan, _Quiet(), TransferPolicy(), monotonic=time.monotonic).run()
        return time.perf_counter() - start


@pytest.mark.perf
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_transfer_keeps_up_with_curl(served: str, tmp_path: Path) -> None:
    curl_out, our_out = tmp_path / "curl.bin", tmp_path / "ours.bin"
    curl_s, ours_s = [], []
    for _ in range(ROUNDS):
        _settle(curl_out, our_out)
        curl_s.append(_curl(served, curl_out))
        _settle(curl_out, our_out)
        ours_s.append(asyncio.run(_ours(served, our_out)))
    assert our_out.stat().st_size == SIZE
    curl_best, ours_best = SIZE / min(curl_s) / 1e6, SIZE / min(ours_s) / 1e6
    print(f"\ncurl {curl_best:.0f} MB/s, Roundhouse {ours_best:.0f} MB/s (best of {ROUNDS})")
    assert ours_best >= 0.9 * curl_best
