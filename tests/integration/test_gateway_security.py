"""The gateway's security through real daemon processes: the API key on every route of the
second listener and on the daemon's /v1, the Host allowlist, CORS off by default and exact
when set, no listening beyond loopback without a key, a taken port (refused on save, an
error at start), a clean stop.

The routes are enumerated from the apps built in-process, then asked over HTTP; no engine is
needed (a 404 or 400 from the router is an answer that got past the key)."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import psutil
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from roundhouse.base.paths import resolve_home
from roundhouse.server.app import create_app
from roundhouse.server.gateway_listener import create_gateway_app
from roundhouse.server.services import DaemonServices
from tests.daemon_process import DaemonProcess, start_daemon
from tests.processes import free_port
from tests.support.standins import keyring_env

NO_KEY_HINT = "roundhouse gateway key --generate"


def write_gateway_settings(root: Path, **gateway: Any) -> None:
    settings = resolve_home(root).settings_file
    settings.parent.mkdir(parents=True, exist_ok=True)
    lines = ["[gateway]", *(f"{name} = {json.dumps(value)}" for name, value in gateway.items())]
    settings.write_text("\n".join(lines) + "\n", encoding="utf-8")


def routes_of(app: FastAPI, prefix: str | None = None) -> list[tuple[str, str]]:
    """(method, path) of every route, those of included routers too, parameters filled in."""
    found = []
    # FastAPI keeps included routers whole in app.routes; this walks into them.
    for route in iter_route_contexts(app.routes):
        if route.path is None or (prefix and not route.path.startswith(prefix)):
            continue
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        found += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return found


def _bare_services() -> DaemonServices:
    # Building an app reads no service; the routes are what is listed here.
    return cast(DaemonServices, SimpleNamespace(version="test"))


@dataclass
class Secured:
    daemon: DaemonProcess
    key: str
    port: int
    folder: Path

    @property
    def second(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def control(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.daemon.token}"}
        return httpx.Client(base_url=self.daemon.url, headers=headers, trust_env=False)

    def status(self) -> dict[str, Any]:
        with self.control() as client:
            reply = client.get("/api/v1/gateway/status")
        assert reply.status_code == 200, reply.text
        answer: dict[str, Any] = reply.json()
        return answer

    @contextmanager
    def gateway_settings(self, **changes: Any) -> Iterator[None]:
        """The daemon's gateway settings changed for the block, put back after."""
        with self.control() as client:
            before = client.get("/api/v1/settings").json()
            after = {**before, "gateway": {**before["gateway"], **changes}}
            assert client.put("/api/v1/settings", json=after).status_code == 200
        try:
            yield
        finally:
            with self.control() as client:
                assert client.put("/api/v1/settings", json=before).status_code == 200


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    folder = tmp_path_factory.mktemp("gateway-security")
    port = free_port()
    write_gateway_settings(folder / "home", listen_host="127.0.0.1", listen_port=port)
    daemon = start_daemon(folder / "home", env=keyring_env(folder))
    try:
        headers = {"Authorization": f"Bearer {daemon.token}"}
        reply = httpx.post(daemon.url + "/api/v1/gateway/key", headers=headers, trust_env=False)
        assert reply.status_code == 200, reply.text
        yield Secured(daemon, reply.json()["key"], port, folder)
    finally:
        if daemon.process.poll() is None:
            assert daemon.stop(timeout=30) == 0


def _ask(base: str, method: str, path: str, **headers: str) -> httpx.Response:
    body = {} if method == "POST" else None
    return httpx.request(method, base + path, json=body, headers=headers, trust_env=False)


def _assert_refused(reply: httpx.Response, where: tuple[str, str]) -> None:
    assert reply.status_code == 401, (where, reply.status_code, reply.text)
    if where[1].startswith("/v1/messages"):
        # Anthropic's API answers in its own shape (Claude Code reads it).
        body = reply.json()
        assert body["type"] == "error", where
        assert body["error"]["type"] == "authentication_error", where
        assert body["error"]["message"], where
        return
    if where[1].startswith("/api/"):
        # Ollama's API: its clients read {"error": "..."}.
        assert "API key" in reply.json()["error"], where
        return
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error", where
    assert error["code"] == "invalid_api_key", where
    assert error["message"], where


