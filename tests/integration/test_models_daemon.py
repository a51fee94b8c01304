"""A model pulled from the Hub (stand-in) through the daemon is served by the real
llama-server, and the library refuses to delete it while an instance has it loaded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceStatus, StartRequest
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_ready
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import GGUF_REPO

Q8 = "tiny-llama-Q8_0.gguf"


async def _pull_serve_and_delete(daemon: DaemonProcess) -> None:
    async with DaemonClient(daemon.url, daemon.token) as client:
        await client.add_download(DownloadRequest(repo=GGUF_REPO, files=[Q8]))
        async for view in client.follow_downloads():
            (item,) = [i for i in view.items if i.path == Q8]
            if item.state not in {
                DownloadState.QUEUED,
                DownloadState.DOWNLOADING,
                DownloadState.VERIFYING,
            }:
                break
        assert item.state == DownloadState.DONE, item
        assert item.local_path is not None
        listing = await client.library()
        (entry,) = [m for m in listing.models if m.repo == GGUF_REPO and m.quantization == "Q8_0"]

        options = InstanceOptions(model=item.local_path, ctx_size=512, threads=1)
        info = await start_ready(daemon, StartRequest(engine=EngineId.LLAMA_CPP, options=options))
        assert info.status == InstanceStatus.READY, info
        try:
            with pytest.raises(ApiError) as refused:
                await client.delete_library_model(entry.id)
            assert refused.value.problem.status == 409
            assert "stop it first" in refused.value.problem.detail
            assert Path(item.local_path).exists()  # noqa: ASYNC240
        finally:
            await client.stop_instance(info.id)
        result = await client.delete_library_model(entry.id)
        assert result.executed and result.freed_bytes >= item.size
        assert not Path(item.local_path).exists()  # noqa: ASYNC240


def test_pulled_model_serves_and_is_not_deleted_while_loaded(
    fake_hub: HubStandin, llama_server_binary: Path, tmp_path: Path
) -> None:
    env = {
        **hub_env(fake_hub),
        **path_with(llama_server_binary),
        "HF_HUB_CACHE": str(tmp_path / "hf"),
        "HOME": str(tmp_path),
    }
    with running_daemon(tmp_path / "home", env=env) as daemon:
        asyncio.run(_pull_serve_and_delete(daemon))
