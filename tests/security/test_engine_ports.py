"""Every engine port Roundhouse opens refuses what a web page or another program can send.

A real daemon starts each engine (real llama-server and mlx_lm.server; the vLLM, SGLang and
Ollama stand-ins, which answer every origin and leave routes open as the real ones do, so a
refusal here is Roundhouse's). Then every route of the engine, and every route the issue
names, gets each hostile request straight on the engine's port: no key, a wrong key, a
non-ASCII key, a foreign Host (DNS rebinding), a foreign Origin, a CORS preflight and a
`text/plain` POST. Each must be refused (401/403) with no model output and no
`Access-Control-Allow-Origin`, and nothing may happen: no generation, no model loaded, no new
instance, no file written. The daemon's gateway still serves the model after.

Ollama takes no key: like Ollama itself, it serves a local program that sends no Origin, and
refuses foreign Hosts and origins outside its local defaults (Roundhouse sets OLLAMA_ORIGINS
empty, so an inherited `*` cannot open it).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.client import DaemonClient
from roundhouse.core.engines.llamacpp import NO_PAGE_ORIGIN
from tests.security.engine_targets import Target, routes_for, started

EVIL_ORIGIN = "https://evil.example"
REBIND_HOST = "rebind.evil.example"
ENGINES = [EngineId.LLAMA_CPP, EngineId.MLX, EngineId.VLLM, EngineId.SGLANG, EngineId.OLLAMA]
# The engines with a key (or Roundhouse's guard); Ollama has none (ADR 21).
KEYED = [e for e in ENGINES if e != EngineId.OLLAMA]
# llama-server answers these without a key, by design; they say only this.
LLAMA_PUBLIC = {"/health", "/v1/health"}
LLAMA_HEALTH = {"status": "ok"}
# Counters that move only when the engine generates (the daemon's scrapes and probes don't).
COUNTERS = {
    EngineId.LLAMA_CPP: ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total",
                         "llamacpp:n_decode_total"),
    EngineId.VLLM: ("vllm:prompt_tokens_total", "vllm:generation_tokens_total"),
}  # fmt: skip
# What http.server logs per request: '"GET /path?query HTTP/1.1" 401 -'.
ACCESS_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]" (?P<status>\d{3})')


@dataclass(frozen=True)
class Hostile:
    """One kind of request a web page or another local program can send without the key."""

    name: str
    headers: dict[str, str | bytes] = field(default_factory=dict)
    method: str | None = None  # instead of the route's own
    content_type: str = "application/json"
    only: tuple[str, ...] = ()  # these paths alone (empty: every route)
    keyless_too: bool = True  # also sent to Ollama, which has no key to miss


HOSTILE = (
    Hostile("no key", keyless_too=False),
    Hostile("wrong key", {"Authorization": "Bearer rhe-not-the-key"}, keyless_too=False),
    Hostile("non-ASCII key", {"Authorization": "Bearer ключ-🔑".encode()}, keyless_too=False),
    Hostile("foreign Host", {"Host": REBIND_HOST}),
    Hostile("foreign Origin", {"Origin": EVIL_ORIGIN}),
    Hostile(
        "CORS preflight",
        {
            "Origin": EVIL_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
        method="OPTIONS",
    ),
    Hostile(
        "text/plain POST",
        {"Origin": EVIL_ORIGIN},
        content_type="text/plain",
        only=("/v1/chat/completions", "/api/chat"),
    ),
)


@pytest.fixture(scope="module", params=ENGINES, ids=[e.value for e in ENGINES])
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    engine: EngineId = request.param
    work = tmp_path_factory.mktemp(f"engine-{engine.value}")
    if engine == EngineId.LLAMA_CPP:
        kwargs = {
            "llama_server": request.getfixturevalue("llama_server_binary"),
            "gguf": request.getfixturevalue("tiny_gguf"),
        }
    elif engine == EngineId.MLX:
        kwargs = {
            "mlx_python": request.getfixturevalue("mlx_python"),
            "hf_model": request.getfixturevalue("tiny_hf_model"),
        }
    else:
        kwargs = {}
    with started(engine, work, **kwargs) as found:
        yield found


# -- what the daemon sees -----------------------------------------------------------------------


@dataclass
class Seen:
    """What would show that something happened: instances, counters, loaded models, files."""

    instances: list[str]
    counters: dict[str, float]
    loaded: object = None
    files: list[tuple[str, int]] = field(default_factory=list)
    log_next: int = 0


async def _seen(target: Target) -> Seen:
    async with DaemonClient(target.daemon.url, target.daemon.token) as client:
        instances = sorted(i.id for i in (await client.instances()).instances)
        counters: dict[str, float] = {}
        names = COUNTERS.get(target.engine, ())
        if names:
            values = (await client.instance_metrics(target.info.id)).values
            counters = {name: values[name] for name in names}
        log_next = (await client.instance_logs(target.info.id, since=0, limit=1)).next
    seen = Seen(instances, counters, log_next=log_next)
    if target.engine == EngineId.OLLAMA:
        async with httpx.AsyncClient(base_url=target.base_url, trust_env=False) as local:
            # Names only: expires_at is computed afresh at each look.
            running = (await local.get("/api/ps")).json()["models"]
        seen.loaded = sorted(m["name"] for m in running)
        assert target.daemon.home.root is not None
        state = target.daemon.home.root.parent / "ollama-state"
        seen.files = sorted(
            (str(p.relative_to(state)), p.stat().st_size) for p in state.rglob("*") if p.is_file()
        )
    return seen


async def _log_after(target: Target, since: int) -> list[str]:
    """The engine's output lines after `since`, every page of them."""
    lines: list[str] = []
    async with DaemonClient(target.daemon.url, target.daemon.token) as client:
        while True:
            page = await client.instance_logs(target.info.id, since=since, limit=500)
            assert not page.truncated, "the log ring moved on: raise its size or send less"
            lines += page.lines
            if page.next <= since or not page.lines:
                return lines
            since = page.next