def test_every_route_of_the_second_listener_needs_the_key(secured: Secured) -> None:
    routes = routes_of(create_gateway_app(_bare_services(), frozenset()))
    assert ("GET", "/v1/models") in routes and ("POST", "/v1/chat/completions") in routes
    assert not any(p.startswith(("/docs", "/openapi", "/redoc")) for _, p in routes), routes
    # Paths that match no route need it too: a 404 must not tell strangers what exists.
    routes += [("GET", "/"), ("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/v1/nope")]
    for method, path in routes:
        _assert_refused(_ask(secured.second, method, path), (method, path))
        _assert_refused(
            _ask(secured.second, method, path, authorization="Bearer wrong-key-0123456789"),
            (method, path),
        )
        # The daemon's token opens the control API, not the second listener.
        token = f"Bearer {secured.daemon.token}"
        _assert_refused(_ask(secured.second, method, path, authorization=token), (method, path))
        for headers in ({"authorization": f"Bearer {secured.key}"}, {"x-api-key": secured.key}):
            reply = _ask(secured.second, method, path, **headers)
            assert reply.status_code not in (401, 403), (method, path, reply.text)
    assert _ask(secured.second, "GET", "/docs", **{"x-api-key": secured.key}).status_code == 404


def test_the_daemons_v1_needs_the_key_or_the_token(secured: Secured) -> None:
    routes = routes_of(create_app(_bare_services()), prefix="/v1")
    assert ("GET", "/v1/models") in routes, routes
    url = secured.daemon.url
    for method, path in [*routes, ("GET", "/v1/nope")]:
        _assert_refused(_ask(url, method, path), (method, path))
        _assert_refused(_ask(url, method, path, authorization="Bearer wrong"), (method, path))
        for credential in (secured.key, secured.daemon.token):
            reply = _ask(url, method, path, authorization=f"Bearer {credential}")
            assert reply.status_code not in (401, 403), (method, path, reply.text)
        reply = _ask(url, method, path, **{"x-api-key": secured.key})
        assert reply.status_code not in (401, 403), (method, path, reply.text)
    # The gateway key is no control credential.
    reply = _ask(url, "GET", "/api/v1/status", authorization=f"Bearer {secured.key}")
    assert reply.status_code == 401


def test_a_foreign_host_is_refused_on_both_listeners(secured: Secured) -> None:
    for base in (secured.daemon.url, secured.second):
        for key in (None, secured.key):
            headers = {"Host": "evil.example"}
            if key:
                headers["x-api-key"] = key
            reply = _ask(base, "GET", "/v1/models", **headers)
            assert reply.status_code == 403, (base, reply.text)
    # This machine's own name is one the second listener answers to.
    name = socket.gethostname()
    reply = _ask(secured.second, "GET", "/v1/models", host=name, **{"x-api-key": secured.key})
    assert reply.status_code == 200, reply.text


def test_an_allowed_host_is_accepted_on_the_second_listener(secured: Secured) -> None:
    headers = {"host": "gpu-box.example:8080", "x-api-key": secured.key}
    assert _ask(secured.second, "GET", "/v1/models", **headers).status_code == 403
    with secured.gateway_settings(allowed_hosts=["GPU-box.example"]):
        assert _ask(secured.second, "GET", "/v1/models", **headers).status_code == 200
        # The daemon's own address stays loopback only.
        assert _ask(secured.daemon.url, "GET", "/v1/models", **headers).status_code == 403


def _cors_headers(reply: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in reply.headers.items() if k.lower().startswith("access-control-")}


