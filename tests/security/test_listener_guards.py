"""What a web page, a LAN host or a careless client can send to the daemon's two listeners,
through real daemon processes and real sockets (all traffic to 127.0.0.1):

- a foreign Origin (or a page's Sec-Fetch-Site) on every route of both listeners: 403, and
  nothing happened (no request reached the gateway, the daemon did not stop);
- a gateway POST that is not JSON (the `text/plain` simple request a page can send): 415,
  while the OpenAI client's own requests pass;
- `*` among the CORS origins without a key: refused on save (API and CLI), and the key
  cannot be cleared while it is there; a hand-edited `*` counts for nothing without a key;
- a peer beyond loopback (a second local address, or a local proxy's X-Forwarded-For)
  forging `Host: 127.0.0.1`: the key, whichever setting opened the listener;
- bodies past their cap (413, before the body is sent or as soon as the cap is passed),
  headers sent slowly or without end (408, 431), too many connections (503);
- a non-ASCII key or token: 401, not 500.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import httpx2
import openai
import psutil
import pytest

from roundhouse.api.discovery import read_discovery
from roundhouse.base.paths import resolve_home
from roundhouse.server.app import create_app
from roundhouse.server.gateway_listener import create_gateway_app
from roundhouse.server.http_limits import (
    HEADER_TIMEOUT_S,
    MAX_HEADER_BYTES,
    REMOTE_MAX_CONNECTIONS,
)
from roundhouse.server.request_guard import CONTROL_BODY_LIMIT, GATEWAY_BODY_LIMIT, MIB
from roundhouse.server.services import DaemonServices
from tests.api.test_cli import roundhouse
from tests.daemon_process import DaemonProcess, serve_argv, start_daemon
from tests.integration.test_gateway_security import lan_address, routes_of
from tests.processes import free_port, wait_for
from tests.support.standins import keyring_env

EVIL = "https://evil.example"
KEY = "rh-listener-guards-key-0123456789"
SET_A_KEY = "roundhouse gateway key --generate"


def write_settings(root: Path, **tables: dict[str, Any]) -> None:
    path = resolve_home(root).settings_file
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for table, values in tables.items():
        lines.append(f"[{table}]")
        lines += [f"{name} = {json.dumps(value)}" for name, value in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Guarded:
    """A daemon bound on 0.0.0.0 (`daemon.host`) with a second listener on loopback."""

    daemon: DaemonProcess
    second_port: int
    folder: Path

    @property
    def port(self) -> int:
        return int(self.daemon.url.rsplit(":", 1)[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def second(self) -> str:
        return f"http://127.0.0.1:{self.second_port}"

    def control(self, **headers: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.daemon.token}", **headers}
        return httpx.Client(base_url=self.base, headers=headers, trust_env=False)

    def set_key(self, key: str | None) -> None:
        with self.control() as client:
            if key is None:
                reply = client.delete("/api/v1/gateway/key")
            else:
                reply = client.post("/api/v1/gateway/key", json={"key": key})
        assert reply.status_code == 200, reply.text

    def put_gateway(self, **changes: Any) -> httpx.Response:
        with self.control() as client:
            current = client.get("/api/v1/settings").json()
            current["gateway"].update(changes)
            return client.put("/api/v1/settings", json=current)

    def requests_served(self) -> int:
        with self.control() as client:
            usage = client.get("/api/v1/gateway/usage").json()["usage"]
        return sum(u["requests"] + u["in_flight"] + u["queued"] for u in usage)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    folder = tmp_path_factory.mktemp("listener-guards")
    second = free_port()
    write_settings(
        folder / "home",
        daemon={"host": "0.0.0.0"},
        gateway={"listen_host": "127.0.0.1", "listen_port": second},
    )
    env = {
        **keyring_env(folder),
        # No Ollama to find; and a proxy setting that must not make every peer trusted.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "FORWARDED_ALLOW_IPS": "*",
    }
    daemon = start_daemon(folder / "home", env=env)
    try:
        yield Guarded(daemon, second, folder)
    finally:
        if daemon.process.poll() is None:
            assert daemon.stop(timeout=30) == 0


def _bare_services() -> DaemonServices:
    return cast(DaemonServices, SimpleNamespace(version="test"))


def _send(base: str, method: str, path: str, **headers: str) -> httpx.Response:
    body = None if method in ("GET", "HEAD", "OPTIONS") else b"{}"
    headers = {"content-type": "application/json", **headers} if body else headers
    return httpx.request(
        method, base + path, content=body, headers=headers, trust_env=False, timeout=10
    )


def _every_route() -> list[tuple[str, str, str]]:
    """(listener, method, path) of every route of both apps, and paths no route has."""
    found = [("daemon", m, p) for m, p in routes_of(create_app(_bare_services()))]
    found += [
        ("second", m, p) for m, p in routes_of(create_gateway_app(_bare_services(), frozenset()))
    ]
    found += [("daemon", "GET", "/nope"), ("second", "GET", "/nope"), ("daemon", "GET", "/docs")]
    return found


def test_a_foreign_origin_is_refused_on_every_route_of_both_listeners(guarded: Guarded) -> None:
    routes = _every_route()
    assert ("daemon", "POST", "/api/v1/shutdown") in routes
    assert ("second", "POST", "/v1/chat/completions") in routes
    token = f"Bearer {guarded.daemon.token}"
    for listener, method, path in routes:
        base = guarded.base if listener == "daemon" else guarded.second
        for headers in (
            {"origin": EVIL},
            {"origin": "null"},  # a sandboxed frame, a file:// page
            {"origin": EVIL, "authorization": token},  # the token changes nothing
            {"sec-fetch-site": "cross-site"},  # a page's no-cors GET carries no Origin
        ):
            reply = _send(base, method, path, **headers)
            where = (listener, method, path, headers)
            assert reply.status_code == 403, (where, reply.text)
            assert not any(h.startswith("access-control-") for h in reply.headers), where
            if path.startswith(("/api/v1", "/metrics")):
                assert reply.json()["title"] == "Forbidden origin", where
                assert "does not answer web pages" in reply.json()["detail"] or (
                    "another site" in reply.json()["detail"]
                ), where
            elif path.startswith("/api/"):  # Ollama's API: its clients read {"error": "..."}
                assert "gateway.cors_origins" in reply.json()["error"], where
            else:
                error = reply.json()["error"]
                assert error["code"] == "origin_not_allowed", where
                assert "gateway.cors_origins" in error["message"], where
    # Nothing happened: the daemon still runs, and no request reached the gateway.
    assert guarded.daemon.process.poll() is None
    assert guarded.requests_served() == 0
    # No Origin (every SDK, curl) and the listener's own page (the daemon's /docs) pass.
    assert _send(guarded.base, "GET", "/v1/models").status_code == 200
    own = {"origin": guarded.base, "authorization": token}
    assert _send(guarded.base, "GET", "/api/v1/status", **own).status_code == 200


def test_a_listed_origin_is_let_through_to_the_gateway_only(guarded: Guarded) -> None:
    listed = "http://localhost:3000"
    assert guarded.put_gateway(cors_origins=[listed]).status_code == 200
    try:
        for base in (guarded.base, guarded.second):
            reply = _send(base, "GET", "/v1/models", origin=listed)
            assert reply.status_code == 200, reply.text
            assert reply.headers["access-control-allow-origin"] == listed
            reply = _send(base, "POST", "/v1/chat/completions", origin=listed)
            assert reply.status_code == 400, reply.text  # past the guards: it names no model
        with guarded.control(origin=listed) as client:
            assert client.get("/api/v1/status").status_code == 403
    finally:
        assert guarded.put_gateway(cors_origins=[]).status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
    ],
)
def test_a_gateway_post_that_is_not_json_is_refused(
    guarded: Guarded, content_type: str | None
) -> None:
    posts = [(w, p) for w, m, p in _every_route() if m == "POST" and p.startswith("/v1")]
    assert ("second", "/v1/embeddings") in posts
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    for listener, path in posts:
        base = guarded.base if listener == "daemon" else guarded.second
        headers = {"content-type": content_type} if content_type else {}
        reply = httpx.post(base + path, content=body, headers=headers, trust_env=False)
        assert reply.status_code == 415, (listener, path, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "unsupported_media_type"
        assert "Content-Type: application/json" in error["message"]
        assert (content_type or "none") in error["message"]
    assert guarded.requests_served() == 0


def test_json_with_parameters_passes_and_the_openai_client_sends_json(guarded: Guarded) -> None:
    for content_type in ("application/json", "Application/JSON; charset=utf-8"):
        reply = httpx.post(
            guarded.base + "/v1/chat/completions",
            content=b"{}",
            headers={"content-type": content_type},
            trust_env=False,
        )
        assert reply.status_code == 400, reply.text  # the gateway's own: no model named
    sent: list[tuple[str, str | None, str | None]] = []

    def record(request: httpx2.Request) -> None:
        sent.append(
            (request.url.path, request.headers.get("content-type"), request.headers.get("origin"))
        )

    for base in (guarded.base, guarded.second):
        # The openai package's own HTTP client (httpx2), as every app that uses it sends.
        http = httpx2.Client(trust_env=False, event_hooks={"request": [record]})
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", http_client=http)
        with pytest.raises(openai.NotFoundError):  # past every guard, to the model lookup
            client.chat.completions.create(
                model="no-such-model", messages=[{"role": "user", "content": "hi"}]
            )
        with pytest.raises(openai.NotFoundError):
            client.completions.create(model="no-such-model", prompt="hi")
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="no-such-model", input="hi")
        http.close()
    assert sent and all(ct == "application/json" and origin is None for _, ct, origin in sent)


def test_a_wildcard_origin_needs_the_key(guarded: Guarded) -> None:
    reply = guarded.put_gateway(cors_origins=["http://a.example", "*"])
    assert reply.status_code == 422, reply.text
    detail = reply.json()["detail"]
    assert "gateway.cors_origins" in detail and SET_A_KEY in detail
    assert guarded.daemon.home.root is not None
    cli = roundhouse(guarded.daemon.home.root, "settings", "set", "gateway.cors_origins", "*")
    assert cli.returncode != 0 and SET_A_KEY in cli.stderr, (cli.stdout, cli.stderr)
    assert "Traceback" not in cli.stderr

    guarded.set_key(KEY)
    try:
        assert guarded.put_gateway(cors_origins=["*"]).status_code == 200
        # Any page may ask now, with the key.
        reply = _send(guarded.base, "GET", "/v1/models", origin=EVIL, **{"x-api-key": KEY})
        assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == "*"
        assert _send(guarded.base, "GET", "/v1/models", origin=EVIL).status_code == 401
        # While `*` is there the key cannot go, from the API or the CLI.
        with guarded.control() as client:
            refused = client.delete("/api/v1/gateway/key")
        assert refused.status_code == 409, refused.text
        assert "Remove `*` first" in refused.json()["detail"]
        cli = roundhouse(guarded.daemon.home.root, "gateway", "key", "--clear")
        assert cli.returncode != 0 and "Remove `*` first" in cli.stderr, cli.stderr
        assert _send(guarded.base, "GET", "/v1/models").status_code == 401  # still keyed
        assert guarded.put_gateway(cors_origins=[]).status_code == 200
    finally:
        guarded.put_gateway(cors_origins=[])
        guarded.set_key(None)
    assert _send(guarded.base, "GET", "/v1/models", origin=EVIL).status_code == 403


def test_a_hand_written_wildcard_counts_for_nothing_without_a_key(tmp_path: Path) -> None:
    write_settings(tmp_path / "home", gateway={"cors_origins": ["*"]})
    env = {**keyring_env(tmp_path), "OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    daemon = start_daemon(tmp_path / "home", env=env)
    try:
        reply = _send(daemon.url, "GET", "/v1/models", origin=EVIL)
        assert reply.status_code == 403, reply.text
        assert "access-control-allow-origin" not in reply.headers
    finally:
        assert daemon.stop(timeout=30) == 0
    log = (daemon.home.log_dir / "daemon.log").read_text(encoding="utf-8")
    assert "counts only while a gateway key is set" in log


def _from(address: str) -> httpx.Client:
    """A client whose connections leave from `address` (to 127.0.0.1 all the same)."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(transport=transport, trust_env=False, timeout=10)