# -- the requests -------------------------------------------------------------------------------


def _body(target: Target) -> bytes:
    """What every POST carries: enough for any of the engine's routes to generate."""
    message = [{"role": "user", "content": "Write a long story."}]
    body = {"model": target.model, "messages": message, "prompt": "Once", "max_tokens": 8}
    return json.dumps(body | {"content": "Once", "stream": False}).encode()


def _problems(target: Target, case: Hostile, path: str, reply: httpx.Response) -> list[str]:
    """What is wrong with the reply to one hostile request (nothing, when refused well)."""
    where = f"{target.engine.value} {case.name} {reply.request.method} {path}"
    problems = []
    allowed = reply.headers.get("access-control-allow-origin")
    # None at all, except llama-server's: it always sends its --cors-origins value, which
    # Roundhouse sets to an origin no page can have (ADR 21), so it lets no page in either.
    if allowed is not None and not (
        target.engine == EngineId.LLAMA_CPP and allowed == NO_PAGE_ORIGIN
    ):
        problems.append(f"{where}: Access-Control-Allow-Origin {allowed}")
    if target.engine == EngineId.LLAMA_CPP and path in LLAMA_PUBLIC and case.method is None:
        # Public by design: it may answer, but must say nothing but that it is up.
        if reply.status_code != 200 or reply.json() != LLAMA_HEALTH:
            problems.append(f"{where}: {reply.status_code} {reply.text[:200]!r}")
        return problems
    refused = {401, 403}
    if case.method == "OPTIONS" and target.engine == EngineId.LLAMA_CPP:
        # llama-server answers every preflight before its key check; without an
        # Access-Control-Allow-Origin for this origin the browser sends nothing after it.
        refused |= {200, 204}
    if reply.status_code not in refused:
        problems.append(f"{where}: status {reply.status_code} {reply.text[:200]!r}")
    if reply.content.strip():
        try:
            answer = json.loads(reply.content)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or set(answer) != {"error"}:
            problems.append(f"{where}: answered {reply.text[:200]!r}")
    return problems


def _send_all(target: Target, probe: str) -> tuple[int, list[str]]:
    """Every hostile request to every route; how many were sent, and what went wrong."""
    sent, problems = 0, []
    keyless = target.engine == EngineId.OLLAMA
    with httpx.Client(base_url=target.base_url, trust_env=False, timeout=30) as raw:
        for case in HOSTILE:
            if keyless and not case.keyless_too:
                continue
            for method, path in routes_for(target.engine):
                if case.only and path not in case.only:
                    continue
                verb = case.method or method
                headers = {"Content-Type": case.content_type} if verb == "POST" else {}
                headers |= case.headers  # type: ignore[arg-type]
                content = _body(target) if verb in ("POST", "DELETE") else None
                url = f"{path}?probe={probe}"
                reply = raw.request(verb, url, headers=headers, content=content)
                sent += 1
                problems += _problems(target, case, path, reply)
    return sent, problems


