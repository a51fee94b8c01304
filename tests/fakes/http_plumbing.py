"""HTTP/1.1 plumbing shared by the stand-ins: plain replies, chunked streams, and a server
in a thread that logs what it was asked."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class StandinHandler(BaseHTTPRequestHandler):
    """Replies with a length, or streams in chunks, the way the real engines' servers do."""

    protocol_version = "HTTP/1.1"
    json_content_type = "application/json"

    def setup(self) -> None:
        super().setup()
        # As the engines' own servers (uvicorn, cpp-httplib, Go's net/http) do: without it,
        # a stream's headers and first chunk, two small writes, wait on the client's delayed
        # ACK (about 40 ms), which no real engine makes anyone wait.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status: int, body: object) -> None:
        self.send_bytes(status, json.dumps(body).encode(), self.json_content_type)

    def start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@dataclass
class Logged:
    """One request a stand-in received: tests assert what was sent, or that nothing was."""

    method: str
    path: str
    headers: dict[str, str]


class ThreadedStandin:
    """A stand-in served from a thread on 127.0.0.1 for the length of a `with` block, with a
    log of its requests. Subclasses call `_serve(handler)` once they are set up."""

    log: list[Logged]

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,))

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def record(self, entry: Logged) -> None:
        with self._lock:
            self.log.append(entry)

    def requests(self) -> list[Logged]:
        with self._lock:
            return list(self.log)
