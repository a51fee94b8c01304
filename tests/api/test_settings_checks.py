"""What the daemon refuses when settings are saved (a models folder that does not exist or
cannot be written, a library folder that is not there, a control or gateway port another
program holds), what it honours (the models folder and library folders in the library's places), and
the free space it reports for a folder. Through a real daemon, the client and the CLI."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub.constants import HF_HUB_CACHE

from roundhouse.api.settings import Settings
from roundhouse.client import ApiError, DaemonClient
from tests.api.test_cli import roundhouse
from tests.daemon_process import DaemonProcess, running_daemon
from tests.processes import free_port


@pytest.fixture
def quiet_daemon(home_root: Path) -> Iterator[DaemonProcess]:
    # No Ollama answers at that port: the library lists only folders.
    with running_daemon(home_root, env={"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}) as process:
        yield process


def unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    # root writes anywhere, except where the kernel says no: a process's /proc folder.
    if Path("/proc/self").is_dir():
        return Path("/proc/self")
    pytest.skip("no folder root cannot write to")


async def refusal(client: DaemonClient, change: dict[str, object]) -> str:
    current = (await client.settings()).model_dump()
    for key, value in change.items():
        target = current
        *parents, leaf = key.split(".")
        for part in parents:
            target = target[part]
        target[leaf] = value
    with pytest.raises(ApiError) as info:
        await client.put_settings(Settings.model_validate(current))
    assert info.value.status == 422
    return info.value.problem.detail


def test_folders_and_ports_are_refused_in_words(
    quiet_daemon: DaemonProcess, tmp_path: Path
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x", encoding="utf-8")
    missing = tmp_path / "no such folder"
    locked = unwritable_folder(tmp_path)

    async def scenario() -> None:
        async with DaemonClient(quiet_daemon.url, quiet_daemon.token) as client:
            said = await refusal(client, {"models_dir": str(missing)})
            assert f"models_dir: {missing} does not exist" in said and "Create the folder" in said
            said = await refusal(client, {"models_dir": "models"})
            assert "give the full path" in said
            said = await refusal(client, {"models_dir": str(a_file)})
            assert "is a file, not a folder" in said
            said = await refusal(client, {"models_dir": str(locked)})
            assert "cannot write in" in said and "no permission" in said
            said = await refusal(client, {"models.library_folders": [str(tmp_path), str(missing)]})
            assert f"models.library_folders: {missing} does not exist" in said
            with socket.socket() as holder:
                holder.bind(("127.0.0.1", 0))
                holder.listen(1)
                taken = holder.getsockname()[1]
                said = await refusal(client, {"daemon.port": taken})
            assert f"daemon.port: Port {taken} on 127.0.0.1 is already taken" in said
            assert f"(pid {os.getpid()})" in said and "Pick another port" in said
            # Nothing refused was saved.
            assert await client.settings() == Settings()
            # The daemon's own port is free for its next start.
            own = int(quiet_daemon.url.rsplit(":", 1)[1])
            current = await client.settings()
            daemon = current.daemon.model_copy(update={"port": own})
            saved = await client.put_settings(current.model_copy(update={"daemon": daemon}))
            assert saved.daemon.port == own
            # The gateway's second address: not another program's port, nor the daemon's.
            with socket.socket() as holder:
                holder.bind(("127.0.0.1", 0))
                holder.listen(1)
                taken = holder.getsockname()[1]
                said = await refusal(
                    client, {"gateway.listen_host": "127.0.0.1", "gateway.listen_port": taken}
                )
            assert f"gateway.listen_port: Port {taken} on 127.0.0.1 is already taken" in said
            said = await refusal(
                client, {"gateway.listen_host": "127.0.0.1", "gateway.listen_port": own}
            )
            assert "is the daemon's own port" in said and "Pick another port" in said
            said = await refusal(
                client, {"gateway.listen_host": "192.0.2.1", "gateway.listen_port": free_port()}
            )
            assert "nothing can listen on 192.0.2.1" in said and "gateway.listen_host" in said
            assert (await client.settings()).gateway.listen_host is None

    asyncio.run(scenario())
    root = quiet_daemon.home.root or Path()
    cli = roundhouse(root, "settings", "set", "models_dir", str(missing))
    assert cli.returncode == 1 and "does not exist" in cli.stderr and "Traceback" not in cli.stderr
    port = free_port()
    cli = roundhouse(root, "settings", "set", "daemon.port", str(port))
    assert cli.returncode == 0, cli.stderr
    assert f"daemon.port = {port} (counts when the daemon restarts)" in cli.stdout


def test_models_folders_are_honoured_and_their_space_shown(
    quiet_daemon: DaemonProcess, tmp_path: Path, tiny_gguf: Path
) -> None:
    models_dir, folder = tmp_path / "models", tmp_path / "my ggufs"
    models_dir.mkdir()
    folder.mkdir()
    shutil.copy(tiny_gguf, folder / "tiny.gguf")
    root = quiet_daemon.home.root or Path()

    for key, value in (("models_dir", str(models_dir)), ("models.library_folders", str(folder))):
        cli = roundhouse(root, "settings", "set", key, value)
        assert cli.returncode == 0, cli.stderr

    async def scenario() -> None:
        async with DaemonClient(quiet_daemon.url, quiet_daemon.token) as client:
            listing = await client.library()
            places = {p.source.value: p.location for p in listing.places if p.available}
            assert places["hf_cache"] == str(models_dir), listing.places
            assert str(folder) in {p.location for p in listing.places}
            assert any(m.path == str(folder / "tiny.gguf") for m in listing.models)

            disk = await client.disk_space(str(models_dir / "not yet made"))
            usage = shutil.disk_usage(models_dir)
            assert disk.path == str(models_dir / "not yet made")
            assert disk.total_bytes == usage.total and 0 < disk.free_bytes <= usage.total
            default = await client.disk_space("")
            assert default.path == HF_HUB_CACHE, "empty is the Hugging Face cache"
            with pytest.raises(ApiError, match="full path"):
                await client.disk_space("relative/folder")

    asyncio.run(scenario())
