"""A web page in a real browser (headless Chromium) attacks the gateway and every engine port.

One real daemon runs the real llama-server on the tiny model, the real mlx_lm.server, and
the vLLM, SGLang and Ollama stand-ins, and keeps a preset a request could start just in
time; both gateway listeners are keyless on loopback. The page comes from another origin on
loopback, once as `http://attacker.localhost:<port>` and once as `http://localhost:<port>`
(which "local origins" settings tend to trust). For each route, addressed by `127.0.0.1` and
by a rebinding name (`rebind.localhost`), it tries the CSRF "simple request" (a `no-cors`
POST of a text/plain JSON body), a CORS GET and a CORS POST of JSON, and reports what it
could read. Chromium's NetLog adds what each listener answered, opaque replies included.

Asserted: the page read nothing; no reply allowed its origin; the gateway answered 403
(foreign Origin) or 415 (not JSON), preflights included, and each engine 401 or 403; no
instance started or stopped; the gateway's usage and the engines' token counters did not
move. Two controls on the attacker's own site show that the browser did send cross-origin
requests to loopback and could read a reply that allowed it, so a refusal here is the
listeners' doing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, Preset, StartRequest
from roundhouse.api.settings import EngineSettings, GatewaySettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.core.engines.launch import keyless
from roundhouse.core.infra.ports import BROWSER_BLOCKED_PORTS
from roundhouse.core.infra.settings import save_settings
from roundhouse.core.instances.keys import EngineKeys, auth_headers
from tests.browser import Response, Visit, chromium_or_skip, serving, visit
from tests.daemon_process import DaemonProcess, start_daemon, start_ready
from tests.fakes.ollama.server import Options as OllamaOptions
from tests.fakes.ollama.server import Store
from tests.processes import free_port
from tests.support.standins import program, sglang_python, vllm_standin

pytestmark = pytest.mark.timeout(300)

READY_TIMEOUT_S = 90.0
PRESET = "browser-preset"
ATTACKER_HOST = "attacker.localhost"
# A name the attacker controls, resolved to loopback (DNS rebinding); Chromium resolves every
# *.localhost name to loopback itself, so no resolver is needed.
REBIND_HOST = "rebind.localhost"
GATEWAY_PATHS = ("/v1/models", "/v1/chat/completions")
ENGINE_PATHS = {
    EngineId.LLAMA_CPP: ("/v1/models", "/v1/chat/completions", "/slots", "/props", "/metrics"),
    EngineId.VLLM: ("/v1/models", "/v1/chat/completions", "/metrics"),
    EngineId.MLX: ("/v1/models", "/v1/chat/completions"),
    EngineId.SGLANG: ("/v1/models", "/v1/chat/completions", "/generate", "/get_server_info"),
    EngineId.OLLAMA: ("/api/tags", "/api/ps", "/api/generate", "/api/chat", "/v1/models"),
}
# Prometheus counters that move when an engine reads a prompt or generates.
# Not SGLang's: its readiness probe, /health_generate, generates a token each time.
COUNTED = {EngineId.LLAMA_CPP: "llamacpp:", EngineId.VLLM: "vllm:"}


@dataclass
class Attacked:
    daemon: DaemonProcess
    second: str
    engines: list[InstanceInfo]

    def run(self, call: Callable[[DaemonClient], Any]) -> Any:
        async def main() -> Any:
            async with DaemonClient(self.daemon.url, self.daemon.token) as client:
                return await call(client)

        return asyncio.run(main())

    def key(self, instance: InstanceInfo) -> str:
        return EngineKeys(self.daemon.home.state_dir).key_for(instance.id)


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_or_skip()


@pytest.fixture(scope="module")
def attacked(
    chromium: str,
    llama_server_binary: Path,
    tiny_gguf: Path,
    mlx_python: str,
    tiny_hf_model: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Attacked]:
    folder = tmp_path_factory.mktemp("browser attacker")
    preset_model = folder / f"{PRESET}.gguf"
    shutil.copy(tiny_gguf, preset_model)
    # The stand-ins found as the daemon finds the real engines: `vllm` and `ollama` on PATH
    # (Ollama with its model pulled), an `sglang` package in a chosen Python.
    bins = folder / "bin"
    vllm_standin(bins)
    ollama_state = folder / "ollama-state"
    pulled = list(Store(OllamaOptions(state=ollama_state, pull_delay_s=0.0)).pull("tiny"))
    assert pulled[-1] == {"status": "success"}, pulled
    program(bins, "ollama", "tests.fakes.ollama", tail=f", '--state', {str(ollama_state)!r}")
    root = folder / "home"
    home = resolve_home(root)
    home.ensure()
    second_port = free_port()
    save_settings(
        home.settings_file,
        Settings(
            models_dir=str(folder / "hub"),
            engines=EngineSettings(python_paths=[mlx_python, sglang_python(folder)]),
            # Both listeners keyless on loopback, as most users run them.
            gateway=GatewaySettings(listen_host="127.0.0.1", listen_port=second_port),
        ),
    )
    path = os.pathsep.join((str(bins), str(llama_server_binary.parent), os.environ["PATH"]))
    daemon = start_daemon(root, env={"PATH": path})
    try:
        starts = [
            StartRequest(
                engine=EngineId.LLAMA_CPP,
                options=InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1),
            ),
            StartRequest(engine=EngineId.MLX, options=InstanceOptions(model=str(tiny_hf_model))),
            StartRequest(engine=EngineId.VLLM, options=InstanceOptions(model="org/browser-v")),
            StartRequest(engine=EngineId.SGLANG, options=InstanceOptions(model="org/browser-s")),
            StartRequest(engine=EngineId.OLLAMA, options=InstanceOptions(model="tiny:latest")),
        ]
        engines = [asyncio.run(start_ready(daemon, s, READY_TIMEOUT_S)) for s in starts]
        assert all(e.models for e in engines), engines
        preset = Preset(
            engine=EngineId.LLAMA_CPP,
            model=str(preset_model),
            options=InstanceOptions(model=str(preset_model), ctx_size=512, parallel=1),
        )
        attacked = Attacked(daemon, f"http://127.0.0.1:{second_port}", engines)
        attacked.run(lambda c: c.save_preset(preset))
        # A request naming it would start it: what the page must not manage.
        listed = httpx.get(f"{daemon.url}/v1/models", trust_env=False).json()["data"]
        state = {m["id"]: m["roundhouse"]["state"] for m in listed}
        assert state.get(PRESET) == ModelState.STARTABLE, state
        yield attacked
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


# The attacker's page: every attempt on every address, then the report to its own site.
PAGE = """<!doctype html><meta charset="utf-8"><title>attacker</title><script>
const plan = __PLAN__;
async function attempt(url, how) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 20000);
  try {
    const reply = await fetch(url, {...how.init, signal: abort.signal});
    if (reply.type === "opaque") return {outcome: "opaque"};
    const body = await reply.text();
    return {outcome: "readable", status: reply.status, body: body.slice(0, 300)};
  } catch (error) {
    return {outcome: "failed", error: String(error)};
  } finally {
    clearTimeout(timer);
  }
}
(async () => {
  const results = [];
  for (const url of plan.urls) {
    for (const how of plan.hows) {
      results.push({url: url.url, body: url.body, how: how.name, ...(await attempt(url.url,
        {...how, init: {...how.init, body: how.init.method === "POST" ? url.body : undefined}}))});
    }
  }
  const control = await attempt(plan.open, {init: {mode: "cors"}});
  const sink = await attempt(plan.sink, {init: {mode: "no-cors", method: "POST", body: "x"}});
  await fetch("/report", {method: "POST", body: JSON.stringify({results, control, sink})});
})();
</script>"""

HOWS = [
    # The CSRF "simple request": no preflight, the reply opaque, but the request is sent.
    {"name": "no-cors POST text/plain", "init": {"mode": "no-cors", "method": "POST"}},
    {"name": "cors GET", "init": {"mode": "cors", "method": "GET"}},
    {
        "name": "cors POST json",
        "init": {"mode": "cors", "method": "POST", "headers": {"content-type": "application/json"}},
    },
]


def _body(path: str, model: str) -> str:
    """What the route would generate from, had the page got through."""
    if path.endswith(("/chat/completions", "/api/chat")):
        asked: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
    elif path == "/generate":  # SGLang's native route
        asked = {"text": "hi"}
    else:
        asked = {"prompt": "hi"}
    return json.dumps({"model": model, **asked, "max_tokens": 4, "stream": False})


def _urls(attacked: Attacked) -> list[dict[str, str]]:
    # The gateway is asked for the preset nobody runs (a just-in-time start); each engine,
    # for the model it serves (a generation). Engines first: a start the gateway let through
    # could stop them to make room, and hide what they would have answered.
    bases = [(e.url, ENGINE_PATHS[e.engine], e.models[0]) for e in attacked.engines]
    bases += [(gw, GATEWAY_PATHS, PRESET) for gw in (attacked.daemon.url, attacked.second)]
    urls = []
    for base, paths, model in bases:
        port = urlsplit(base).port
        for host in ("127.0.0.1", REBIND_HOST):
            urls += [{"url": f"http://{host}:{port}{p}", "body": _body(p, model)} for p in paths]
    return urls


def _ours(attacked: Attacked) -> list[tuple[str, str, int | None, int]]:
    listed = attacked.run(lambda c: c.instances()).instances
    return sorted(
        (i.id, i.status.value, i.pid, i.restarts)
        for i in listed
        if i.origin != InstanceOrigin.EXTERNAL
    )


def _usage(attacked: Attacked) -> list[dict[str, Any]]:
    usage = attacked.run(lambda c: c.gateway_usage()).usage
    return sorted((u.model_dump() for u in usage), key=lambda u: str(u["instance"]))


def _token_counters(attacked: Attacked) -> dict[str, float | str]:
    """Each counting engine's prompt and generated token totals, read with its key (or why
    they could not be: an engine stopped to make room for a started one)."""
    found: dict[str, float | str] = {}
    for engine in attacked.engines:
        prefix = COUNTED.get(engine.engine)
        if prefix is None:
            continue
        headers = auth_headers(attacked.key(engine))
        try:
            reply = httpx.get(f"{engine.url}/metrics", headers=headers, trust_env=False)
        except httpx.TransportError as exc:
            found[engine.engine.value] = f"unreachable: {exc!r}"
            continue
        assert reply.status_code == 200, (engine.engine, reply.text)
        for line in reply.text.splitlines():
            sample, _, value = line.rpartition(" ")
            name = sample.split("{", 1)[0]
            if name.startswith(prefix) and "tokens" in name and name.endswith("_total"):
                found[f"{engine.engine.value} {sample}"] = float(value)
        assert any(k.startswith(engine.engine.value) for k in found), reply.text
    return found


@dataclass
class Attack:
    """One visit of the page: from where, what the browser saw, what changed meanwhile."""

    origin: str
    visit: Visit
    before: dict[str, Any]
    after: dict[str, Any]
    sunk: list[bytes]

    def answered(self, ports: set[int]) -> list[Response]:
        return [r for r in self.visit.responses if urlsplit(r.url).port in ports]


def _state(attacked: Attacked) -> dict[str, Any]:
    return {
        "instances": _ours(attacked),
        "usage": _usage(attacked),
        "tokens": _token_counters(attacked),
    }


# Two origins: a name no listener knows, and `localhost` on another port, which engines'
# "local origins only" settings tend to let in.
@pytest.fixture(scope="module", params=[ATTACKER_HOST, "localhost"])
def attack(attacked: Attacked, chromium: str, request: pytest.FixtureRequest) -> Attack:
    before = _state(attacked)
    with serving("") as site:
        origin = f"http://{request.param}:{site.port}"
        plan = {
            "urls": _urls(attacked),
            "hows": HOWS,
            # Cross-origin to the page (127.0.0.1, not its name): the controls.
            "open": f"http://127.0.0.1:{site.port}/open",
            "sink": f"http://127.0.0.1:{site.port}/sink",
        }
        site.page = PAGE.replace("__PLAN__", json.dumps(plan))
        seen = visit(chromium, f"{origin}/", site)
        sunk = list(site.sunk)
    return Attack(origin, seen, before, _state(attacked), sunk)


def _gateway_ports(attacked: Attacked) -> set[int]:
    return {p for p in (urlsplit(attacked.daemon.url).port, urlsplit(attacked.second).port) if p}


def _engine_ports(attacked: Attacked) -> set[int]:
    """The ports of the engines with a key or Roundhouse's guard: they answer, refusing."""
    return {e.port for e in attacked.engines if not keyless(e.engine)}


