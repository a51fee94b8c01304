"""The download queue end to end against the fake Hub run as a process (tests/fakes/hub):
real huggingface_hub metadata, LFS files redirected to its CDN listener, its faults."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from huggingface_hub import hf_hub_download, scan_cache_dir

from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.models.downloads import GatedRepoError
from tests.fakes.hub import HubStandin
from tests.fakes.hub.build import ACCESS_TOKEN, GATED_REPO, GGUF_REPO
from tests.unit.models.test_downloads_server import Rig, wait_state

Q4 = "tiny-llama-Q4_K_M.gguf"


def _rig(fake_hub: HubStandin, home_root: Path, token: str | None = None) -> Rig:
    # No stand-in in the thread: the fake Hub process serves everything.
    return Rig(None, home_root, token=token, endpoint=fake_hub.base_url)  # type: ignore[arg-type]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_gguf_arrives_through_the_cdn_and_resumes_after_a_stall(
    fake_hub: HubStandin, home_root: Path
) -> None:
    # A stall, not a dropped connection: aiohttp drops what it holds unread when a body is
    # cut short, so the resume point after a drop may be earlier (never wrong).
    fake_hub.set_faults({"path": Q4, "stall_after": 100_000, "stall_s": 3.0, "times": 1})
    rig = _rig(fake_hub, home_root, token=ACCESS_TOKEN)
    rig.settings = ModelsSettings(stall_timeout_s=0.5)

    async def body() -> str:
        service = rig.service()
        await service.start()
        items = await service.add(DownloadRequest(repo=GGUF_REPO, files=[Q4, "README.md"]))
        for item in items:
            await wait_state(service, item.id, DownloadState.DONE)
        await service.close()
        return items[0].sha256 or ""

    expected = asyncio.run(body())
    found = Path(hf_hub_download(GGUF_REPO, Q4, cache_dir=rig.cache, local_files_only=True))
    assert _sha256(found) == expected
    (repo,) = scan_cache_dir(rig.cache).repos
    assert repo.repo_id == GGUF_REPO and repo.nb_files == 2
    cdn = [r for r in fake_hub.requests(server="cdn") if r["method"] == "GET"]
    assert len(cdn) == 2  # stalled once, then resumed
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in cdn]
    assert "range" not in headers[0] and headers[1]["range"] == "bytes=100000-"
    assert all("authorization" not in h for h in headers)  # the token stays with the Hub
    hub_gets = [
        {k.lower(): v for k, v in r["headers"].items()}
        for r in fake_hub.requests(server="hub")
        if r["method"] == "GET" and "/resolve/" in r["path"]
    ]
    assert hub_gets and all(h["authorization"] == f"Bearer {ACCESS_TOKEN}" for h in hub_gets)


def test_a_corrupted_file_from_the_cdn_is_quarantined(
    fake_hub: HubStandin, home_root: Path
) -> None:
    fake_hub.set_faults({"path": Q4, "corrupt": True})
    rig = _rig(fake_hub, home_root)

    async def body() -> None:
        service = rig.service()
        await service.start()
        (item,) = await service.add(DownloadRequest(repo=GGUF_REPO, files=[Q4]))
        bad = await wait_state(service, item.id, DownloadState.QUARANTINED)
        assert bad.quarantine_path is not None and "sha256" in (bad.error or "")
        await service.close()

    asyncio.run(body())
    assert len(list((rig.data_dir / "quarantine").iterdir())) == 1


def test_gated_repos_need_the_token(fake_hub: HubStandin, home_root: Path) -> None:
    async def body(token: str | None) -> DownloadState:
        service = _rig(fake_hub, home_root, token=token).service()
        await service.start()
        try:
            (item,) = await service.add(DownloadRequest(repo=GATED_REPO, files=[Q4]))
            return (await wait_state(service, item.id, DownloadState.DONE)).state
        finally:
            await service.close()

    with pytest.raises(GatedRepoError, match="accept its terms"):
        asyncio.run(body(None))
    assert asyncio.run(body(ACCESS_TOKEN)) == DownloadState.DONE


def test_a_dropped_connection_is_resumed(fake_hub: HubStandin, home_root: Path) -> None:
    fake_hub.set_faults({"path": Q4, "drop_after": 200_000, "times": 2})
    rig = _rig(fake_hub, home_root)

    async def body() -> str:
        service = rig.service()
        await service.start()
        (item,) = await service.add(DownloadRequest(repo=GGUF_REPO, files=[Q4]))
        done = await wait_state(service, item.id, DownloadState.DONE)
        await service.close()
        return done.local_path or ""

    assert _sha256(Path(asyncio.run(body()))) == _sha256(fake_hub.repos / GGUF_REPO / Q4)
    assert rig.sleeps == [1.0, 2.0]  # two drops in a row, then the whole rest
