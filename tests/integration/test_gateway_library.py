"""Every library model runs by name, no preset needed: the real llama-server on the tiny
GGUF found in a library folder, started on its first request with settings the fit estimate
chose (and says why); aliases, a default for unknown names, their checks; `roundhouse run`
and `chat` on a library model; and the 80-column tables that never cut an id."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import ollama
import pytest
from openai import OpenAI

from roundhouse.api.settings import GatewaySettings, ModelsSettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.core.gateway.library import CHOSEN_AT_START
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import DaemonProcess, path_with, start_daemon
from tests.support import cli

# Long enough that an 80-column table would have to cut it, were the layout not fixed.
FIRST = "tiny-library-model-with-a-long-name-q8"
SECOND = "tiny-second"
WORDS = "HELLO"


@dataclass
class Library:
    daemon: DaemonProcess
    root: Path
    folder: Path


@pytest.fixture(scope="module")
def library(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Library]:
    base = tmp_path_factory.mktemp("library")
    folder = base / "models"
    folder.mkdir()
    # Two models in a library folder, with no preset saved for either.
    shutil.copy(tiny_gguf, folder / f"{FIRST}.gguf")
    shutil.copy(tiny_gguf, folder / f"{SECOND}.gguf")
    root = base / "home"
    settings = Settings(
        models_dir=str(base / "hf"),
        models=ModelsSettings(library_folders=[str(folder)]),
        gateway=GatewaySettings(idle_ttl_s=0),
    )
    save_settings(resolve_home(root).settings_file, settings)
    env = {**path_with(llama_server_binary), "HF_HUB_CACHE": str(base / "hf")}
    daemon = start_daemon(root, env=env)
    try:
        yield Library(daemon, root, folder)
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def _openai(daemon: DaemonProcess) -> OpenAI:
    return OpenAI(base_url=daemon.url + "/v1", api_key=daemon.token, timeout=120)


def _models(daemon: DaemonProcess) -> dict[str, dict[str, Any]]:
    listed = _openai(daemon).models.list()
    return {m.id: m.model_dump() for m in listed.data}


def _chat(daemon: DaemonProcess, model: str) -> httpx.Response:
    return httpx.post(
        daemon.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {daemon.token}"},
        json={"model": model, "messages": [{"role": "user", "content": WORDS}], "max_tokens": 2},
        timeout=120,
    )


def _cli(lib: Library, *args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(lib.root, *args, columns=columns, stdin=subprocess.DEVNULL, no_color=True)


def _set(lib: Library, **gateway: Any) -> Settings:
    async def put() -> Settings:
        async with DaemonClient(lib.daemon.url, lib.daemon.token) as client:
            current = await client.settings()
            new = current.model_copy(update={"gateway": current.gateway.model_copy(update=gateway)})
            return await client.put_settings(new)

    return asyncio.run(put())


def test_a_library_model_with_no_preset_is_listed_and_served_by_name(library: Library) -> None:
    listed = _models(library.daemon)
    entry = listed[FIRST]["roundhouse"]
    assert entry["state"] == "startable" and entry["engine"] == "llama.cpp"
    assert entry["preset"] is None and entry["launch"] == CHOSEN_AT_START
    # Never a path: every id is a name a client can type.
    assert not any(name.startswith("/") for name in listed)

    reply = _chat(library.daemon, FIRST)
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-model"] == FIRST
    assert "x-roundhouse-model-via" not in reply.headers
    instance = reply.headers["x-roundhouse-instance"]

    served = _models(library.daemon)[FIRST]["roundhouse"]
    assert served["state"] == "serving" and served["instance"] == instance
    words = served["launch"]
    # What was chosen (engine, context, layers) and why (the estimate's own summary).
    assert words.startswith("llama.cpp, a ") and "-token context" in words
    assert "chosen by the fit estimate" in words and "preset" in words
    assert "CPU" in words or "GPU" in words

    async def info() -> Any:
        async with DaemonClient(library.daemon.url, library.daemon.token) as client:
            return await client.instance(instance)

    started = asyncio.run(info())
    assert started.launch_note == words
    assert started.options.ctx_size and started.options.served_name == FIRST
    assert f"-c {started.options.ctx_size}" in " ".join(started.argv)
    # The file's path is still a name for it: the same instance answers, nothing restarts.
    again = _chat(library.daemon, str(library.folder / f"{FIRST}.gguf"))
    assert again.status_code == 200, again.text
    assert again.headers["x-roundhouse-instance"] == instance

    # So is its library id: the request is routed by the model's id, to the same instance.
    async def library_id() -> str:
        async with DaemonClient(library.daemon.url, library.daemon.token) as client:
            listing = await client.library()
        return next(m.id for m in listing.models if m.served_id == FIRST)

    by_key = _chat(library.daemon, asyncio.run(library_id()))
    assert by_key.status_code == 200, by_key.text
    assert by_key.headers["x-roundhouse-instance"] == instance
    assert by_key.headers["x-roundhouse-model"] == FIRST


def test_an_alias_and_an_unknown_name_with_and_without_a_default(library: Library) -> None:
    _set(library, aliases={"claude-sonnet-4-5": FIRST}, default_model=None)
    try:
        aliased = _chat(library.daemon, "claude-sonnet-4-5")
        assert aliased.status_code == 200, aliased.text
        assert aliased.headers["x-roundhouse-model"] == FIRST
        assert aliased.headers["x-roundhouse-model-via"] == "alias"
        listed = _models(library.daemon)["claude-sonnet-4-5"]["roundhouse"]
        assert listed["alias_of"] == FIRST and listed["engine"] == "llama.cpp"

        unknown = _chat(library.daemon, "gpt-9-unknown")
        assert unknown.status_code == 404, unknown.text
        message = unknown.json()["error"]["message"]
        assert "gpt-9-unknown" in message and "roundhouse gateway default" in message

        _set(library, default_model=FIRST)
        defaulted = _chat(library.daemon, "gpt-9-unknown")
        assert defaulted.status_code == 200, defaulted.text
        assert defaulted.headers["x-roundhouse-model"] == FIRST
        assert defaulted.headers["x-roundhouse-model-via"] == "default"
    finally:
        _set(library, aliases={}, default_model=None)


def test_bad_aliases_are_refused_in_words_and_nothing_is_saved(library: Library) -> None:
    def refused(aliases: dict[str, str]) -> str:
        url = library.daemon.url + "/api/v1/settings"
        auth = {"authorization": f"Bearer {library.daemon.token}"}
        current = httpx.get(url, headers=auth).json()
        body = {**current, "gateway": {**current["gateway"], "aliases": aliases}}
        reply = httpx.put(url, headers=auth, json=body)
        assert reply.status_code == 422, reply.text
        assert httpx.get(url, headers=auth).json() == current  # nothing saved
        return reply.text

    # An alias named like a model the gateway serves would take its requests.
    said = refused({SECOND: FIRST})
    assert "is the id of a model the gateway serves" in said and "another name" in said
    said = refused({"a": "b", "b": FIRST})
    assert "which is an alias itself" in said
    said = refused({"loop": "loop"})
    assert "points at itself" in said
    said = refused({"two words": FIRST})
    assert "spaces" in said


def test_the_cli_manages_aliases_and_the_default(library: Library) -> None:
    added = _cli(library, "gateway", "alias", "add", "gpt-4o", FIRST)
    assert added.returncode == 0, added.stderr
    listed = json.loads(_cli(library, "gateway", "alias", "ls", "--json").stdout)
    assert listed["aliases"] == {"gpt-4o": FIRST}
    bad = _cli(library, "gateway", "alias", "add", SECOND, FIRST)
    assert bad.returncode == 1 and "another name" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert _cli(library, "gateway", "default", FIRST).returncode == 0
    assert FIRST in _cli(library, "gateway", "default").stdout
    assert _cli(library, "gateway", "alias", "rm", "gpt-4o").returncode == 0
    missing = _cli(library, "gateway", "alias", "rm", "gpt-4o")
    assert missing.returncode == 2 and "no alias 'gpt-4o'" in missing.stderr
    assert _cli(library, "gateway", "default", "--clear").returncode == 0
    final = json.loads(_cli(library, "gateway", "alias", "ls", "--json").stdout)
    assert final == {"aliases": {}, "default_model": None}


def test_run_and_chat_start_a_library_model_with_no_preset(library: Library) -> None:
    ran = _cli(library, "run", SECOND)
    assert ran.returncode == 0, ran.stderr
    assert f"Serving {SECOND}" in ran.stdout
    assert "Settings: llama.cpp" in ran.stdout and "fit estimate" in ran.stdout
    chat = _cli(library, "chat", FIRST, "--prompt", "hi", "--max-tokens", "3", "--no-save")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip()


def test_tables_at_80_columns_never_cut_an_id(library: Library) -> None:
    assert _chat(library.daemon, FIRST).status_code == 200
    for args in (("models", "ls"), ("gateway", "models"), ("engines", "ps")):
        shown = _cli(library, *args, columns=80)
        assert shown.returncode == 0, shown.stderr
        assert all(len(line) <= 80 for line in shown.stdout.splitlines()), shown.stdout
        assert FIRST in shown.stdout, shown.stdout
    listing = _cli(library, "models", "ls", columns=80).stdout
    assert SECOND in listing


def test_other_apis_list_and_serve_library_models_and_aliases(library: Library) -> None:
    _set(library, aliases={"llama3": SECOND})
    try:
        tags = {m.model for m in ollama.Client(host=library.daemon.url, timeout=60).list().models}
        assert {FIRST, SECOND, "llama3"} <= tags, tags
        # Ollama's chat by an alias of a library model: started if it must be, answered.
        reply = ollama.Client(host=library.daemon.url, timeout=120).chat(
            model="llama3",
            messages=[{"role": "user", "content": WORDS}],
            options={"num_predict": 2},
        )
        assert reply.done and reply.message.role == "assistant"
        # Anthropic's Messages by the library model's id.
        client = anthropic.Anthropic(
            base_url=library.daemon.url, api_key="unused", max_retries=0, timeout=120
        )
        raw = client.messages.with_raw_response.create(
            model=FIRST, max_tokens=2, messages=[{"role": "user", "content": WORDS}]
        )
        assert raw.headers["x-roundhouse-model"] == FIRST
        assert raw.parse().type == "message"
    finally:
        _set(library, aliases={})
