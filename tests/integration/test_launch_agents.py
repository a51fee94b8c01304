"""`roundhouse launch AGENT [MODEL]` against a real daemon and the real llama-server: the exact
environment and arguments each agent gets (printed, and as a stand-in agent on PATH records
them), the model served before the agent starts, the key, and the errors users meet."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceOrigin, InstanceStatus, Preset
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.fakes.agent_recorder import install_agents, read_record
from tests.support.standins import keyring_env

MODEL = "launch-tiny"
KEY = "rh-launch-test-key-0123456789abcdef"
MASKED_KEY = "rh-l••••••••cdef"


@dataclass
class Env:
    daemon: DaemonProcess
    root: Path
    agents: Path
    tmp: Path

    def run(self, coro_fn: Callable[[DaemonClient], Any]) -> Any:
        async def main() -> Any:
            async with DaemonClient(self.daemon.url, self.daemon.token) as client:
                return await coro_fn(client)

        return asyncio.run(main())

    def launch(
        self, *args: str, path: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "roundhouse", "--home", str(self.root), "launch", *args]
        full = {**os.environ, "PATH": str(path or self.agents), **env}
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=full)

    def ours(self) -> list[Any]:
        listed = self.run(lambda c: c.instances()).instances
        return [i for i in listed if i.origin != InstanceOrigin.EXTERNAL]

    def stop_ours(self) -> None:
        async def stop(client: DaemonClient) -> None:
            for info in (await client.instances()).instances:
                if info.origin != InstanceOrigin.EXTERNAL:
                    await client.stop_instance(info.id)

        self.run(stop)


@pytest.fixture(scope="module")
def env(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("launch")
    models = tmp / "models"
    models.mkdir()
    shutil.copy(tiny_gguf, models / f"{MODEL}.gguf")
    root = tmp / "home"
    daemon = start_daemon(root, env={**path_with(llama_server_binary), **keyring_env(tmp)})
    agents = install_agents(tmp / "bin", "claude", "codex", "opencode")
    found = Env(daemon, root, agents, tmp)
    try:
        path = str(models / f"{MODEL}.gguf")
        # The SDK snippets ask for up to 1024 tokens: the whole context of the tiny model.
        options = InstanceOptions(model=path, ctx_size=2048, parallel=1)
        preset = Preset(engine=EngineId.LLAMA_CPP, model=path, options=options)
        found.run(lambda c: c.save_preset(preset))
        yield found
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def _claude_lines(root: str, key: str) -> list[str]:
    return [
        "unset ANTHROPIC_API_KEY",
        f"export ANTHROPIC_BASE_URL={root}",
        f"export ANTHROPIC_AUTH_TOKEN={shlex.quote(key)}",
        f"export ANTHROPIC_MODEL={MODEL}",
        f"export ANTHROPIC_DEFAULT_OPUS_MODEL={MODEL}",
        f"export ANTHROPIC_DEFAULT_SONNET_MODEL={MODEL}",
        f"export ANTHROPIC_DEFAULT_HAIKU_MODEL={MODEL}",
        f"export ANTHROPIC_SMALL_FAST_MODEL={MODEL}",
        "export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
    ]


def _codex_args(root: str) -> list[str]:
    return [
        "-c", 'model_provider="roundhouse"',
        "-c", 'model_providers.roundhouse.name="Roundhouse"',
        "-c", f'model_providers.roundhouse.base_url="{root}/v1"',
        "-c", 'model_providers.roundhouse.env_key="ROUNDHOUSE_API_KEY"',
        "-c", 'model_providers.roundhouse.wire_api="responses"',
        "-c", f'model="{MODEL}"',
    ]  # fmt: skip


def _opencode_config(root: str) -> dict[str, Any]:
    return {
        "model": f"roundhouse/{MODEL}",
        "small_model": f"roundhouse/{MODEL}",
        "provider": {
            "roundhouse": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Roundhouse",
                "options": {"baseURL": f"{root}/v1", "apiKey": "{env:ROUNDHOUSE_API_KEY}"},
                "models": {MODEL: {"name": MODEL}},
            }
        },
    }


def test_print_shows_each_agents_exact_environment_and_arguments(env: Env) -> None:
    env.stop_ours()
    root = env.daemon.url
    # No key set: the placeholder the gateway accepts on loopback, masked like a key.
    claude = env.launch("claude", MODEL, "--print")
    assert claude.returncode == 0, claude.stderr
    assert claude.stdout.splitlines() == [*_claude_lines(root, "••••••••"), "claude"]

    codex = env.launch("codex", MODEL, "--print", "--show-key", "--", "exec", "fix it")
    assert codex.returncode == 0, codex.stderr
    assert codex.stdout.splitlines() == [
        "export ROUNDHOUSE_API_KEY=roundhouse",
        shlex.join(["codex", *_codex_args(root), "exec", "fix it"]),
    ]

    opencode = env.launch("opencode", MODEL, "--print", "--show-key")
    assert opencode.returncode == 0, opencode.stderr
    first, config_line, command = opencode.stdout.splitlines()
    assert first == "export ROUNDHOUSE_API_KEY=roundhouse" and command == "opencode"
    name, _, value = shlex.split(config_line.removeprefix("export "))[0].partition("=")
    assert name == "OPENCODE_CONFIG_CONTENT" and json.loads(value) == _opencode_config(root)
    # A print starts nothing.
    assert env.ours() == []


def test_launch_serves_the_model_then_execs_the_agent_with_its_environment(env: Env) -> None:
    env.stop_ours()
    record = env.tmp / "claude.json"
    done = env.launch(
        "claude", MODEL, "--", "-p", "say hi",
        AGENT_RECORD=str(record), ANTHROPIC_API_KEY="sk-ant-not-for-the-gateway",
        KEPT_VARIABLE="yes", AGENT_EXIT="7",
    )  # fmt: skip
    # The agent's own exit status: it took the command's place.
    assert done.returncode == 7, done.stderr
    got = read_record(record)
    assert got["argv"][1:] == ["-p", "say hi"]  # type: ignore[index]
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in _claude_lines(env.daemon.url, "roundhouse")[1:]
    )
    assert got["env"] == {**exported, "KEPT_VARIABLE": "yes"}
    (instance,) = env.ours()
    assert instance.status == InstanceStatus.READY and instance.model.endswith(f"{MODEL}.gguf")

    # What the agent was given reaches the model through the gateway.
    base = got["env"]["ANTHROPIC_BASE_URL"]  # type: ignore[index]
    token = got["env"]["ANTHROPIC_AUTH_TOKEN"]  # type: ignore[index]
    reply = httpx.post(
        f"{base}/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}"},
        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text


def test_codex_and_opencode_get_their_arguments_and_config(env: Env) -> None:
    root = env.daemon.url
    record = env.tmp / "codex.json"
    done = env.launch("codex", MODEL, "--", "exec", "fix it", AGENT_RECORD=str(record))
    assert done.returncode == 0, done.stderr
    got = read_record(record)
    assert got["argv"][1:] == [*_codex_args(root), "exec", "fix it"]  # type: ignore[index]
    assert got["env"] == {"ROUNDHOUSE_API_KEY": "roundhouse"}

    record = env.tmp / "opencode.json"
    done = env.launch("opencode", MODEL, AGENT_RECORD=str(record))
    assert done.returncode == 0, done.stderr
    got = read_record(record)
    assert got["argv"][1:] == []  # type: ignore[index]
    config = json.loads(got["env"].pop("OPENCODE_CONFIG_CONTENT"))  # type: ignore[attr-defined]
    assert config == _opencode_config(root)
    assert got["env"] == {"ROUNDHOUSE_API_KEY": "roundhouse"}


def test_the_gateway_key_is_given_to_the_agent_and_masked_when_printed(env: Env) -> None:
    env.run(lambda c: c.set_gateway_key(KEY))
    try:
        printed = env.launch("codex", MODEL, "--print")
        assert printed.returncode == 0, printed.stderr
        assert (
            printed.stdout.splitlines()[0] == f"export ROUNDHOUSE_API_KEY={shlex.quote(MASKED_KEY)}"
        )
        assert KEY not in printed.stdout
        shown = env.launch("codex", MODEL, "--print", "--show-key")
        assert shown.stdout.splitlines()[0] == f"export ROUNDHOUSE_API_KEY={KEY}"

        record = env.tmp / "keyed.json"
        done = env.launch("claude", MODEL, AGENT_RECORD=str(record))
        assert done.returncode == 0, done.stderr
        token = read_record(record)["env"]["ANTHROPIC_AUTH_TOKEN"]  # type: ignore[index]
        assert token == KEY
        models = httpx.get(
            f"{env.daemon.url}/v1/models", headers={"Authorization": f"Bearer {token}"}
        )
        assert models.status_code == 200
        refused = httpx.get(
            f"{env.daemon.url}/v1/models", headers={"Authorization": "Bearer roundhouse"}
        )
        assert refused.status_code == 401
    finally:
        env.run(lambda c: c.clear_gateway_key())


def test_the_key_route_answers_only_the_control_token(env: Env) -> None:
    url = env.daemon.url + "/api/v1/gateway/key"
    env.run(lambda c: c.set_gateway_key(KEY))
    try:
        assert env.run(lambda c: c.gateway_key()) == KEY
        # The gateway key itself does not open the control API, and no web page gets it.
        assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}).status_code == 401
        hostile = httpx.get(
            url,
            headers={
                "Authorization": f"Bearer {env.daemon.token}",
                "Origin": "http://evil.example",
            },
        )
        assert hostile.status_code == 403 and KEY not in hostile.text
    finally:
        env.run(lambda c: c.clear_gateway_key())
    assert env.run(lambda c: c.gateway_key()) is None


def test_errors_say_what_to_do(env: Env) -> None:
    empty = env.tmp / "empty-bin"
    empty.mkdir(exist_ok=True)
    missing = env.launch("claude", MODEL, path=empty)
    assert missing.returncode == 1
    assert "Claude Code is not installed here (no `claude` on PATH)" in missing.stderr
    assert "npm install -g @anthropic-ai/claude-code" in missing.stderr

    unknown_agent = env.launch("aider", MODEL)
    assert unknown_agent.returncode == 2 and "claude, codex, opencode" in unknown_agent.stderr

    # An unknown model: the gateway's own words, before any agent starts.
    record = env.tmp / "never.json"
    unknown = env.launch("claude", "no-such-model", AGENT_RECORD=str(record))
    assert unknown.returncode == 1 and "no-such-model" in unknown.stderr, unknown.stderr
    assert not record.exists()
    printed = env.launch("claude", "no-such-model", "--print")
    assert printed.returncode == 1 and MODEL in printed.stderr and printed.stdout == ""


def test_the_model_defaults_to_the_active_model(env: Env) -> None:
    async def set_active(client: DaemonClient, model: str | None) -> None:
        settings = await client.settings()
        chat = settings.chat.model_copy(update={"active_model": model})
        await client.put_settings(settings.model_copy(update={"chat": chat}))

    async def stop_ours(client: DaemonClient) -> None:
        # A launch before served the model, and a running model is active when it is the
        # only one: with nothing running and nothing set, none is.
        for info in (await client.instances()).instances:
            if info.origin != InstanceOrigin.EXTERNAL:
                await client.stop_instance(info.id)

    env.run(stop_ours)
    env.run(lambda c: set_active(c, None))
    none = env.launch("codex", "--print")
    assert none.returncode == 2 and "No model named and no active model set" in none.stderr
    env.run(lambda c: set_active(c, MODEL))
    try:
        chosen = env.launch("codex", "--print")
        assert chosen.returncode == 0, chosen.stderr
        assert f'model="{MODEL}"' in chosen.stdout
    finally:
        env.run(lambda c: set_active(c, None))


def test_an_alias_and_the_default_model_are_names_launch_takes(env: Env) -> None:
    async def gateway(client: DaemonClient, **changes: Any) -> None:
        settings = await client.settings()
        new = settings.gateway.model_copy(update=changes)
        await client.put_settings(settings.model_copy(update={"gateway": new}))

    env.run(lambda c: gateway(c, aliases={"claude-sonnet-4-5": MODEL}))
    try:
        aliased = env.launch("claude", "claude-sonnet-4-5", "--print")
        assert aliased.returncode == 0, aliased.stderr
        assert "export ANTHROPIC_MODEL=claude-sonnet-4-5" in aliased.stdout.splitlines()
        # Any name goes once a default model stands in for unknown ones.
        refused = env.launch("codex", "gpt-5-codex", "--print")
        assert refused.returncode == 1 and "not one the gateway knows" in refused.stderr
        env.run(lambda c: gateway(c, default_model=MODEL))
        taken = env.launch("codex", "gpt-5-codex", "--print")
        assert taken.returncode == 0, taken.stderr
        assert taken.stdout.splitlines()[-1].endswith("""-c 'model="gpt-5-codex"'""")
    finally:
        env.run(lambda c: gateway(c, aliases={}, default_model=None))


@pytest.mark.parametrize("client_id", ["openai-python", "anthropic-python"])
def test_the_sdk_snippets_the_app_shows_run_against_the_gateway(env: Env, client_id: str) -> None:
    from roundhouse.api.clients import GatewayTarget, client_table, client_text

    env.run(lambda c: c.serve_model(MODEL))
    env.run(lambda c: c.set_gateway_key(KEY))
    try:
        target = GatewayTarget(root=env.daemon.url, key=KEY, model=MODEL)
        snippet = client_text(client_table()[client_id], target)
        done = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        wrong = snippet.replace(KEY, "rh-not-the-key-0123456789")
        refused = subprocess.run(
            [sys.executable, "-c", wrong], capture_output=True, text=True, timeout=120
        )
        assert refused.returncode == 1 and "401" in refused.stderr, refused.stderr
    finally:
        env.run(lambda c: c.clear_gateway_key())
