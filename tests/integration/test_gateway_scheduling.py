"""The gateway's scheduling through a real daemon and the real llama-server, with the official
`openai` client: just-in-time starts from saved presets, the idle TTL, least-recently-used
eviction, a full queue (429) and a queue timeout (503), the listing, `roundhouse run`."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus, Preset
from roundhouse.api.settings import GatewaySettings
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.processes import wait_for

MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello."}
]
# Distinct names: engines other tests run on this machine are listed too (as external).
ALPHA, BETA, BROKEN = "sched-alpha", "sched-beta", "sched-broken"


@dataclass
class Gw:
    daemon: DaemonProcess
    root: Path
    client: OpenAI

    def run(self, coro_fn: Callable[[DaemonClient], Any]) -> Any:
        async def main() -> Any:
            async with DaemonClient(self.daemon.url, self.daemon.token) as client:
                return await coro_fn(client)

        return asyncio.run(main())

    def ours(self) -> list[InstanceInfo]:
        listed = self.run(lambda c: c.instances()).instances
        return [i for i in listed if i.origin != InstanceOrigin.EXTERNAL]

    def configure(self, **gateway: Any) -> None:
        async def put(client: DaemonClient) -> None:
            settings = await client.settings()
            new = GatewaySettings(**{**GatewaySettings().model_dump(), **gateway})
            await client.put_settings(settings.model_copy(update={"gateway": new}))

        self.run(put)

    def reset(self, **gateway: Any) -> None:
        """No instance of ours running, and the gateway settings given (defaults besides)."""

        async def stop_all(client: DaemonClient) -> None:
            for info in (await client.instances()).instances:
                if info.origin != InstanceOrigin.EXTERNAL:
                    await client.stop_instance(info.id)

        self.run(stop_all)
        self.configure(**gateway)

    def usage(self, instance_id: str) -> Any:
        report = self.run(lambda c: c.gateway_usage()).usage
        return next(u for u in report if u.instance == instance_id)


def _preset(model: Path, **options: Any) -> Preset:
    chosen = InstanceOptions(**{"model": str(model), "ctx_size": 512, "parallel": 1, **options})
    return Preset(engine=EngineId.LLAMA_CPP, model=str(model), options=chosen)


@pytest.fixture(scope="module")
def gw(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gw]:
    models = tmp_path_factory.mktemp("sched models")
    for name in (ALPHA, BETA):
        shutil.copy(tiny_gguf, models / f"{name}.gguf")
    (models / f"{BROKEN}.gguf").write_bytes(b"GGUF but not really a model")
    root = tmp_path_factory.mktemp("sched") / "home"
    daemon = start_daemon(root, env=path_with(llama_server_binary))
    client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    gw = Gw(daemon, root, client)
    try:

        async def save(c: DaemonClient) -> None:
            # ALPHA's context (the tiny model's whole 2048) holds a long stream.
            await c.save_preset(_preset(models / f"{ALPHA}.gguf", ctx_size=2048))
            await c.save_preset(_preset(models / f"{BETA}.gguf"))
            await c.save_preset(_preset(models / f"{BROKEN}.gguf"))

        gw.run(save)
        yield gw
    finally:
        client.close()
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def _listed(gw: Gw) -> dict[str, dict[str, Any]]:
    return {m.id: (m.model_extra or {})["roundhouse"] for m in gw.client.models.list()}


def test_the_first_request_starts_the_model_and_the_listing_follows(gw: Gw) -> None:
    gw.reset()
    listed = _listed(gw)
    assert listed[ALPHA]["state"] == ModelState.STARTABLE and listed[BETA]["state"] == "startable"
    assert listed[ALPHA]["engine"] == "llama.cpp" and listed[ALPHA]["instance"] is None

    raw = gw.client.chat.completions.with_raw_response.create(
        model=ALPHA, messages=MESSAGES, max_tokens=4
    )
    reply = raw.parse()
    assert reply.choices[0].message.content is not None
    (instance,) = gw.ours()
    assert instance.status == InstanceStatus.READY and instance.model.endswith(f"{ALPHA}.gguf")  # type: ignore[union-attr]
    assert raw.headers["x-roundhouse-instance"] == instance.id
    assert raw.headers["x-roundhouse-engine"] == "llama.cpp"

    listed = _listed(gw)
    assert listed[ALPHA]["state"] == "serving" and listed[ALPHA]["instance"] == instance.id
    assert listed[BETA]["state"] == "startable"
    control = gw.run(lambda c: c.gateway_models())
    assert {m.id: m.state for m in control.models}[ALPHA] == ModelState.SERVING
    # Nothing chosen, and the one model Roundhouse runs: it is the active model.
    assert control.active_model == ALPHA

    # A streamed reply names its instance too, and the usage counts both requests.
    with gw.client.chat.completions.with_streaming_response.create(
        model=f"{ALPHA}.gguf", messages=MESSAGES, max_tokens=4, stream=True
    ) as streamed:
        assert streamed.headers["x-roundhouse-instance"] == instance.id
        assert list(streamed.iter_lines())
    usage = gw.usage(instance.id)
    assert usage.requests == 2 and usage.completion_tokens > 0 and usage.in_flight == 0
    assert usage.idle_ttl_s == GatewaySettings().idle_ttl_s and usage.last_used_at is not None


def test_with_just_in_time_off_an_idle_model_is_not_found(gw: Gw) -> None:
    gw.reset(just_in_time=False)
    with pytest.raises(openai.NotFoundError) as caught:
        gw.client.chat.completions.create(model=BETA, messages=MESSAGES, max_tokens=4)
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "model_not_found"
    assert gw.ours() == []


def test_a_start_that_fails_answers_503_with_the_reason(gw: Gw) -> None:
    gw.reset()
    with pytest.raises(openai.InternalServerError) as caught:
        gw.client.chat.completions.create(model=BROKEN, messages=MESSAGES, max_tokens=4)
    assert caught.value.status_code == 503
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "model_start_failed"
    assert BROKEN in body["message"] and "failed to start" in body["message"]


def test_the_least_recently_used_idle_instance_makes_room(gw: Gw) -> None:
    gw.reset(max_resident=1)
    gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
    (alpha,) = gw.ours()
    gw.client.chat.completions.create(model=BETA, messages=MESSAGES, max_tokens=2)
    (beta,) = gw.ours()
    assert beta.id != alpha.id and beta.model.endswith(f"{BETA}.gguf")  # type: ignore[union-attr]
    assert _listed(gw)[ALPHA]["state"] == "startable"


def test_idle_instances_started_just_in_time_stop_after_the_ttl(gw: Gw) -> None:
    gw.reset(idle_ttl_s=2, max_resident=2)
    # Started by hand: kept however long it idles.
    request = _start_request(gw, BETA)
    hand = gw.run(lambda c: c.start_instance(request))
    wait_for(lambda: gw.run(lambda c: c.instance(hand.id)).status == "ready", "it is ready")
    gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
    used_at = time.monotonic()
    alpha = next(i for i in gw.ours() if i.id != hand.id)
    assert gw.usage(alpha.id).idle_ttl_s == 2
    deadline = used_at + 15
    while any(i.id == alpha.id for i in gw.ours()):
        assert time.monotonic() < deadline, "the idle instance was not stopped"
        time.sleep(0.2)
    assert time.monotonic() - used_at >= 2
    assert [i.id for i in gw.ours()] == [hand.id]


def test_a_request_for_a_model_still_loading_waits_for_it(gw: Gw) -> None:
    gw.reset()
    request = _start_request(gw, BETA)
    loading = gw.run(lambda c: c.start_instance(request))
    assert loading.status == InstanceStatus.STARTING
    reply = gw.client.chat.completions.create(model=BETA, messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content is not None
    assert [i.id for i in gw.ours()] == [loading.id]
    assert gw.usage(loading.id).idle_ttl_s is None  # started by hand: kept


def _start_request(gw: Gw, name: str) -> Any:
    from roundhouse.api.instances import StartRequest

    presets = gw.run(lambda c: c.presets()).presets
    preset = next(p for p in presets if p.model.endswith(f"{name}.gguf"))
    return StartRequest(engine=EngineId.LLAMA_CPP, options=preset.options)


class HeldStream:
    """A streamed request read by nobody: its gateway slot stays taken until it is closed.
    With every token's 300 most likely alternatives the stream is about 40 MB, far more
    than the socket buffers between the daemon and this client hold, so the daemon's relay
    waits on the client instead of finishing into buffers."""

    def __init__(self, gw: Gw, model: str) -> None:
        self._http = httpx.Client(trust_env=False, timeout=30)
        body = {
            "model": model,
            "messages": MESSAGES,
            "stream": True,
            "max_tokens": 4000,
            "ignore_eos": True,
            "logprobs": True,
            "top_logprobs": 300,
        }
        request = self._http.build_request(
            "POST", gw.daemon.url + "/v1/chat/completions", json=body
        )
        self.response = self._http.send(request, stream=True)
        assert self.response.status_code == 200

    def close(self) -> None:
        self.response.close()
        self._http.close()


def _in_background(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(call())
        except Exception as exc:  # noqa: BLE001 (the test reads it from `out`)
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def test_a_full_queue_answers_429_and_the_waiting_request_completes(gw: Gw) -> None:
    gw.reset(max_concurrent=1, queue_size=1, queue_timeout_s=30)
    gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
    (alpha,) = gw.ours()
    held = HeldStream(gw, ALPHA)
    try:
        waiting, result = _in_background(
            lambda: gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
        )
        wait_for(lambda: gw.usage(alpha.id).queued == 1, "the second request is queued")
        assert gw.usage(alpha.id).in_flight == 1
        with pytest.raises(openai.RateLimitError) as refused:
            gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
        assert refused.value.status_code == 429
        assert refused.value.response.headers["retry-after"] == "1"
        body = refused.value.body
        assert isinstance(body, dict) and body["code"] == "rate_limit_exceeded"
        assert body["type"] == "requests" and "queue_size" in body["message"]
        assert waiting.is_alive()
    finally:
        held.close()
    waiting.join(30)
    assert not waiting.is_alive()
    (reply,) = result
    assert isinstance(reply, openai.types.chat.ChatCompletion), reply
    wait_for(lambda: gw.usage(alpha.id).in_flight == 0, "every slot is free again")


def test_a_request_that_waits_past_the_queue_timeout_gets_503(gw: Gw) -> None:
    gw.reset(max_concurrent=1, queue_size=4, queue_timeout_s=1)
    gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
    held = HeldStream(gw, ALPHA)
    try:
        started = time.monotonic()
        with pytest.raises(openai.InternalServerError) as late:
            gw.client.chat.completions.create(model=ALPHA, messages=MESSAGES, max_tokens=2)
        assert 1 <= time.monotonic() - started < 10
        assert late.value.status_code == 503
        body = late.value.body
        assert isinstance(body, dict) and body["code"] == "queue_timeout"
    finally:
        held.close()


def test_roundhouse_run_serves_the_model_and_says_how_to_reach_it(gw: Gw) -> None:
    gw.reset(just_in_time=False)
    argv = [sys.executable, "-m", "roundhouse", "--home", str(gw.root), "run", BETA]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["base_url"] == gw.daemon.url + "/v1"
    assert answer["instance"]["status"] == "ready"
    (beta,) = gw.ours()
    assert answer["instance"]["id"] == beta.id
    # Again, as people read it: the same instance, and a request to try.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert beta.id in done.stdout and "curl " + gw.daemon.url + "/v1" in done.stdout
    missing = subprocess.run(
        [*argv[:-1], "no-such-model"], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 1 and "neither in the model library nor" in missing.stderr
