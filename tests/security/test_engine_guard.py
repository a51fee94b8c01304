"""The guard Python engines start behind (resources/engines/guard): real processes, raw requests.

Roundhouse starts mlx_lm.server, vLLM and SGLang with the guard's folder on PYTHONPATH and
the instance's key in ROUNDHOUSE_ENGINE_KEY. These tests run the two HTTP servers those
engines use, the standard library's http.server and uvicorn, under the guard, each with an
application that answers everything with CORS for every origin (as the engines do), and
send what a web page, a rebinding page or another program would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.base.resources import resource_path
from roundhouse.core.engines.common import GUARD_KEY_ENV

KEY = "rhe-test-key"

HTTP_SERVER_APP = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Engine(BaseHTTPRequestHandler):
    def answer(self):
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"data": [{"id": "secret-model"}]}')
    do_GET = do_POST = do_OPTIONS = answer

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Engine).serve_forever()
"""

UVICORN_APP = """
import sys
import uvicorn

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"access-control-allow-origin", b"*"), (b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"data": [{"id": "secret-model"}]}'})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(tmp_path: Path, source: str, env: dict[str, str]) -> Iterator[str]:
    script = tmp_path / "engine.py"
    script.write_text(source)
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read().decode() if process.stderr else ""
                    raise AssertionError(f"the engine did not listen: {err}") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _guarded_env() -> dict[str, str]:
    return {"PYTHONPATH": str(resource_path("engines", "guard")), GUARD_KEY_ENV: KEY}


@pytest.fixture(scope="module", params=["http.server", "uvicorn"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    source = HTTP_SERVER_APP if request.param == "http.server" else UVICORN_APP
    yield from _run(tmp_path_factory.mktemp("engine"), source, _guarded_env())


def _send(url: str, method: str = "GET", **headers: str) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=10) as http:
        return http.request(method, f"{url}/v1/models", headers=headers)


HOSTILE = [
    pytest.param({}, 401, id="no key"),
    pytest.param({"authorization": "Bearer wrong"}, 401, id="wrong key"),
    pytest.param({"authorization": f"Basic {KEY}"}, 401, id="not a bearer"),
    pytest.param({"x-api-key": KEY[:-1]}, 401, id="a prefix of the key"),
    pytest.param({"host": "rebind.evil.example"}, 403, id="rebound host"),
    pytest.param(
        {"host": "rebind.evil.example", "authorization": f"Bearer {KEY}"},
        403,
        id="rebound host even with the key",
    ),
    pytest.param({"origin": "https://evil.example"}, 403, id="web page"),
    pytest.param(
        {"origin": "null", "authorization": f"Bearer {KEY}"},
        403,
        id="sandboxed page even with the key",
    ),
]


@pytest.mark.parametrize(("headers", "status"), HOSTILE)
@pytest.mark.parametrize("method", ["GET", "POST", "OPTIONS"])
def test_hostile_requests_get_nothing(
    engine: str, headers: dict[str, str], status: int, method: str
) -> None:
    reply = _send(engine, method, **headers)
    assert reply.status_code == status
    assert "access-control-allow-origin" not in reply.headers
    assert "secret-model" not in reply.text


def test_a_non_ascii_key_is_refused_not_a_crash(engine: str) -> None:
    port = int(engine.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(
            b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer \xff\xfe\xe9\r\nConnection: close\r\n\r\n"
        )
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    assert answer.split(b"\r\n", 1)[0].endswith(b"401 Unauthorized")


@pytest.mark.parametrize(
    "headers",
    [{"authorization": f"Bearer {KEY}"}, {"x-api-key": KEY}, {"host": "localhost"}],
)
def test_the_daemon_with_the_key_is_served(engine: str, headers: dict[str, str]) -> None:
    headers = {"authorization": f"Bearer {KEY}", **headers}
    reply = _send(engine, **headers)
    assert reply.status_code == 200 and "secret-model" in reply.text


def test_without_a_key_in_the_environment_the_guard_stays_out_of_the_way(
    tmp_path: Path,
) -> None:
    env = {"PYTHONPATH": str(resource_path("engines", "guard"))}
    for url in _run(tmp_path, HTTP_SERVER_APP, env):
        assert _send(url).status_code == 200


def test_an_environments_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    marker = tmp_path / "ran"
    (own / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    env = {**os.environ, **_guarded_env()}
    env["PYTHONPATH"] += os.pathsep + str(own)
    done = subprocess.run(
        [sys.executable, "-c", "import http.server as h; print(h.BaseHTTPRequestHandler"
         ".parse_request.__qualname__)"],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert marker.exists(), "the shadowed sitecustomize was chained"
    assert "guard_http_server" in done.stdout, "and the guard is in place"