def _keyless_ports(attacked: Attacked) -> set[int]:
    """Ollama's: it takes no key, so it listens where no browser sends a request (ADR 21)."""
    return {e.port for e in attacked.engines if keyless(e.engine)}


def _lines(responses: list[Response]) -> str:
    return "\n".join(f"{r.method} {r.url} -> {r.status} {r.headers}" for r in responses)


def test_the_browser_could_reach_loopback_across_origins(attack: Attack) -> None:
    report = attack.visit.report
    assert report["control"] == {"outcome": "readable", "status": 200, "body": '{"open": true}'}
    assert report["sink"]["outcome"] == "opaque" and attack.sunk == [b"x"], report["sink"]


def test_the_page_read_nothing_from_any_listener(attacked: Attacked, attack: Attack) -> None:
    results = attack.visit.report["results"]
    assert len(results) == len(_urls(attacked)) * len(HOWS)
    readable = [r for r in results if r["outcome"] == "readable"]
    assert readable == [], "\n".join(
        f"{r['how']} {r['url']} -> {r['status']} {r['body'][:120]}" for r in readable
    )
    # A no-cors request is sent whatever the reply; the reply stays opaque to the page.
    for result in results:
        if result["how"].startswith("no-cors"):
            assert result["outcome"] in ("opaque", "failed"), result


