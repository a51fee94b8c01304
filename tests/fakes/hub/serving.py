"""The handler both listeners share (errors, logging, file bytes), and the CDN listener's."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.fakes.http_plumbing import StandinHandler
from tests.fakes.hub.catalog import HubFile, Repo
from tests.fakes.hub.state import HubState
from tests.fakes.hub.transfer import Unsatisfiable, choose_span, send_span

CONTROL_PREFIX = "/_fake/"


class BaseHandler(StandinHandler):
    """Logs each request, answers Hub-style errors and serves file bytes with Range."""

    state: HubState  # set on the subclass made for each server
    listener = "hub"
    json_content_type = "application/json; charset=utf-8"
    _entry: dict[str, Any] | None = None

    def log_message(self, format: str, *args: object) -> None:
        return  # the request log (GET /_fake/requests) is the record

    # -- the request, split up -------------------------------------------------------------

    def begin(self) -> tuple[list[str], dict[str, list[str]]]:
        """Log the request; return its path segments (each unquoted) and its query."""
        url = urlsplit(self.path)
        self._entry = None
        if not url.path.startswith(CONTROL_PREFIX):
            self._entry = {
                "server": self.listener,
                "method": self.command,
                "path": url.path,
                "query": url.query,
                "headers": dict(self.headers.items()),
                "status": None,
                "sent": 0,
            }
            self.state.log.add(self._entry)
        segments = [unquote(s) for s in url.path.split("/")[1:]]
        return segments, parse_qs(url.query, keep_blank_values=True)

    def send_response(self, code: int, message: str | None = None) -> None:
        if self._entry is not None:
            self._entry["status"] = code
        super().send_response(code, message)

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def read_json(self) -> Any:
        body = self.read_body()
        return json.loads(body) if body else None

    # -- answers ---------------------------------------------------------------------------

    def send_json(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.json_content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def hub_error(
        self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None
    ) -> None:
        """An error as the Hub sends it: `X-Error-Code`, `X-Error-Message`, `{"error": ...}`."""
        extra = {"X-Error-Message": message, **(headers or {})}
        if code is not None:
            extra["X-Error-Code"] = code
        self.send_json(status, {"error": message}, extra)

    def send_file(self, repo: Repo, hub_file: HubFile, headers: dict[str, str]) -> None:
        """200 or 206 with the file's bytes (HEAD: the headers), through any active fault."""
        is_get = self.command == "GET"
        fault = self.state.faults.take(repo.id, hub_file.path) if is_get else None
        if fault is not None and fault.status is not None:
            self.hub_error(fault.status, None, f"injected fault: HTTP {fault.status}")
            return
        etag = f'"{hub_file.etag}"'
        if_range = self.headers.get("If-Range")
        honour = not (fault is not None and fault.ignore_range)
        honour = honour and (if_range is None or if_range.strip().removeprefix("W/") == etag)
        try:
            span = choose_span(self.headers.get("Range"), hub_file.size, honour)
        except Unsatisfiable:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{hub_file.size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if span.partial else 200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        name = quote(hub_file.path.rsplit("/", 1)[-1])
        self.send_header("Content-Disposition", f"inline; filename*=UTF-8''{name}")
        self.send_header("Content-Length", str(span.length))
        if span.partial:
            self.send_header("Content-Range", f"bytes {span.start}-{span.end - 1}/{hub_file.size}")
        self.end_headers()
        if not is_get:
            return
        sent = 0
        try:
            sent = send_span(self.connection, hub_file.disk, span, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; the log shows it got less
        if self._entry is not None:
            self._entry["sent"] = sent
        if sent < span.length:
            self.close_connection = True  # the client sees the body end early


class CdnHandler(BaseHandler):
    """`GET|HEAD /repos/<org>/<name>/<sha256>`: LFS bytes, as a signed CDN URL would give
    them (no auth, no Hub headers), on a port of its own so it is another origin."""

    listener = "cdn"

    def do_GET(self) -> None:
        segments, _ = self.begin()
        catalog = self.state.catalog
        found = None
        if len(segments) == 4 and segments[0] == "repos":
            found = catalog.by_sha256(f"{segments[1]}/{segments[2]}", segments[3])
        if found is None:
            self.send_bytes(404, b"NoSuchKey", "text/plain")
            return
        self.send_file(catalog.repos[f"{segments[1]}/{segments[2]}"], found, {})

    do_HEAD = do_GET
