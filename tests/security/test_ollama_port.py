"""Ollama's API on the gateway's listeners, as hostile callers and careless setups meet it:
a web page's foreign Origin and text/plain POST, a foreign Host, a missing key, on the
daemon's own address and on the Ollama-port listener (`gateway.ollama_port_enabled`, on a
free port here, never a real 11434); and that option refused in words, never raised, while
an Ollama (the stand-in, a real process) or any other program holds the port."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest

from tests.api.test_cli import roundhouse
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.ollama import start_standin
from tests.processes import free_port, wait_for
from tests.security.test_listener_guards import write_settings
from tests.support.standins import keyring_env

EVIL = "https://evil.example"
KEY = "rh-ollama-port-key-0123456789"
CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}


@dataclass
class Daemon:
    process: DaemonProcess
    ollama_port: int
    folder: Path

    @property
    def ollama_url(self) -> str:
        return f"http://127.0.0.1:{self.ollama_port}"

    def control(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.process.token}"}
        return httpx.Client(base_url=self.process.url, headers=headers, trust_env=False)

    def put_gateway(self, **changes: Any) -> None:
        with self.control() as client:
            current = client.get("/api/v1/settings").json()
            current["gateway"].update(changes)
            reply = client.put("/api/v1/settings", json=current)
        assert reply.status_code == 200, reply.text

    def listeners(self) -> dict[str, str | None]:
        with self.control() as client:
            status = client.get("/api/v1/gateway/status").json()
        return {item["url"]: item["error"] for item in status["listeners"]}

    def set_key(self, key: str | None) -> None:
        with self.control() as client:
            if key is None:
                reply = client.delete("/api/v1/gateway/key")
            else:
                reply = client.post("/api/v1/gateway/key", json={"key": key})
        assert reply.status_code == 200, reply.text


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    folder = tmp_path_factory.mktemp("ollama-port")
    port = free_port()
    write_settings(folder / "home", gateway={"ollama_port_enabled": True, "ollama_port": port})
    # No real Ollama found as an engine: its address points at a free port.
    env = {**keyring_env(folder), "OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    process = start_daemon(folder / "home", env=env)
    try:
        yield Daemon(process, port, folder)
    finally:
        if process.process.poll() is None:
            assert process.stop(timeout=30) == 0


def _post(base: str, path: str, **headers: str) -> httpx.Response:
    return httpx.post(base + path, json=CHAT, headers=headers, trust_env=False, timeout=10)


def test_the_option_listens_on_its_port_and_serves_ollamas_api(daemon: Daemon) -> None:
    assert daemon.listeners()[daemon.ollama_url] is None
    client = ollama.Client(host=daemon.ollama_url, timeout=10)
    assert client.list().models == []
    assert httpx.get(daemon.ollama_url + "/", trust_env=False).status_code == 200
    version = httpx.get(daemon.ollama_url + "/api/version", trust_env=False).json()
    assert version["version"]
    # The gateway's other routes there too; never the control API.
    assert httpx.get(daemon.ollama_url + "/v1/models", trust_env=False).status_code == 200
    control = httpx.get(
        daemon.ollama_url + "/api/v1/status",
        headers={"Authorization": f"Bearer {daemon.process.token}"},
        trust_env=False,
    )
    assert control.status_code == 404


@pytest.mark.parametrize("where", ["daemon", "ollama"])
def test_a_web_page_is_refused_on_ollamas_routes(daemon: Daemon, where: str) -> None:
    base = daemon.process.url if where == "daemon" else daemon.ollama_url
    for path in ("/api/chat", "/api/generate", "/api/embed", "/api/show"):
        reply = _post(base, path, origin=EVIL)
        assert reply.status_code == 403, (path, reply.text)
        assert "gateway.cors_origins" in reply.json()["error"]
        assert not any(h.startswith("access-control-") for h in reply.headers)
        # The simple request a page can send without asking: text/plain.
        plain = httpx.post(
            base + path,
            content=b'{"model": "tiny"}',
            headers={"content-type": "text/plain"},
            trust_env=False,
        )
        assert plain.status_code == 415, (path, plain.text)
        assert "application/json" in plain.json()["error"]
    for path in ("/api/tags", "/api/ps", "/api/version", "/"):
        page = httpx.get(base + path, headers={"sec-fetch-site": "cross-site"}, trust_env=False)
        assert page.status_code == 403, (path, page.text)
        foreign = httpx.get(base + path, headers={"origin": EVIL}, trust_env=False)
        assert foreign.status_code == 403, (path, foreign.text)
    # A foreign Host (DNS rebinding): refused before any route.
    forged = httpx.get(base + "/api/tags", headers={"host": "evil.example"}, trust_env=False)
    assert forged.status_code == 403 and "evil.example" in forged.text, forged.text


@pytest.mark.parametrize("where", ["daemon", "ollama"])
def test_the_key_is_needed_once_set(daemon: Daemon, where: str) -> None:
    base = daemon.process.url if where == "daemon" else daemon.ollama_url
    daemon.set_key(KEY)
    try:
        for path in ("/api/tags", "/api/ps", "/api/version"):
            reply = httpx.get(base + path, trust_env=False)
            assert reply.status_code == 401, (path, reply.text)
            assert "API key" in reply.json()["error"]
        assert _post(base, "/api/chat").status_code == 401
        with pytest.raises(ollama.ResponseError) as refused:
            ollama.Client(host=base, timeout=10).list()
        assert refused.value.status_code == 401
        wrong = ollama.Client(host=base, headers={"Authorization": "Bearer nope"}, timeout=10)
        with pytest.raises(ollama.ResponseError):
            wrong.list()
        keyed = ollama.Client(host=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
        assert keyed.list().models == []
    finally:
        daemon.set_key(None)
    # The daemon's control API on its own address is untouched: its token, not the key.
    with daemon.control() as client:
        assert client.get("/api/v1/status").status_code == 200
    assert httpx.get(daemon.process.url + "/api/v1/status", trust_env=False).status_code == 401


def test_refused_in_words_while_ollama_holds_the_port(daemon: Daemon) -> None:
    port = free_port()
    standin = start_standin(daemon.folder / "standin", port)
    try:
        daemon.put_gateway(ollama_port=port)
        error = daemon.listeners()[f"http://127.0.0.1:{port}"]
        assert error is not None and "Ollama" in error and "holds" in error, error
        # Ollama's own answers are still Ollama's: nothing of Roundhouse's took the port.
        assert httpx.get(f"http://127.0.0.1:{port}/api/tags", trust_env=False).status_code == 200
        assert daemon.process.process.poll() is None
    finally:
        standin.stop()
    # Another program on the port: the bind fails, said with the setting to change.
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        taken = holder.getsockname()[1]
        daemon.put_gateway(ollama_port=taken)
        error = daemon.listeners()[f"http://127.0.0.1:{taken}"]
        assert error is not None and "gateway.ollama_port" in error, error
    finally:
        holder.close()
    # The daemon's own port answers /api/version too, but as a Roundhouse: not "Ollama".
    own = int(daemon.process.url.rsplit(":", 1)[1])
    daemon.put_gateway(ollama_port=own)
    error = daemon.listeners()[f"http://127.0.0.1:{own}"]
    assert error is not None and "daemon's own" in error and "Ollama " not in error, error
    # Back on a free port it listens again; off, it is gone.
    daemon.put_gateway(ollama_port=daemon.ollama_port)
    wait_for(lambda: daemon.listeners().get(daemon.ollama_url, "x") is None, "it listens again")
    daemon.put_gateway(ollama_port_enabled=False)
    assert daemon.ollama_url not in daemon.listeners()
    with pytest.raises(httpx.ConnectError):
        httpx.get(daemon.ollama_url + "/api/version", trust_env=False)
    daemon.put_gateway(ollama_port_enabled=True)
    assert daemon.listeners()[daemon.ollama_url] is None


def test_the_cli_turns_it_on_and_off_and_says_why_not(daemon: Daemon) -> None:
    root = daemon.process.home.root
    assert root is not None
    off = roundhouse(root, "gateway", "ollama-port", "off")
    assert off.returncode == 0, off.stderr
    assert f"({daemon.ollama_url}): off" in off.stdout
    assert daemon.ollama_url not in daemon.listeners()
    on = roundhouse(root, "gateway", "ollama-port", "on")
    assert on.returncode == 0, on.stderr
    assert f"({daemon.ollama_url}): listening" in on.stdout
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        taken = holder.getsockname()[1]
        moved = roundhouse(root, "gateway", "ollama-port", "--port", str(taken))
        assert moved.returncode == 0, moved.stderr
        assert "already taken" in moved.stdout and "gateway.ollama_port" in moved.stdout
    back = roundhouse(root, "gateway", "ollama-port", "--port", str(daemon.ollama_port))
    assert "listening" in back.stdout, back.stdout
    shown = roundhouse(root, "gateway", "ollama-port")
    assert f"({daemon.ollama_url}): listening" in shown.stdout


def test_a_listed_origin_gets_cors_on_ollamas_routes(daemon: Daemon) -> None:
    listed = "http://localhost:3000"
    daemon.put_gateway(cors_origins=[listed])
    try:
        for base in (daemon.process.url, daemon.ollama_url):
            preflight = httpx.options(
                base + "/api/chat",
                headers={
                    "origin": listed,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type",
                },
                trust_env=False,
            )
            assert preflight.status_code == 200, preflight.text
            assert preflight.headers["access-control-allow-origin"] == listed
            tags = httpx.get(base + "/api/tags", headers={"origin": listed}, trust_env=False)
            assert tags.status_code == 200
            assert tags.headers["access-control-allow-origin"] == listed
        # Never on the control API, listed or not.
        control = httpx.get(
            daemon.process.url + "/api/v1/status",
            headers={"origin": listed, "authorization": f"Bearer {daemon.process.token}"},
            trust_env=False,
        )
        assert control.status_code == 403
    finally:
        daemon.put_gateway(cors_origins=[])
