"""Ollama pulls in the daemon's download queue, against the Ollama stand-in (a real process):
queue, progress in the queue's view, pause, resume, done; a daemon restart mid-pull goes
on; errors in words; and the CLI's `models pull ollama:NAME` and `models downloads`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from roundhouse.api.downloads import DownloadState, OllamaDownloadRequest, OllamaPullItem
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, running_daemon, start_daemon
from tests.fakes.ollama import OllamaStandin, start_standin
from tests.processes import free_port

# "small" is 24 KiB of weights in 1 KiB steps: about 5 s at this delay, long enough to act.
SLOW_PULL = ("--pull-delay", "0.2")


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[OllamaStandin]:
    ollama = start_standin(tmp_path / "ollama", free_port(), *SLOW_PULL)
    try:
        yield ollama
    finally:
        ollama.stop()


def ollama_env(standin: OllamaStandin) -> dict[str, str]:
    return {"OLLAMA_HOST": f"127.0.0.1:{standin.port}"}


async def wait_pull(
    client: DaemonClient,
    item_id: str,
    wanted: Callable[[OllamaPullItem], bool],
    timeout_s: float = 20.0,
) -> OllamaPullItem:
    """Follow the queue until the pull matches `wanted`; fail with the last seen after
    `timeout_s`."""
    last: OllamaPullItem | None = None

    async def follow() -> OllamaPullItem:
        nonlocal last
        async for view in client.follow_downloads():
            for item in view.ollama:
                if item.id == item_id:
                    last = item
                    if wanted(item):
                        return item
        raise AssertionError("the queue's stream ended")

    try:
        return await asyncio.wait_for(follow(), timeout_s)
    except TimeoutError:
        raise AssertionError(f"not reached in {timeout_s:g} s; last seen: {last}") from None


def pulling(item: OllamaPullItem) -> bool:
    return item.state == DownloadState.DOWNLOADING and 0 < item.bytes_done < item.size


def test_queue_progress_pause_resume_done(tmp_path: Path, standin: OllamaStandin) -> None:
    with running_daemon(tmp_path / "home", env=ollama_env(standin)) as daemon:

        async def main() -> None:
            async with DaemonClient(daemon.url, daemon.token) as client:
                item = await client.add_ollama_pull(OllamaDownloadRequest(model="small"))
                assert item.id.startswith("ollama-") and item.base_url == standin.base_url
                seen = await wait_pull(client, item.id, pulling)
                assert seen.status.startswith("pulling") and seen.layers >= 1
                # Asked again while it runs: the same job, not a second pull.
                again = await client.add_ollama_pull(OllamaDownloadRequest(model="small"))
                assert again.id == item.id

                paused = await client.pause_download(item.id)
                assert isinstance(paused, OllamaPullItem)
                assert paused.state == DownloadState.PAUSED and paused.bytes_done > 0
                assert paused.note and "keeps" in paused.note
                await asyncio.sleep(0.6)
                still = await client.download(item.id)
                assert still.state == DownloadState.PAUSED
                assert still.bytes_done == paused.bytes_done

                resumed = await client.resume_download(item.id)
                assert resumed.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)
                # Ollama continues from its partial layers: never below what it had.
                moving = await wait_pull(client, item.id, pulling)
                assert moving.bytes_done >= paused.bytes_done
                done = await wait_pull(client, item.id, lambda i: i.state == DownloadState.DONE)
                assert done.bytes_done == done.size > 0 and done.error is None

                names = [m.name for m in (await client.ollama_models()).models]
                assert names == ["small:latest"]
                view = await client.downloads()
                assert [i.id for i in view.ollama] == [item.id] and view.items == []
                assert view.totals.items == 1 and view.totals.unfinished_bytes == 0
                with pytest.raises(ApiError) as refused:
                    await client.cancel_download(item.id)
                assert refused.value.problem.status == 409
                assert "ollama rm" in refused.value.problem.detail
                cleared = await client.clear_finished_downloads()
                assert cleared.ollama == []

        asyncio.run(main())


def test_a_daemon_restart_mid_pull_continues_it(tmp_path: Path, standin: OllamaStandin) -> None:
    root = tmp_path / "home"
    env = ollama_env(standin)

    async def start_pull(daemon: DaemonProcess) -> OllamaPullItem:
        async with DaemonClient(daemon.url, daemon.token) as client:
            item = await client.add_ollama_pull(OllamaDownloadRequest(model="small"))
            return await wait_pull(client, item.id, pulling)

    async def finish(daemon: DaemonProcess, before: OllamaPullItem) -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            first = await client.downloads()
            [again] = first.ollama
            assert again.id == before.id and again.bytes_done >= before.bytes_done
            assert again.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING)
            done = await wait_pull(client, before.id, lambda i: i.state == DownloadState.DONE)
            assert done.bytes_done == done.size
            assert [m.name for m in (await client.ollama_models()).models] == ["small:latest"]

    first = start_daemon(root, env=env)
    try:
        before = asyncio.run(start_pull(first))
    finally:
        assert first.stop(timeout=60) == 0
    with running_daemon(root, env=env) as second:
        asyncio.run(finish(second, before))


def test_errors_say_what_to_do(tmp_path: Path, standin: OllamaStandin) -> None:
    with running_daemon(tmp_path / "home", env=ollama_env(standin)) as daemon:

        async def main() -> None:
            async with DaemonClient(daemon.url, daemon.token) as client:
                missing = await client.add_ollama_pull(OllamaDownloadRequest(model="no-such"))
                failed = await wait_pull(
                    client, missing.id, lambda i: i.state == DownloadState.FAILED
                )
                assert failed.error and "ollama.com/library" in failed.error
                cancelled = await client.cancel_download(missing.id)
                assert cancelled.state == DownloadState.CANCELLED

                with pytest.raises(ApiError) as no_instance:
                    await client.add_ollama_pull(
                        OllamaDownloadRequest(model="tiny", instance="nosuch")
                    )
                assert no_instance.value.problem.status == 404
                with pytest.raises(ApiError) as bad_name:
                    await client.add_ollama_pull(OllamaDownloadRequest(model="two words"))
                assert bad_name.value.problem.status == 422
                with pytest.raises(ApiError) as unknown:
                    await client.pause_download("ollama-0000000000")
                assert unknown.value.problem.status == 404

        asyncio.run(main())


def test_ollama_not_running_is_the_items_error(tmp_path: Path) -> None:
    env = {"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    with running_daemon(tmp_path / "home", env=env) as daemon:

        async def main() -> None:
            async with DaemonClient(daemon.url, daemon.token) as client:
                item = await client.add_ollama_pull(OllamaDownloadRequest(model="tiny"))
                failed = await wait_pull(client, item.id, lambda i: i.state == DownloadState.FAILED)
                assert failed.error and "ollama serve" in failed.error
                assert "resume" in failed.error

        asyncio.run(main())


def test_models_pull_ollama_from_the_cli(tmp_path: Path, standin: OllamaStandin) -> None:
    with running_daemon(tmp_path / "home", env=ollama_env(standin)) as daemon:
        root = daemon.home.root
        assert root is not None
        argv = [sys.executable, "-m", "roundhouse", "--home", str(root), "models"]
        env = {**os.environ, "COLUMNS": "200"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*argv, *args], capture_output=True, text=True, env=env, timeout=60
            )

        pulled = run("pull", "ollama:tiny")
        assert pulled.returncode == 0, pulled.stderr
        assert "Pulled tiny" in pulled.stdout

        queued = run("pull", "ollama:small", "--json")
        assert queued.returncode == 0, queued.stderr
        [item] = json.loads(queued.stdout)["items"]
        assert item["id"].startswith("ollama-") and item["model"] == "small"
        paused = run("downloads", "--pause", item["id"])
        assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr

        listed = json.loads(run("downloads", "--json").stdout)
        states = {i["model"]: i["state"] for i in listed["ollama"]}
        assert states == {"tiny": "done", "small": "paused"}
        table = run("downloads")
        assert "ollama:tiny" in table.stdout and "ollama:small" in table.stdout

        resumed = run("downloads", "--resume", item["id"])
        assert resumed.returncode == 0, resumed.stderr
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            listed = json.loads(run("downloads", "--json").stdout)
            if {i["state"] for i in listed["ollama"]} == {"done"}:
                break
            time.sleep(0.5)
        assert {i["state"] for i in listed["ollama"]} == {"done"}, listed["ollama"]

        missing = run("pull", "ollama:no-such")
        assert missing.returncode == 1 and "ollama.com/library" in missing.stderr
        assert "Traceback" not in missing.stderr
        bad = run("pull", "ollama:tiny", "Q4_K_M")
        assert bad.returncode == 2 and "tag" in bad.stderr
