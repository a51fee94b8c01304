"""`roundhouse models search|info|token` against a real daemon whose Hugging Face is the local
Hub stand-in (the real huggingface_hub client in the daemon) and whose keyring is a file."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.test_gateway_cli import roundhouse
from tests.daemon_process import DaemonProcess, running_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import ACCESS_TOKEN, GATED_REPO, GGUF_REPO, MLX_REPO, OTHER_REPO
from tests.processes import free_port
from tests.support.standins import keyring_env


@pytest.fixture(scope="module")
def hub_daemon(
    fake_hub_session: HubStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DaemonProcess]:
    folder = tmp_path_factory.mktemp("models-cli")
    (folder / "user").mkdir()
    env = {
        **keyring_env(folder),
        **hub_env(fake_hub_session),
        # The daemon's Hugging Face cache and user folder (LM Studio's models) are the test's.
        "HF_HUB_CACHE": str(folder / "hf cache кэш"),
        "HOME": str(folder / "user"),
    }
    with running_daemon(folder / "home", env=env) as process:
        yield process


def test_search_filters_by_kind_and_sorts(hub_daemon: DaemonProcess) -> None:
    done = roundhouse(hub_daemon, "models", "search", "tiny", "--json")
    assert done.returncode == 0, done.stderr
    ids = [m["id"] for m in json.loads(done.stdout)["models"]]
    assert GGUF_REPO in ids and MLX_REPO in ids
    assert OTHER_REPO not in ids  # an embedder: nothing local engines generate text with

    gguf_only = roundhouse(hub_daemon, "models", "search", "tiny", "--kind", "gguf", "--json")
    kinds = [m["kinds"] for m in json.loads(gguf_only.stdout)["models"]]
    assert kinds and all("gguf" in k for k in kinds)

    table = roundhouse(hub_daemon, "models", "search", "tiny")
    assert table.returncode == 0 and GGUF_REPO in table.stdout


def test_info_groups_files_by_quantization(hub_daemon: DaemonProcess) -> None:
    done = roundhouse(hub_daemon, "models", "info", GGUF_REPO, "--json")
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    names = [g["name"] for g in page["groups"]]
    assert "Q4_K_M" in names and "Q8_0" in names and "F16" in names
    split = next(g for g in page["groups"] if g["name"] == "F16")
    assert split["shards"] == 2 and split["size"] == sum(f["size"] for f in split["files"])

    shown = roundhouse(hub_daemon, "models", "info", GGUF_REPO)
    assert "Q4_K_M" in shown.stdout and "2 parts" in shown.stdout


def test_unknown_model_is_a_clear_error(hub_daemon: DaemonProcess) -> None:
    done = roundhouse(hub_daemon, "models", "info", "nobody/no-such-model")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "nobody/no-such-model" in done.stderr


def test_token_opens_a_gated_model(hub_daemon: DaemonProcess) -> None:
    roundhouse(hub_daemon, "models", "token", "--clear")
    status = json.loads(roundhouse(hub_daemon, "models", "token", "--json").stdout)
    assert status["present"] is False

    bad = roundhouse(hub_daemon, "models", "token", "--set", stdin="hf_notAToken0000000000\n")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr

    good = roundhouse(hub_daemon, "models", "token", "--set", stdin=ACCESS_TOKEN + "\n")
    assert good.returncode == 0, good.stderr
    checked = json.loads(roundhouse(hub_daemon, "models", "token", "--check", "--json").stdout)
    assert checked["present"] and checked["valid"] is True
    # The token never comes back from the daemon.
    assert ACCESS_TOKEN not in json.dumps(checked)

    page = roundhouse(hub_daemon, "models", "info", GATED_REPO, "--json")
    assert page.returncode == 0, page.stderr
    assert json.loads(page.stdout)["gated"] is True
    roundhouse(hub_daemon, "models", "token", "--clear")


def test_pull_lands_in_the_hf_cache_and_the_library_lists_it(
    hub_daemon: DaemonProcess, fake_hub: HubStandin
) -> None:
    done = roundhouse(hub_daemon, "models", "pull", GGUF_REPO, "q8_0")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "tiny-llama-Q8_0.gguf" in done.stdout
    assert "Q8_0:" in done.stdout  # the fit estimate, said before the download

    queue = json.loads(roundhouse(hub_daemon, "models", "downloads", "--json").stdout)
    item = next(i for i in queue["items"] if i["path"] == "tiny-llama-Q8_0.gguf")
    assert item["state"] == "done" and item["bytes_done"] == item["size"]
    local = Path(item["local_path"])
    # The Hugging Face layout: a snapshot link to a blob named by the sha256.
    assert local.parent.parent.name == "snapshots" or "snapshots" in local.parts
    assert hashlib.sha256(local.read_bytes()).hexdigest() == item["sha256"]

    listing = json.loads(roundhouse(hub_daemon, "models", "ls", "--json").stdout)
    entry = next(m for m in listing["models"] if m["repo"] == GGUF_REPO)
    assert entry["format"] == "gguf" and entry["quantization"] == "Q8_0"
    assert "llama.cpp" in entry["engines"]

    dry = json.loads(
        roundhouse(hub_daemon, "models", "rm", entry["id"], "--dry-run", "--json").stdout
    )
    assert dry["executed"] is False and dry["freed_bytes"] >= item["size"]
    assert local.exists()
    gone = json.loads(roundhouse(hub_daemon, "models", "rm", entry["id"], "--yes", "--json").stdout)
    assert gone["executed"] and gone["freed_bytes"] == dry["freed_bytes"]
    assert not local.exists()


def test_pull_of_an_unknown_choice_names_the_choices(hub_daemon: DaemonProcess) -> None:
    done = roundhouse(hub_daemon, "models", "pull", GGUF_REPO, "Q3_K_S")
    assert done.returncode == 2
    assert "Q4_K_M" in done.stderr and "Traceback" not in done.stderr


def test_fit_before_download_and_for_a_library_model(hub_daemon: DaemonProcess) -> None:
    # Sized from the GGUF header over HTTP Range: nothing is downloaded.
    done = roundhouse(hub_daemon, "models", "fit", GGUF_REPO, "Q8_0", "--ctx", "512", "--json")
    assert done.returncode == 0, done.stderr
    fit = json.loads(done.stdout)
    assert fit["group"] == "Q8_0"
    report = fit["report"]
    # This machine: no GPU in CI, so the tiny model runs on the CPU.
    assert report["verdict"] in {"full_gpu", "cpu_only"}
    assert report["weights_bytes"] > 0 and report["kv_bytes"] > 0
    assert report["context_length"] == 512
    shown = roundhouse(hub_daemon, "models", "fit", GGUF_REPO)
    assert shown.returncode == 0 and "Memory per device" in shown.stdout

    assert roundhouse(hub_daemon, "models", "pull", GGUF_REPO, "Q4_K_M").returncode == 0
    listing = json.loads(roundhouse(hub_daemon, "models", "ls", "--json").stdout)
    entry = next(m for m in listing["models"] if m["quantization"] == "Q4_K_M")
    local = json.loads(
        roundhouse(hub_daemon, "models", "fit", "--library", entry["id"], "--json").stdout
    )
    assert local["report"]["weights_bytes"] > 0

    both = roundhouse(hub_daemon, "models", "fit", GGUF_REPO, "--library", entry["id"])
    assert both.returncode == 2 and "repo" in both.stderr


def test_search_with_no_connection_says_so_at_once(tmp_path: Path) -> None:
    # Nothing listens at the Hub's address: refused at once, not after the 15 s deadline.
    env = {**keyring_env(tmp_path), "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    with running_daemon(tmp_path / "home", env=env) as daemon:
        started = time.monotonic()
        done = roundhouse(daemon, "models", "search", "qwen")
        took = time.monotonic() - started
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "Hugging Face cannot be reached" in said and "refused the connection" in said, said
    assert "Errno" not in said
    assert took < 8.0  # the CLI's own start counts too; the daemon answers in milliseconds