def _lan() -> str:
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no address besides loopback to connect from")
    return address


def test_a_peer_beyond_loopback_needs_a_key_that_is_not_set(guarded: Guarded) -> None:
    with _from(_lan()) as lan:
        for base in (guarded.base, guarded.second):
            for path in ("/v1/models", "/docs", "/nope"):
                reply = lan.get(base + path, headers={"host": "127.0.0.1"})
                assert reply.status_code == 401, (base, path, reply.text)
                message = reply.json()["error"]["message"]
                assert "another machine" in message and SET_A_KEY in message
        # The control token is the control credential, on the daemon's own listener.
        status = lan.get(
            guarded.base + "/api/v1/status",
            headers={"authorization": f"Bearer {guarded.daemon.token}"},
        )
        assert status.status_code == 200
        # FORWARDED_ALLOW_IPS=* in the daemon's environment does not make a peer local.
        forged = lan.get(guarded.base + "/v1/models", headers={"x-forwarded-for": "127.0.0.1"})
        assert forged.status_code == 401
    # From loopback, with no key set, the gateway stays open as before.
    assert _send(guarded.base, "GET", "/v1/models").status_code == 200
    assert _send(guarded.second, "GET", "/v1/models").status_code == 200


def test_a_local_proxy_forwarding_a_lan_client_is_held_to_the_key(guarded: Guarded) -> None:
    # A reverse proxy on this machine says whom it forwards for; loopback is trusted to.
    for base in (guarded.base, guarded.second):
        reply = _send(base, "GET", "/v1/models", **{"x-forwarded-for": "192.0.2.9"})
        assert reply.status_code == 401, reply.text
        assert "another machine (192.0.2.9)" in reply.json()["error"]["message"]


