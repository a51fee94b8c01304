"""`roundhouse setup` against a real daemon, the real llama-server and the Hub stand-in serving
the starters under the catalog's own names: --yes walks every step to a chat reply; run again
offline it downloads nothing; without a terminal it explains; Ollama missing is said so."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.starters import ServeStarterRequest
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.hub import HubStandin
from tests.fakes.hub.starter_repos import starter_env, starter_gguf_repos, starter_hub
from tests.fakes.releases.server import ReleaseServer
from tests.support import cli

LARGEST_REPO, LARGEST_FILE, _ = starter_gguf_repos()[-1]
# starter_hub is a session fixture: imported so that pytest finds it for this module.
__all__ = ["starter_hub"]


@pytest.fixture
def env(starter_hub: HubStandin, llama_server_binary: Path, tmp_path: Path) -> dict[str, str]:
    return starter_env(starter_hub, llama_server_binary, tmp_path)


@pytest.fixture
def daemon(home_root: Path, env: dict[str, str]) -> Iterator[DaemonProcess]:
    with running_daemon(home_root, env=env) as process:
        yield process


def setup(
    home: Path, env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(
        home,
        "setup",
        *args,
        input=stdin,
        stdin=subprocess.DEVNULL,
        env=env,
        no_color=True,
        timeout=180,
    )


async def _settings_and_chats(daemon: DaemonProcess) -> tuple[dict[str, object], int]:
    async with DaemonClient(daemon.url, daemon.token) as client:
        settings = await client.settings()
        chats = await client.chats()
    return json.loads(settings.model_dump_json()), len(chats.conversations)


def test_setup_yes_walks_to_a_chat_reply_then_runs_offline_without_downloading(
    daemon: DaemonProcess, home_root: Path, env: dict[str, str], starter_hub: HubStandin
) -> None:
    done = setup(home_root, env, "--yes", "--ctx-size", "512", "--max-tokens", "8")
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout
    for step in ("Step 1 of 4", "Step 2 of 4", "Step 3 of 4", "Step 4 of 4", "All set."):
        assert step in out, out
    assert "llama.cpp (CPU)" in out or "llama.cpp (" in out
    assert "Llama 3.1 8B Instruct is the largest starter that runs comfortably here" in out
    # The catalog's own file was downloaded from the stand-in into the Hugging Face cache.
    snapshot = Path(env["HF_HOME"]) / "hub" / f"models--{LARGEST_REPO.replace('/', '--')}"
    files = list(snapshot.glob(f"snapshots/*/{LARGEST_FILE}"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    gets = [r for r in starter_hub.requests() if r["method"] == "GET" and LARGEST_FILE in r["path"]]
    assert gets, "the file was not fetched from the Hub stand-in"
    assert "You: Hello! In one sentence" in out
    # The reply's figures come on stderr: tokens were generated.
    assert "tokens" in done.stderr and "llama.cpp" in done.stderr
    settings, chats = asyncio.run(_settings_and_chats(daemon))
    assert settings["ui"]["first_run_done"] is True  # type: ignore[index]
    served = LARGEST_FILE.removesuffix(".gguf")
    assert settings["chat"]["active_model"] == served  # type: ignore[index]
    assert chats == 1

    # Again, offline: the model is on this machine, so nothing is downloaded.
    starter_hub.clear_requests()
    again = setup(home_root, env, "--yes", "--offline", "--prompt", "Hi", "--max-tokens", "4")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "Offline: Working offline" in again.stdout
    assert "Already on this machine" in again.stdout
    assert "You: Hi" in again.stdout
    assert not starter_hub.requests(), "offline, the Hub must not be asked"


def test_without_a_terminal_and_without_yes_it_explains(
    daemon: DaemonProcess, home_root: Path, env: dict[str, str], starter_hub: HubStandin
) -> None:
    starter_hub.clear_requests()
    refused = setup(home_root, env)
    assert refused.returncode == 2
    assert "there is no terminal to ask on" in refused.stderr
    assert "roundhouse setup --yes" in refused.stderr
    assert not starter_hub.requests()


def test_answering_no_downloads_nothing(
    daemon: DaemonProcess, home_root: Path, env: dict[str, str]
) -> None:
    # Piped answers stand in for a person at a terminal: the guide asks, and "n" is final.
    script = (
        "import sys\n"
        "sys.stdin.isatty = lambda: True\n"
        "from roundhouse.cli.launch import main\n"
        "sys.exit(main())\n"
    )
    argv = [sys.executable, "-c", script, "--home", str(home_root), "setup", "--no-chat"]
    done = subprocess.run(
        argv,
        input="4\nn\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert done.returncode == 1, done.stderr + done.stdout
    assert "Which model?" in done.stdout and "Download Llama 3.1 8B Instruct" in done.stdout
    assert "Nothing was downloaded" in done.stderr
    assert not list(Path(env["HF_HOME"]).glob("hub/models--*/snapshots/*/*.gguf"))


def test_ollama_not_installed_says_where_to_get_it(
    daemon: DaemonProcess, home_root: Path, env: dict[str, str]
) -> None:
    done = setup(home_root, env, "--yes", "--engine", "ollama")
    assert done.returncode == 1
    assert "Ollama is not installed" in done.stderr
    assert "https://ollama.com/download" in done.stderr


def test_the_routes_refuse_in_words(daemon: DaemonProcess, tmp_path: Path) -> None:
    async def ask() -> tuple[ApiError, ApiError]:
        async with DaemonClient(daemon.url, daemon.token) as client:
            with pytest.raises(ApiError) as vllm:
                await client.starters("vllm")
            missing = ServeStarterRequest(engine=EngineId.LLAMA_CPP, model=str(tmp_path / "x.gguf"))
            with pytest.raises(ApiError) as served:
                await client.serve_starter(missing)
            assert (await client.presets()).presets == [], "a refused serve saved a preset"
        return vllm.value, served.value

    vllm, served = asyncio.run(ask())
    assert vllm.problem.status == 422 and "The guide sets up llama.cpp, mlx, ollama" in str(vllm)
    assert served.problem.status == 404 and "download the model first" in str(served)


@pytest.mark.skipif(sys.platform != "linux", reason="the fake llama.cpp builds are Linux scripts")
def test_a_missing_engine_is_installed_with_its_cost_said_first(
    starter_hub: HubStandin, tmp_path: Path
) -> None:
    with ReleaseServer() as releases:
        env = {
            **starter_env(starter_hub, None, tmp_path),
            "ROUNDHOUSE_LLAMACPP_RELEASES_URL": releases.releases_url,
            # No llama-server on PATH: only what the install brings is found.
            "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
        }
        home = tmp_path / "home"
        with running_daemon(home, env=env):
            done = setup(home, env, "--yes", "--no-chat", "--model", "qwen2.5-0.5b")
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout
    assert "Roundhouse installs it" in out and "official build" in out
    assert "Costs 38.1 MiB to download, 114.4 MiB on disk, about 1 min." in out
    assert "✓ Installed llama.cpp" in out
    assert "Downloaded to" in out and "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf" in out
    assert "Set up." in out


def test_offline_with_nothing_downloaded_says_how_to_go_on(
    daemon: DaemonProcess, home_root: Path, env: dict[str, str]
) -> None:
    done = setup(home_root, env, "--yes", "--offline")
    assert done.returncode == 1, done.stdout
    assert "not on this machine (needs the Hub)" in done.stdout
    # Each way on: a file, a folder, or the starters once connected.
    said = done.stderr
    assert "Import a model file" in said and "add a folder of models" in said, said
    assert "connect to the internet" in said, said
