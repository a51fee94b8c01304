"""Hostile request bodies through a real daemon's gateway to a vLLM stand-in it started.

The stand-in (a real process, strict as vLLM's server) appends every body it receives to a
file, before it answers: so a refusal is shown to have happened at the gateway, and what the
engine saw of an accepted request can be read. Asserted: every field that makes an engine
load a model, a path, code or another slot is refused with 400 in OpenAI's shape and never
reaches the engine; unknown fields are dropped and named; a media URL reaches the engine
only inline or on a host in gateway.media_domains, however its host is disguised; and the
engine itself was started with the same media allowlist."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import GatewaySettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.core.gateway.fields import REFUSED
from roundhouse.core.infra.settings import save_settings
from tests.api.test_cli import roundhouse
from tests.daemon_process import DaemonProcess, start_daemon, start_ready
from tests.fakes.launchers import console_script

pytestmark = pytest.mark.timeout(180)

MODEL = "org/allowlist-m"
ALLOWED = "allowed.example"
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYAAAAAMAASsJ"
    "TYQAAAAASUVORK5CYII="
)


@dataclass
class Gateway:
    daemon: DaemonProcess
    record: Path

    @property
    def url(self) -> str:
        return self.daemon.url + "/v1"

    def received(self) -> list[dict[str, Any]]:
        """The request bodies the engine received, parsed, in order."""
        lines = self.record.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines]
        return [
            json.loads(e["body"]) for e in entries if "body" in e and e["path"].startswith("/v1/")
        ]

    def started_with(self) -> dict[str, Any]:
        first = json.loads(self.record.read_text(encoding="utf-8").splitlines()[0])
        assert "argv" in first, first
        return dict(first)

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.url}/{path}", json=body, timeout=30, trust_env=False)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    folder = tmp_path_factory.mktemp("field allowlist")
    # `vllm` on PATH runs the vLLM stand-in, as pip's console script runs vLLM (0.11.0).
    vllm = console_script(folder / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    root = folder / "home"
    home = resolve_home(root)
    home.ensure()
    save_settings(
        home.settings_file,
        Settings(models_dir=str(folder / "hub"), gateway=GatewaySettings(media_domains=[ALLOWED])),
    )
    record = folder / "received.jsonl"
    daemon = start_daemon(root, env={"PATH": f"{vllm.parent}{os.pathsep}{os.environ['PATH']}"})
    try:
        options = InstanceOptions(model=MODEL, extra_args=("--record-requests", str(record)))
        asyncio.run(start_ready(daemon, StartRequest(engine=EngineId.VLLM, options=options)))
        yield Gateway(daemon, record)
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def _chat(content: object, **fields: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 4,
        **fields,
    }


def _image(url: str) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]


def _refused(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    return dict(error)


def test_the_engine_was_started_with_the_media_allowlist(gateway: Gateway) -> None:
    started = gateway.started_with()
    argv = started["argv"]
    at = argv.index("--allowed-media-domains")
    assert argv[at + 1] == ALLOWED
    assert started["media_redirects"] == "0"


@pytest.mark.parametrize("path", ["chat/completions", "completions"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_dangerous_field_is_refused_and_never_reaches_the_engine(
    gateway: Gateway, path: str, name: str
) -> None:
    body = _chat("hi") if path == "chat/completions" else {"model": MODEL, "prompt": "hi"}
    value: object = "mlx-community/anything" if name == "draft_model" else "/etc/passwd"
    before = len(gateway.received())
    error = _refused(gateway.post(path, body | {name: value}))
    assert error["param"] == name and error["code"] == "field_not_allowed"
    assert f"'{name}'" in error["message"]
    assert len(gateway.received()) == before
    assert all(name not in seen for seen in gateway.received())


def test_the_official_client_gets_openais_error_for_a_draft_model(gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url, api_key="unused", max_retries=0)
    with client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"draft_model": "mlx-community/Llama-3.2-1B-Instruct-4bit", "adapters": "/"},
        )
    assert refused.value.code == "field_not_allowed"
    assert all("draft_model" not in seen for seen in gateway.received())


def test_unknown_fields_are_dropped_named_and_the_extras_go_on(gateway: Gateway) -> None:
    extras = {"top_k": 5, "chat_template_kwargs": {"enable_thinking": False}, "cache_salt": "u1"}
    unknown = {"response_fields": ["content"], "vllm_xargs": {"a": 1}, "role_mapping": {}}
    reply = gateway.post("chat/completions", _chat("hi", **extras, **unknown))
    assert reply.status_code == 200, reply.text
    assert (
        reply.headers["x-roundhouse-dropped-fields"] == "response_fields, role_mapping, vllm_xargs"
    )
    seen = gateway.received()[-1]
    assert not set(unknown) & set(seen)
    assert {k: seen[k] for k in extras} == extras
    assert seen["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://127.0.0.1:22/",
        f"https://{ALLOWED}.evil.net/cat.png",
        f"https://{ALLOWED}@evil.net/cat.png",
        f"https://{ALLOWED}\\@evil.net/cat.png",
        f"https://{ALLOWED}%2eevil.net/cat.png",
        "HTTP://EVIL.NET/cat.png",
        "file:///etc/passwd",
        "/etc/passwd",
    ],
)
def test_a_media_url_off_the_allowed_hosts_never_reaches_the_engine(
    gateway: Gateway, url: str
) -> None:
    before = len(gateway.received())
    error = _refused(gateway.post("chat/completions", _chat(_image(url))))
    assert error["code"] == "media_url_not_allowed"
    assert error["param"] == "messages[0].content[1].image_url.url"
    assert "gateway.media_domains" in error["message"]
    assert len(gateway.received()) == before


def test_audio_given_as_a_url_is_refused_too(gateway: Gateway) -> None:
    part = {
        "type": "input_audio",
        "input_audio": {"data": "http://10.0.0.1/a.wav", "format": "wav"},
    }
    error = _refused(gateway.post("chat/completions", _chat([part])))
    assert error["param"] == "messages[0].content[0].input_audio.data"


@pytest.mark.parametrize("url", [PNG, f"https://{ALLOWED}/cat.png", f"HTTPS://{ALLOWED.upper()}/c"])
def test_inline_media_and_the_allowed_host_reach_the_engine_unchanged(
    gateway: Gateway, url: str
) -> None:
    reply = gateway.post("chat/completions", _chat(_image(url)))
    assert reply.status_code == 200, reply.text
    assert "x-roundhouse-dropped-fields" not in reply.headers
    assert gateway.received()[-1]["messages"][0]["content"][1]["image_url"]["url"] == url


def test_a_host_allowed_later_passes_the_gateway_at_once_and_the_engine_at_its_restart(
    gateway: Gateway,
) -> None:
    root = gateway.daemon.home.root
    assert root is not None
    hosts = f"{ALLOWED},Second.Example"
    done = roundhouse(root, "settings", "set", "gateway.media_domains", hosts)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"gateway.media_domains = {ALLOWED}, second.example"
    try:
        reply = gateway.post("chat/completions", _chat(_image("https://second.example/x.png")))
        # The gateway let it through; the engine still has the list it was started with.
        assert reply.status_code == 400, reply.text
        assert "allowed domains" in reply.json()["error"]["message"]
        assert gateway.received()[-1]["messages"][0]["content"][1]["image_url"]["url"] == (
            "https://second.example/x.png"
        )
    finally:
        assert roundhouse(root, "settings", "set", "gateway.media_domains", ALLOWED).returncode == 0
    refused = roundhouse(root, "settings", "set", "gateway.media_domains", "https://evil.net/")
    assert refused.returncode != 0
    assert "is not a host name" in refused.stderr + refused.stdout


def test_a_bad_media_domain_setting_is_refused_in_words(gateway: Gateway) -> None:
    reply = httpx.put(
        gateway.daemon.url + "/api/v1/settings",
        headers={"authorization": f"Bearer {gateway.daemon.token}"},
        json={"gateway": {"media_domains": ["https://evil.net/"]}},
        trust_env=False,
    )
    assert reply.status_code == 422, reply.text
    assert "is not a host name" in reply.text