def test_a_peer_beyond_loopback_needs_the_key_once_set(guarded: Guarded) -> None:
    address = _lan()
    guarded.set_key(KEY)
    port = free_port()
    try:
        # gateway.listen_host beyond loopback: it listens once there is a key.
        assert guarded.put_gateway(listen_host="0.0.0.0", listen_port=port).status_code == 200
        with _from(address) as lan:
            for base in (guarded.base, f"http://127.0.0.1:{port}"):
                for path in ("/v1/models", "/docs"):
                    reply = lan.get(base + path, headers={"host": "127.0.0.1"})
                    assert reply.status_code == 401, (base, path, reply.text)
                    assert "needs an API key" in reply.json()["error"]["message"]
                reply = lan.get(base + "/v1/models", headers={"authorization": f"Bearer {KEY}"})
                assert reply.status_code == 200, reply.text
    finally:
        guarded.put_gateway(listen_host="127.0.0.1", listen_port=guarded.second_port)
        guarded.set_key(None)


def test_serve_host_beyond_loopback_holds_remote_peers_to_the_key(tmp_path: Path) -> None:
    root = tmp_path / "home"
    env = {**os.environ, **keyring_env(tmp_path), "OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    argv = serve_argv(root, "--host", "0.0.0.0")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    home = resolve_home(root)
    try:

        def serving() -> bool:
            found = read_discovery(home.discovery_file)
            return found is not None and found.pid == process.pid

        wait_for(serving, "the daemon serves", within_s=30)
        found = read_discovery(home.discovery_file)
        assert found is not None
        listening = [
            c.laddr
            for c in psutil.Process(process.pid).net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN
        ]
        port = next(a.port for a in listening if a.ip == "0.0.0.0")
        # Clients are sent to loopback: the Host guard answers no 0.0.0.0.
        assert found.url == f"http://127.0.0.1:{port}"
        forwarded = _send(found.url, "GET", "/v1/models", **{"x-forwarded-for": "192.0.2.9"})
        assert forwarded.status_code == 401 and SET_A_KEY in forwarded.text
        address = lan_address()
        if address is not None:
            with _from(address) as lan:
                reply = lan.get(found.url + "/v1/models", headers={"host": "127.0.0.1"})
            assert reply.status_code == 401 and SET_A_KEY in reply.text
        assert _send(found.url, "GET", "/v1/models").status_code == 200
        # The CLI finds it and is let in (the token), as the app is.
        status = roundhouse(root, "status", "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["pid"] == process.pid
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


def _raw(port: int, head: bytes, timeout: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        return _reply_head(sock)


def _reply_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(v)
            for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
            if k.lower() == b"content-length"
        ),
        0,
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_a_non_ascii_key_or_token_is_refused_not_an_error(guarded: Guarded) -> None:
    odd = b"\xc3\xa9t\xe9\xff"
    asks = [
        (guarded.port, b"GET /api/v1/status", b"Authorization: Bearer " + odd),
        (guarded.port, b"GET /v1/models", b"Authorization: Bearer " + odd),
        (guarded.port, b"GET /v1/models", b"x-api-key: " + odd),
        (guarded.second_port, b"GET /v1/models", b"x-api-key: " + odd),
    ]
    guarded.set_key(KEY)
    try:
        for port, line, header in asks:
            reply = _raw(port, line + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + header + b"\r\n\r\n")
            assert reply.startswith(b"HTTP/1.1 401 "), (line, header, reply[:300])
    finally:
        guarded.set_key(None)


def test_a_declared_oversize_body_is_refused_before_it_is_sent(guarded: Guarded) -> None:
    token = guarded.daemon.token.encode()
    for port, head, limit in [
        (guarded.port, b"POST /v1/chat/completions", GATEWAY_BODY_LIMIT),
        (guarded.second_port, b"POST /v1/embeddings", GATEWAY_BODY_LIMIT),
        (guarded.port, b"PUT /api/v1/settings", CONTROL_BODY_LIMIT),
    ]:
        request = (
            head
            + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + b"Authorization: Bearer "
            + token
            + b"\r\nContent-Length: %d\r\n\r\n" % (limit + 1)
        )
        reply = _raw(port, request)  # no byte of the body is ever sent
        assert reply.startswith(b"HTTP/1.1 413 "), reply[:300]
        assert b"%d MiB" % (limit // MIB) in reply


@pytest.mark.parametrize(
    ("head", "limit"),
    [
        (b"POST /v1/chat/completions", GATEWAY_BODY_LIMIT),
        (b"PUT /api/v1/settings", CONTROL_BODY_LIMIT),
    ],
    ids=["gateway", "control"],
)
def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_cap(
    guarded: Guarded, head: bytes, limit: int
) -> None:
    chunk = b"x" * MIB
    sent = 0
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=30) as sock:
        sock.sendall(
            head
            + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + b"Authorization: Bearer "
            + guarded.daemon.token.encode()
            + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        # Up to 4 times the cap; the answer must come long before.
        while sent < 4 * limit:
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sent += len(chunk)
            if select.select([sock], [], [], 0)[0]:
                break
        else:
            raise AssertionError("no answer after four times the cap")
        reply = _reply_head(sock)
    assert reply.startswith(b"HTTP/1.1 413 "), reply[:300]
    # Socket buffers on both sides hold a few MiB the daemon never looked at.
    assert sent <= limit + 16 * MIB, sent / MIB
    assert guarded.requests_served() == 0


def _slow_headers(port: int, results: dict[str, Any], name: str) -> None:
    started = time.monotonic()
    reply: bytes | BaseException = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3 * HEADER_TIMEOUT_S) as sock:
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                while time.monotonic() - started < 3 * HEADER_TIMEOUT_S:
                    sock.sendall(b"X-Slow: 1\r\n")  # one header a second, never the blank line
                    if select.select([sock], [], [], 1.0)[0]:
                        reply = _reply_head(sock)
                        break
            except OSError:
                pass  # closed under the writer: what is asserted below is the time it took
    except Exception as error:  # noqa: BLE001 - recorded, so the assertion says what went wrong
        reply = error
    results[name] = (reply, time.monotonic() - started)


def _silent(port: int, results: dict[str, Any], name: str) -> None:
    started = time.monotonic()
    reply: bytes | BaseException
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3 * HEADER_TIMEOUT_S) as sock:
            reply = sock.recv(100)
    except ConnectionResetError:
        reply = b""  # closed with a reset rather than a FIN: closed all the same
    except Exception as error:  # noqa: BLE001 - recorded for the assertion
        reply = error
    results[name] = (reply, time.monotonic() - started)


def test_headers_sent_slowly_or_never_are_cut_off(guarded: Guarded) -> None:
    results: dict[str, Any] = {}
    threads = [
        threading.Thread(target=work, args=(port, results, f"{work.__name__}:{port}"))
        for work in (_slow_headers, _silent)
        for port in (guarded.port, guarded.second_port)
    ]
    for thread in threads:
        thread.start()
    # Meanwhile the listeners answer everyone else.
    assert _send(guarded.base, "GET", "/v1/models").status_code == 200
    for thread in threads:
        thread.join(timeout=4 * HEADER_TIMEOUT_S)
    assert len(results) == 4, results
    for name, (reply, took) in results.items():
        assert isinstance(reply, bytes), (name, reply, took)
        assert HEADER_TIMEOUT_S - 1 <= took <= HEADER_TIMEOUT_S + 5, (name, took)
        if name.startswith("_slow"):
            assert reply.startswith(b"HTTP/1.1 408 "), (name, reply)
            assert b"did not arrive within" in reply
        else:
            assert reply == b"", (name, reply)  # a silent connection is just closed


def test_endless_headers_are_cut_off(guarded: Guarded) -> None:
    for port in (guarded.port, guarded.second_port):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ")
            reply = b""
            try:
                for _ in range(4 * MAX_HEADER_BYTES // 4096):
                    sock.sendall(b"a" * 4096)
                    if select.select([sock], [], [], 0)[0]:
                        break
                reply = _reply_head(sock)
            except OSError:
                pass
        assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]


def test_connections_beyond_loopback_are_bounded(guarded: Guarded) -> None:
    # The daemon's listener is bound on 0.0.0.0 here: its connections are counted.
    held = []
    try:
        for _ in range(REMOTE_MAX_CONNECTIONS):
            held.append(socket.create_connection(("127.0.0.1", guarded.port), timeout=5))
        reply = _raw(guarded.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 503 "), reply[:200]
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while _send(guarded.base, "GET", "/v1/models").status_code != 200:
        assert time.monotonic() < deadline, "the listener did not recover"
        time.sleep(0.1)
