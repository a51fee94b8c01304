"""A minimal engine HTTP server: /health answers a fixed status, /v1/models one model."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "fake-model"


def serve(port: int, health_status: int, *, background: bool = False) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/health":
                status, body = (
                    health_status,
                    {"status": "ok" if health_status == 200 else "loading"},
                )
            elif self.path == "/v1/models":
                status, body = 200, {"object": "list", "data": [{"id": MODEL_ID}]}
            else:
                status, body = 404, {"error": "not found"}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            print(f"request: {format % args}", flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on 127.0.0.1:{port} (pid {os.getpid()})", flush=True)
    if background:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    else:
        server.serve_forever()
