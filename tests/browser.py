"""Headless Chromium for tests: a page served from a loopback site, what it reports back, and
every HTTP response the browser received (from Chromium's NetLog, opaque ones included)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.engines.fixtures import running_in_ci

ENV_CHROMIUM = "ROUNDHOUSE_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "run .ci/setup (Debian's chromium package), or set " + ENV_CHROMIUM
# The browser's own noise kept off the network and the screen; --no-proxy-server because a
# proxy from the environment would carry loopback requests elsewhere.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    "--net-log-capture-mode=Default",
)


def find_chromium() -> str | None:
    """ROUNDHOUSE_CHROMIUM, else the first Chromium-like browser on PATH."""
    chosen = os.environ.get(ENV_CHROMIUM)
    if chosen:
        return chosen if shutil.which(chosen) else None
    return next((found for n in CHROMIUM_NAMES if (found := shutil.which(n))), None)


def chromium_or_skip() -> str:
    """The browser; without one the test fails in CI (it must run there) and skips elsewhere."""
    found = find_chromium()
    if found is None:
        message = f"no headless Chromium found: {INSTALL_HINT}"
        if running_in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@dataclass(frozen=True)
class Response:
    """One HTTP response the browser read: its request, status and headers (names lower)."""

    method: str
    url: str
    status: int
    headers: dict[str, str]


@dataclass
class Site:
    """A loopback HTTP site: `/` is the page, `POST /report` takes its JSON report.

    Two controls show that the browser's cross-origin requests work at all, so a test that
    finds everything refused is not merely facing a browser that sent nothing: `/open`
    answers JSON with `Access-Control-Allow-Origin: *` (readable from any origin) and
    `POST /sink` counts the requests that reached it."""

    page: str
    port: int = 0
    reports: queue.Queue[Any] = field(default_factory=queue.Queue)
    sunk: list[bytes] = field(default_factory=list)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str, *extra: tuple[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in extra:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/":
                self._send(200, site.page.encode(), "text/html; charset=utf-8")
            elif self.path == "/open":
                body = b'{"open": true}'
                self._send(200, body, "application/json", ("Access-Control-Allow-Origin", "*"))
            else:
                self._send(404, b"", "text/plain")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/report":
                site.reports.put(json.loads(body))
            elif self.path == "/sink":
                site.sunk.append(body)
            self._send(204, b"", "text/plain")

    return Handler


@contextmanager
def serving(page: str) -> Iterator[Site]:
    """The page's site on 127.0.0.1 (a free port) for the length of the block."""
    site = Site(page)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, name="browser-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Visit:
    report: Any
    responses: list[Response]


def visit(chromium: str, url: str, site: Site, within_s: float = 60.0) -> Visit:
    """Open `url` in a fresh headless Chromium, wait for the page's report to `site`, then
    close the browser and read every response it got from its NetLog."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as folder:
        net_log = Path(folder) / "net-log.json"
        argv = [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={Path(folder) / 'profile'}",
            f"--log-net-log={net_log}",
            url,
        ]
        log = Path(folder) / "chromium.log"
        with log.open("wb") as out:
            browser = subprocess.Popen(
                argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            report = _wait_report(site, browser, within_s, log)
            responses = _wait_logged(net_log, f"{url.rstrip('/')}/report")
        finally:
            _close(browser)
        return Visit(report, responses)


def _wait_report(site: Site, browser: subprocess.Popen[bytes], within_s: float, log: Path) -> Any:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            return site.reports.get(timeout=0.1)
        except queue.Empty:
            if browser.poll() is not None:
                break
    tail = log.read_text(errors="replace")[-2000:]
    raise AssertionError(f"the page sent no report in {within_s:g} s; Chromium's log:\n{tail}")


def _wait_logged(net_log: Path, last: str, within_s: float = 15.0) -> list[Response]:
    """The responses in the NetLog once it holds the one to `last`: Chromium logs events in
    order but writes them behind, and cuts the file short at exit."""
    deadline = time.monotonic() + within_s
    while True:
        responses = read_net_log(net_log) if net_log.exists() else []
        if any(r.url == last for r in responses):
            return responses
        if time.monotonic() > deadline:
            raise AssertionError(f"Chromium's NetLog never logged the reply to {last}")
        time.sleep(0.1)


def _close(browser: subprocess.Popen[bytes]) -> None:
    # Its helper processes share its session: none is left behind.
    if browser.poll() is None:
        browser.terminate()
        with suppress(subprocess.TimeoutExpired):
            browser.wait(timeout=15)
    with suppress(ProcessLookupError):
        os.killpg(browser.pid, signal.SIGKILL)
    browser.wait(timeout=15)


def read_net_log(path: Path) -> list[Response]:
    """Every response's headers in a NetLog file, the complete lines of one still being
    written included (Chromium writes the constants on the first line, then one event a
    line, and may exit before it has closed the file)."""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    try:
        constants = json.loads(lines[0].rstrip().rstrip(",") + "}")["constants"]
    except (json.JSONDecodeError, KeyError):
        return []
    names = {number: name for name, number in constants["logEventTypes"].items()}
    started: dict[int, tuple[str, str]] = {}
    found = []
    for line in lines[2:]:
        line = line.strip().rstrip(",")
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written when the file was read
        params = event.get("params") or {}
        source = event["source"]["id"]
        kind = names.get(event["type"])
        if kind == "URL_REQUEST_START_JOB":
            started[source] = (params.get("method", ""), params.get("url", ""))
        elif kind == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" and source in started:
            status_line, *rest = params.get("headers") or [""]
            method, url = started[source]
            headers = {}
            for header in rest:
                name, _, value = header.partition(":")
                headers[name.strip().lower()] = value.strip()
            parts = status_line.split()
            found.append(Response(method, url, int(parts[1]) if len(parts) > 1 else 0, headers))
    return found
