"""The engine stand-ins, run on their own (no Roundhouse guard), treat web pages and foreign
Host names as the real engines do, so a refusal seen through Roundhouse is Roundhouse's.

- Ollama refuses a foreign Host on loopback and an Origin outside OLLAMA_ORIGINS and its local
  defaults (403, no CORS header), and echoes an allowed origin.
- vLLM's key guards /v1 only, and its CORS tells every origin `*`; SGLang's CORS likewise, with
  credentials. A preflight is answered for any origin.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.ollama import OllamaStandin
from tests.fakes.ollama import start_standin as start_ollama
from tests.fakes.ollama.guards import allowed_origins, host_allowed, origin_allowed
from tests.fakes.openai_engines import EngineStandin, start_standin
from tests.processes import free_port

EVIL = "https://evil.example"
REBIND = "rebind.evil.example"
KEY = "sk-standin-test"
PREFLIGHT = {"Origin": EVIL, "Access-Control-Request-Method": "POST"}
CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


@pytest.fixture(scope="module")
def ollama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaStandin]:
    standin = start_ollama(
        tmp_path_factory.mktemp("ollama"), free_port(), env={"OLLAMA_ORIGINS": "https://ok.test"}
    )
    try:
        yield standin
    finally:
        standin.stop()


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    standin = start_standin(
        "vllm",
        tmp_path_factory.mktemp("vllm"),
        free_port(),
        "serve",
        "org/Tiny",
        "--served-model-name",
        "tiny",
        "--load-seconds",
        "0",
        env={"VLLM_API_KEY": KEY},
    )
    try:
        yield standin
    finally:
        standin.stop()


@pytest.fixture(scope="module")
def sglang(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineStandin]:
    standin = start_standin(
        "sglang",
        tmp_path_factory.mktemp("sglang"),
        free_port(),
        "--model-path",
        "org/Tiny",
        "--served-model-name",
        "tiny",
        "--enable-metrics",
        "--load-seconds",
        "0",
    )
    try:
        yield standin
    finally:
        standin.stop()


def _http(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=10.0, trust_env=False)


# -- Ollama ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:11434", True),
        ("localhost:11434", True),
        ("[::1]:11434", True),
        ("192.168.1.20:11434", True),  # private: Ollama lets LAN names through
        ("0.0.0.0", True),
        ("app.localhost:3000", True),
        ("printer.local", True),
        ("db.internal", True),
        ("", True),
        ("[::1]", False),  # no port: SplitHostPort fails and "[::1]" parses as no address
        (REBIND, False),
        (f"{REBIND}:11434", False),
        ("8.8.8.8:11434", False),
        ("localhost.evil.example", False),
    ],
)
def test_ollama_host_rule_on_loopback(host: str, allowed: bool) -> None:
    assert host_allowed(host, "127.0.0.1") is allowed
    assert host_allowed(host, "0.0.0.0") is True  # beyond loopback: no Host check at all


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost", True),
        ("http://localhost:3000", True),
        ("https://127.0.0.1:8443", True),
        ("http://0.0.0.0:1", True),
        ("app://anything", True),
        ("vscode-webview://abc", True),
        ("https://ok.test", True),
        (EVIL, False),
        ("http://localhost.evil.example", False),
        ("null", False),
        ("chrome-extension://abc", False),  # extensions must be listed in OLLAMA_ORIGINS
    ],
)
def test_ollama_origin_rule(origin: str, allowed: bool) -> None:
    assert origin_allowed(origin, allowed_origins("'https://ok.test'")) is allowed


def test_ollama_refuses_a_foreign_host_and_origin_and_echoes_an_allowed_one(
    ollama: OllamaStandin,
) -> None:
    with _http(ollama.base_url) as http:
        assert http.get("/api/tags").status_code == 200  # a local process, no Origin
        for path in ("/api/tags", "/v1/models", "/api/ps"):
            reply = http.get(path, headers={"Host": REBIND})
            assert (reply.status_code, reply.content) == (403, b""), path
            reply = http.get(path, headers={"Origin": EVIL})
            assert (reply.status_code, reply.content) == (403, b""), path
            assert "access-control-allow-origin" not in reply.headers
        reply = http.post("/api/chat", headers={"Origin": EVIL}, json=CHAT)
        assert (reply.status_code, reply.content) == (403, b"")
        reply = http.options("/api/chat", headers=PREFLIGHT)
        assert reply.status_code == 403
        assert "access-control-allow-origin" not in reply.headers

        local = "http://localhost:5173"
        reply = http.get("/api/tags", headers={"Origin": local})
        assert reply.status_code == 200
        assert reply.headers["access-control-allow-origin"] == local
        reply = http.options(
            "/api/chat", headers={"Origin": local, "Access-Control-Request-Method": "POST"}
        )
        assert reply.status_code == 204
        assert reply.headers["access-control-allow-origin"] == local
        assert "POST" in reply.headers["access-control-allow-methods"]
        # OLLAMA_ORIGINS adds to the defaults.
        reply = http.get("/api/version", headers={"Origin": "https://ok.test"})
        assert reply.headers["access-control-allow-origin"] == "https://ok.test"
        # The page's own origin (DNS rebinding) is no CORS request: the Host check decides.
        rebound = {"Host": f"{REBIND}:{ollama.port}", "Origin": f"http://{REBIND}:{ollama.port}"}
        assert http.get("/api/tags", headers=rebound).status_code == 403
        # An allowed origin does not lift the Host check (its CORS header stays, as gin's).
        reply = http.get("/api/tags", headers={"Host": REBIND, "Origin": local})
        assert reply.status_code == 403
        # Nothing was loaded by any of it.
        assert http.get("/api/ps").json() == {"models": []}


# -- vLLM and SGLang ---------------------------------------------------------------------------


def test_vllm_key_guards_v1_only_and_cors_answers_every_origin(vllm: EngineStandin) -> None:
    with _http(vllm.base_url) as http:
        reply = http.get("/v1/models", headers={"Origin": EVIL})
        assert reply.status_code == 401
        assert "access-control-allow-origin" not in reply.headers  # the key check is outermost
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 401
        # Outside /v1 the key guards nothing, and every origin may read the reply.
        reply = http.get("/metrics", headers={"Origin": EVIL, "Host": REBIND})
        assert reply.status_code == 200
        assert reply.headers["access-control-allow-origin"] == "*"
        assert "vllm:" in reply.text
        assert http.get("/version").status_code == 200
        # A preflight passes the key check and is allowed for any origin.
        reply = http.options(
            "/v1/chat/completions",
            headers={**PREFLIGHT, "Access-Control-Request-Headers": "content-type"},
        )
        assert reply.status_code == 200
        assert reply.headers["access-control-allow-origin"] == "*"
        assert reply.headers["access-control-allow-headers"] == "content-type"
        # OPTIONS that is no preflight reaches the app: FastAPI's 405.
        assert http.options("/v1/models").status_code == 405
        # With the key, the model answers, and a web page could read it.
        auth = {"Authorization": f"Bearer {KEY}", "Origin": EVIL}
        reply = http.post("/v1/chat/completions", headers=auth, json=CHAT)
        assert reply.status_code == 200, reply.text
        assert reply.headers["access-control-allow-origin"] == "*"


def test_sglang_cors_answers_every_origin_with_credentials(sglang: EngineStandin) -> None:
    with _http(sglang.base_url) as http:
        reply = http.post("/v1/chat/completions", headers={"Origin": EVIL}, json=CHAT)
        assert reply.status_code == 200, reply.text
        assert reply.headers["access-control-allow-origin"] == "*"
        assert reply.headers["access-control-allow-credentials"] == "true"
        reply = http.get("/get_server_info", headers={"Origin": EVIL, "Cookie": "a=b"})
        assert reply.headers["access-control-allow-origin"] == EVIL
        reply = http.options("/v1/chat/completions", headers=PREFLIGHT)
        assert reply.status_code == 200
        assert reply.headers["access-control-allow-origin"] == EVIL
        assert reply.headers["access-control-allow-credentials"] == "true"