def test_every_listener_answered_and_none_let_the_page_in(
    attacked: Attacked, attack: Attack
) -> None:
    ports = _gateway_ports(attacked) | _engine_ports(attacked)
    answered = attack.answered(ports)
    # Each listener answered at least once: the refusals are replies, not silence.
    assert {urlsplit(r.url).port for r in answered} == ports, _lines(answered)
    # What makes a reply readable, or lets a preflighted request go: an allowed origin.
    allowing = [
        r
        for r in answered
        if r.headers.get("access-control-allow-origin") in (attack.origin, "*", "null")
    ]
    assert allowing == [], _lines(allowing)


def test_no_request_reached_the_engine_that_takes_no_key(
    attacked: Attacked, attack: Attack
) -> None:
    ports = _keyless_ports(attacked)
    assert ports and ports <= set(BROWSER_BLOCKED_PORTS), ports
    # The browser refused to send a thing there, whatever the page's origin: no reply came.
    assert attack.answered(ports) == [], _lines(attack.answered(ports))
    tried = [r for r in attack.visit.report["results"] if urlsplit(r["url"]).port in ports]
    assert tried and all(r["outcome"] == "failed" for r in tried), tried


def test_the_gateway_refused_the_forged_requests(attacked: Attacked, attack: Attack) -> None:
    answered = attack.answered(_gateway_ports(attacked))
    assert any(r.method == "POST" for r in answered), "no forged POST reached the gateway"
    # 403 for the foreign Origin (preflights too), 415 for a body that is not JSON.
    wrong = [r for r in answered if r.status not in ((403, 415) if r.method == "POST" else (403,))]
    assert wrong == [], _lines(wrong)


def test_every_engine_refused_the_page(attacked: Attacked, attack: Attack) -> None:
    answered = attack.answered(_engine_ports(attacked))
    # llama-server answers every preflight itself, before its key check, and runs no route
    # for it; the test above holds preflights to allowing no origin.
    wrong = [r for r in answered if r.method != "OPTIONS" and r.status not in (401, 403)]
    assert wrong == [], _lines(wrong)


def test_nothing_started_and_nothing_was_generated(attack: Attack) -> None:
    before, after = attack.before, attack.after
    assert after["instances"] == before["instances"], "an instance came or went"
    assert after["usage"] == before["usage"], "the gateway served a request"
    assert after["tokens"] == before["tokens"], "an engine read a prompt, generated, or went"