def _refusals_logged(lines: list[str], probe: str, engine: EngineId) -> tuple[int, list[str]]:
    """Access-log lines of the probe's requests, and any that the engine did not refuse."""
    mine = [m for m in map(ACCESS_LINE.search, lines) if m and f"probe={probe}" in m["path"]]
    served = [m[0] for m in mine if m["status"] not in ("401", "403")]
    return len(mine), served


# -- the tests ----------------------------------------------------------------------------------


def test_hostile_requests_are_refused_and_nothing_happens(target: Target) -> None:
    before = asyncio.run(_seen(target))
    probe = uuid.uuid4().hex
    sent, problems = _send_all(target, probe)
    assert not problems, "\n".join(problems)
    after = asyncio.run(_seen(target))
    assert after.instances == before.instances, "a hostile request started an instance"
    assert after.counters == before.counters, "a hostile request made the engine generate"
    assert after.loaded == before.loaded, "a hostile request loaded a model"
    assert after.files == before.files, "a hostile request wrote or removed a file"
    if target.engine != EngineId.LLAMA_CPP:
        # These engines run on http.server: its access log shows each request it was sent,
        # with the status its guard gave: every one of ours, every one refused.
        lines = asyncio.run(_log_after(target, before.log_next))
        logged, served = _refusals_logged(lines, probe, target.engine)
        assert not served, served
        assert logged == sent, (logged, sent)
        if target.engine == EngineId.MLX:
            assert not any("Prompt processing" in line for line in lines), lines


def test_the_daemon_still_serves_the_model(target: Target) -> None:
    """The daemon holds the engine's key: its gateway is served, and the engine generated."""
    before = asyncio.run(_seen(target))
    body = {
        "model": target.model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 4,
    }
    reply = httpx.post(
        f"{target.daemon.url}/v1/chat/completions", json=body, trust_env=False, timeout=120
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["role"] == "assistant"
    after = asyncio.run(_seen(target))
    # The checks of the test above can fail: a served request moves them.
    for name, value in before.counters.items():
        assert after.counters[name] > value, (name, before.counters, after.counters)
    if target.engine == EngineId.OLLAMA:
        assert reply.headers["x-roundhouse-engine"] == "ollama"


@pytest.mark.parametrize("target", [EngineId.OLLAMA], ids=["ollama"], indirect=True)
def test_a_local_program_without_origin_reaches_ollama_as_with_ollama_itself(
    target: Target,
) -> None:
    """Ollama has no key: a program on this machine that sends no Origin is served, as by
    `ollama serve` itself; web pages (an Origin) and rebound names (a Host) are not."""
    with httpx.Client(base_url=target.base_url, trust_env=False, timeout=10) as local:
        assert local.get("/api/tags").status_code == 200
        local_page = {"Origin": "http://localhost:5173"}
        reply = local.get("/api/tags", headers=local_page)
        # Ollama's own default list lets local web apps in; Roundhouse adds no origin.
        assert reply.headers.get("access-control-allow-origin") == "http://localhost:5173"
        assert local.get("/api/tags", headers={"Origin": EVIL_ORIGIN}).status_code == 403


def test_llama_server_enumeration_is_its_own() -> None:
    """The llama-server routes probed are the ones its source registers (not a short list)."""
    paths = {path for _, path in routes_for(EngineId.LLAMA_CPP)}
    assert {"/slots", "/props", "/metrics", "/v1/messages", "/apply-template"} <= paths
    assert len(paths) >= 30, sorted(paths)


@pytest.mark.parametrize("target", KEYED, ids=[e.value for e in KEYED], indirect=True)
def test_the_key_is_not_on_the_command_line(target: Target) -> None:
    argv = " ".join(target.info.argv)
    assert "rhe-" not in argv and "api-key" not in argv and "api_key" not in argv, argv
    pid = target.info.pid
    assert pid is not None
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    assert b"rhe-" not in cmdline, cmdline