def _preflight(base: str, origin: str) -> httpx.Response:
    headers = {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    return httpx.options(base + "/v1/chat/completions", headers=headers, trust_env=False)


def test_no_cors_headers_unless_origins_are_listed(secured: Secured) -> None:
    listed, other = "http://app.example:3000", "http://evil.example"
    for base in (secured.daemon.url, secured.second):
        # Not listed: refused outright (tests/security/test_listener_guards.py has the rest).
        reply = _ask(base, "GET", "/v1/models", origin=listed, **{"x-api-key": secured.key})
        assert reply.status_code == 403 and not _cors_headers(reply), reply.headers
        preflight = _preflight(base, listed)
        assert preflight.status_code == 403 and not _cors_headers(preflight)
    with secured.gateway_settings(cors_origins=[listed + "/"]):
        for base in (secured.daemon.url, secured.second):
            reply = _ask(base, "GET", "/v1/models", origin=listed, **{"x-api-key": secured.key})
            assert reply.headers["access-control-allow-origin"] == listed
            assert "access-control-allow-credentials" not in reply.headers
            preflight = _preflight(base, listed)
            assert preflight.status_code == 200, preflight.text
            assert preflight.headers["access-control-allow-origin"] == listed
            assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
            reply = _ask(base, "GET", "/v1/models", origin=other, **{"x-api-key": secured.key})
            assert reply.status_code == 403 and not _cors_headers(reply), reply.headers
            assert not _cors_headers(_preflight(base, other))
        # The control API never answers browsers, listed origins included.
        with secured.control() as client:
            reply = client.get("/api/v1/status", headers={"origin": listed})
        assert reply.status_code == 403 and not _cors_headers(reply)


def test_a_taken_port_is_refused_on_save_and_an_error_at_start(
    secured: Secured, tmp_path: Path
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        taken = holder.getsockname()[1]
        with secured.control() as client:
            before = client.get("/api/v1/settings").json()
            after = {**before, "gateway": {**before["gateway"], "listen_port": taken}}
            reply = client.put("/api/v1/settings", json=after)
        assert reply.status_code == 422, reply.text
        assert "already taken" in reply.text and f"pid {os.getpid()}" in reply.text
        # Nothing was saved: the listener is where it was, and serves.
        listener = secured.status()["listeners"][1]
        assert listener == {"url": secured.second + "/v1", "needs_key": True, "error": None}
        assert _ask(secured.second, "GET", "/v1/models", **{"x-api-key": secured.key}).is_success

        # Taken by the time a daemon starts: it serves on its own address and says why not
        # on the second.
        home = tmp_path / "home"
        write_gateway_settings(home, listen_host="127.0.0.1", listen_port=taken)
        daemon = start_daemon(home, env=keyring_env(tmp_path))
        try:
            headers = {"Authorization": f"Bearer {daemon.token}"}
            reply = httpx.get(
                daemon.url + "/api/v1/gateway/status", headers=headers, trust_env=False
            )
            assert reply.status_code == 200, reply.text
            listener = reply.json()["listeners"][1]
            assert listener["url"] == f"http://127.0.0.1:{taken}/v1"
            assert "already taken" in listener["error"], listener
            assert f"pid {os.getpid()}" in listener["error"], listener
        finally:
            assert daemon.stop(timeout=30) == 0


def lan_address() -> str | None:
    """An IPv4 address of this machine besides loopback, if it has one."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family != socket.AF_INET:
                continue
            ip = ipaddress.ip_address(address.address)
            if not (ip.is_loopback or ip.is_link_local):
                return address.address
    return None


def test_beyond_loopback_without_a_key_nothing_listens(secured: Secured) -> None:
    port = free_port()
    with secured.control() as client:
        cleared = client.delete("/api/v1/gateway/key").json()
    try:
        assert cleared["key_set"] is False
        with secured.gateway_settings(listen_host="0.0.0.0", listen_port=port):
            status = secured.status()
            listener = status["listeners"][1]
            assert listener["url"] == f"http://0.0.0.0:{port}/v1"
            assert NO_KEY_HINT in listener["error"], listener
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"http://127.0.0.1:{port}/v1/models", trust_env=False)
            # Without a key the daemon's /v1 is open again, as before keys existed.
            assert _ask(secured.daemon.url, "GET", "/v1/models").status_code == 200
    finally:
        with secured.control() as client:
            reply = client.post("/api/v1/gateway/key", json={"key": secured.key})
        assert reply.status_code == 200 and reply.json() == {
            "key": secured.key,
            "kept_in": "the system keyring",
        }
    log = (secured.daemon.home.log_dir / "daemon.log").read_text(encoding="utf-8")
    assert NO_KEY_HINT in log


def test_beyond_loopback_with_a_key_it_answers_on_this_machines_address(secured: Secured) -> None:
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback to reach")
    port = free_port()
    with secured.gateway_settings(listen_host="0.0.0.0", listen_port=port):
        listener = secured.status()["listeners"][1]
        assert listener["error"] is None and listener["needs_key"] is True, listener
        base = f"http://{address}:{port}"
        _assert_refused(_ask(base, "GET", "/v1/models"), ("GET", "/v1/models"))
        assert _ask(base, "GET", "/v1/models", authorization=f"Bearer {secured.key}").is_success


def test_the_key_is_kept_in_the_keyring_only_and_loaded_at_start(tmp_path: Path) -> None:
    port = free_port()
    root = tmp_path / "home"
    write_gateway_settings(root, listen_host="127.0.0.1", listen_port=port)
    env = keyring_env(tmp_path)
    key = "rh-my-own-key-0123456789"
    first = start_daemon(root, env=env)
    try:
        headers = {"Authorization": f"Bearer {first.token}"}
        reply = httpx.post(
            first.url + "/api/v1/gateway/key", json={"key": key}, headers=headers, trust_env=False
        )
        assert reply.json() == {"key": key, "kept_in": "the system keyring"}
    finally:
        assert first.stop(timeout=30) == 0
    assert key in (tmp_path / "keyring.json").read_text(encoding="utf-8")

    # A new daemon requires it from its first request on.
    daemon = start_daemon(root, env=env)
    try:
        for base in (f"http://127.0.0.1:{port}", daemon.url):
            _assert_refused(_ask(base, "GET", "/v1/models"), ("GET", base))
            assert _ask(base, "GET", "/v1/models", authorization=f"Bearer {key}").is_success
    finally:
        assert daemon.stop(timeout=30) == 0
    # The second listener stopped with the daemon: its port is free again.
    with socket.socket() as probe:
        # Still refused while anything listens there; connections in TIME_WAIT do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
    # Nothing the daemon wrote (settings, state, logs) holds the key.
    for path in root.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(encoding="utf-8", errors="replace"), path
