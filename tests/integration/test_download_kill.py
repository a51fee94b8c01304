"""The daemon is killed (SIGKILL) at 20 random points of a download and started again each
time: every restart resumes from bytes it had kept, and the finished file's sha256 matches."""

from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

import httpx
import pytest

from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.hub import hub_env, running_hub
from tests.fakes.hub.build import write_manifest

MiB = 1024 * 1024
REPO = "roundhouse-test/killed-download"
NAME = "big-Q4_K_M.gguf"
SIZE = 40 * MiB + 12345
KILLS = 20
RATE = 6 * MiB  # bytes per second the Hub sends: a few seconds to cross the file


def _item(daemon: DaemonProcess) -> dict[str, object] | None:
    answer = httpx.get(
        f"{daemon.url}/api/v1/downloads",
        headers={"authorization": f"Bearer {daemon.token}"},
        trust_env=False,
        timeout=10,
    ).json()
    items = [i for i in answer["items"] if i["path"] == NAME]
    return items[0] if items else None


def _range_starts(requests: list[dict[str, object]]) -> list[int]:
    starts = []
    for entry in requests:
        headers = entry.get("headers") or {}
        assert isinstance(headers, dict)
        if entry.get("method") != "GET" or not str(entry.get("path", "")).endswith(NAME):
            continue
        value = next((v for k, v in headers.items() if k.lower() == "range"), None)
        starts.append(int(str(value).removeprefix("bytes=").split("-")[0]) if value else 0)
    return starts


@pytest.mark.timeout(300)
def test_killed_at_random_points_the_daemon_resumes_and_the_file_is_intact(
    tmp_path: Path,
) -> None:
    chance = random.Random(20)
    data = chance.randbytes(SIZE)
    repos = tmp_path / "repos"
    (repos / REPO).mkdir(parents=True)
    (repos / REPO / NAME).write_bytes(data)
    write_manifest(repos, {REPO: {}}, {})
    # Kill points spread over the file, in order: bytes the download has passed.
    points = sorted(chance.randrange(SIZE // 50, SIZE - SIZE // 50) for _ in range(KILLS))
    root = tmp_path / "daemon"
    with running_hub(repos) as hub:
        hub.set_faults({"repo": REPO, "path": NAME, "throttle_bps": RATE})
        env = {**hub_env(hub), "HF_HUB_CACHE": str(tmp_path / "hf cache"), "HOME": str(tmp_path)}
        daemon = start_daemon(root, env=env)
        httpx.post(
            f"{daemon.url}/api/v1/downloads",
            json={"repo": REPO, "files": [NAME]},
            headers={"authorization": f"Bearer {daemon.token}"},
            trust_env=False,
            timeout=60,
        ).raise_for_status()
        partials = tmp_path / "hf cache" / f"models--{REPO.replace('/', '--')}" / "blobs"
        kept: list[int] = []  # bytes of the partial file at each kill
        for point in points:
            deadline = time.monotonic() + 60
            # Past the point, and past what this life started from: each life transfers.
            first = _item(daemon)
            target = max(point, int(str(first["bytes_done"])) + MiB if first else point)
            while (item := _item(daemon)) is None or int(str(item["bytes_done"])) < target:
                assert time.monotonic() < deadline, f"no progress past {point}: {item}"
                time.sleep(0.05)
            daemon.process.kill()
            daemon.process.wait(timeout=10)
            (partial,) = partials.glob("*.incomplete")
            kept.append(partial.stat().st_size)
            daemon = start_daemon(root, env=env)
        try:
            deadline = time.monotonic() + 120
            while (item := _item(daemon)) is None or item["state"] != "done":
                assert item is None or item["state"] in {"queued", "downloading", "verifying"}, item
                assert time.monotonic() < deadline, item
                time.sleep(0.1)
            local = Path(str(item["local_path"]))
            assert (
                hashlib.sha256(local.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
            )
        finally:
            daemon.stop(timeout=30)
        starts = _range_starts(hub.requests())
    # One transfer per life (the first, then one after each of the 20 restarts).
    assert len(starts) == KILLS + 1, starts
    resumed = starts[1:]
    # Each restart asks only for what it lacks: never past the bytes it had on disk, never
    # behind what an earlier life had made durable, and it does not start over.
    for start, on_disk in zip(resumed, kept, strict=True):
        assert start <= on_disk
    assert resumed == sorted(resumed)
    assert resumed[-1] > SIZE // 2
