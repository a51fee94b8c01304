"""A process running the queue is killed (SIGKILL) at random points of a download; each
new process resumes from the bytes the last one made durable, and the file ends intact."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit.models.test_downloads_server import RepoFiles, fake_hub, payload, sha256

MiB = 1024 * 1024
DATA = payload(6 * MiB + 4321, seed=7)

# The child: a queue over the data dir, the file added once, run until done.
CHILD = """
import asyncio, json, sys
from pathlib import Path
from roundhouse.api.downloads import DownloadRequest, DownloadState
from roundhouse.core.models.downloads import DownloadService, TransferPolicy

endpoint, root = sys.argv[1], Path(sys.argv[2])

async def main() -> None:
    service = DownloadService(
        root / "data", hub_cache=lambda: root / "cache", endpoint=endpoint,
        policy=TransferPolicy(checkpoint_every_s=0.2, flush_every_s=0.05, buffer_bytes=256 * 1024),
    )
    await service.start()
    if not service.view().items:
        await service.add(DownloadRequest(repo="org/model", files=["m.gguf"]))
    while True:
        seen = service.changes.version
        (item,) = service.view().items
        print(json.dumps({"state": item.state.value, "bytes": item.bytes_done}), flush=True)
        if item.state not in (DownloadState.QUEUED, DownloadState.DOWNLOADING,
                              DownloadState.VERIFYING):
            break
        await service.changes.wait(seen, 0.2)
    await service.close()

asyncio.run(main())
"""


@pytest.mark.timeout(120)
def test_killed_at_random_points_it_resumes_and_ends_intact(tmp_path: Path) -> None:
    chance = random.Random(1234)
    with fake_hub() as hub:
        hub.add("org/model", RepoFiles({"m.gguf": DATA}, lfs={"m.gguf"}))
        hub.faults.chunk_delay_s = 0.02  # ~3 MiB/s: a few seconds to hit
        partial = tmp_path / "cache" / "models--org--model" / "blobs" / f"{sha256(DATA)}.incomplete"
        have = 0
        for _ in range(6):
            proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, hub.url, str(tmp_path)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            # Kill it while it transfers, not while it still imports (slow on a busy machine).
            started = time.monotonic()
            while proc.poll() is None and time.monotonic() - started < 30:
                if partial.exists() and partial.stat().st_size > have:
                    break
                time.sleep(0.01)
            time.sleep(chance.uniform(0.1, 0.5))
            proc.kill()
            proc.wait()
            if proc.returncode == 0:  # it finished first: nothing left to kill
                break
            have = partial.stat().st_size if partial.exists() else 0
            assert have <= len(DATA)
        hub.faults.chunk_delay_s = 0.0
        done = subprocess.run(
            [sys.executable, "-c", CHILD, hub.url, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        last = json.loads(done.stdout.strip().splitlines()[-1])
        assert last == {"state": "done", "bytes": len(DATA)}
        ranges = [r.headers.get("range", "") for r in hub.file_gets()]
    blob = tmp_path / "cache" / "models--org--model" / "blobs" / sha256(DATA)
    assert blob.read_bytes() == DATA
    assert not partial.exists()
    # Later processes asked for the rest, not the whole file again.
    assert sum(r.startswith("bytes=") for r in ranges) >= 2
