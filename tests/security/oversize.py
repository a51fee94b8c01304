"""A POST whose declared body is one byte over the control API's cap, sent head only: what
the daemon answers before any of the body."""

from __future__ import annotations

import socket

import httpx

from roundhouse.server.request_guard import CONTROL_BODY_LIMIT
from tests.daemon_process import DaemonProcess


def answer_to_oversize_post(daemon: DaemonProcess, path: str) -> str:
    url = httpx.URL(daemon.url)
    assert url.host and url.port
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {daemon.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {CONTROL_BODY_LIMIT + 1}\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port), timeout=10) as raw:
        raw.sendall(head.encode())
        return raw.recv(4096).decode(errors="replace")
