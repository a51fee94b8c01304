"""HTTP/1.1 plumbing shared by the stand-in engines: plain replies and chunked streams."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class StandinHandler(BaseHTTPRequestHandler):
    """Replies with a length, or streams in chunks, the way the real engines' servers do."""

    protocol_version = "HTTP/1.1"
    json_content_type = "application/json"

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
