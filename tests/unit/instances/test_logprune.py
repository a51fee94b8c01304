"""Engine logs pruned by age and total size, never a running or adopted instance's log."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundhouse.core.instances import InstanceManager, RecordStore
from roundhouse.core.instances.logprune import DAY_S, LogLimits, prune_engine_logs
from tests.unit.instances.test_recover import SLEEPER, sleeper_record

NOW = 1_800_000_000.0
RUNNING = "llama.cpp-aaaaaaaaaaaa.log"
ENDED = "vllm-bbbbbbbbbbbb.log"
OTHER = "mlx-cccccccccccc.log"


def _log(folder: Path, name: str, *, age_days: float, size: int = 100) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"x" * size)
    when = NOW - age_days * DAY_S
    os.utime(path, (when, when))
    return path


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_logs_of_ended_instances_older_than_the_limit_go_with_their_rotations(
    tmp_path: Path,
) -> None:
    for name in (RUNNING, f"{RUNNING}.3", ENDED, f"{ENDED}.1", f"{ENDED}.2"):
        _log(tmp_path, name, age_days=30)
    _log(tmp_path, OTHER, age_days=13)
    # Not engine logs: left alone however old.
    for name in ("daemon.log", "notes.txt", "llama.cpp-not-an-id.log", f"{ENDED}.bak"):
        _log(tmp_path, name, age_days=400)

    removed = prune_engine_logs(tmp_path, {RUNNING}, NOW, LogLimits(max_age_days=14))

    assert {p.name for p in removed} == {ENDED, f"{ENDED}.1", f"{ENDED}.2"}
    assert _names(tmp_path) == {
        RUNNING,
        f"{RUNNING}.3",
        OTHER,
        "daemon.log",
        "notes.txt",
        "llama.cpp-not-an-id.log",
        f"{ENDED}.bak",
    }


def test_past_the_total_size_the_oldest_go_first_and_a_running_log_stays(
    tmp_path: Path,
) -> None:
    _log(tmp_path, RUNNING, age_days=5, size=600)  # the oldest, but running
    _log(tmp_path, f"{ENDED}.1", age_days=4, size=300)
    _log(tmp_path, ENDED, age_days=3, size=300)
    _log(tmp_path, OTHER, age_days=1, size=300)

    removed = prune_engine_logs(
        tmp_path, {RUNNING}, NOW, LogLimits(max_age_days=14, max_total_bytes=1000)
    )

    # 1500 bytes: the two oldest ended files go (900 left), the newest stays.
    assert [p.name for p in removed] == [f"{ENDED}.1", ENDED]
    assert _names(tmp_path) == {RUNNING, OTHER}


def test_a_running_log_over_the_limit_alone_is_kept(tmp_path: Path) -> None:
    _log(tmp_path, RUNNING, age_days=100, size=5000)
    _log(tmp_path, OTHER, age_days=0, size=10)
    removed = prune_engine_logs(tmp_path, {RUNNING}, NOW, LogLimits(1, max_total_bytes=1000))
    assert [p.name for p in removed] == [OTHER]
    assert _names(tmp_path) == {RUNNING}


def test_within_the_limits_nothing_goes(tmp_path: Path) -> None:
    _log(tmp_path, ENDED, age_days=13.9)
    _log(tmp_path, OTHER, age_days=0)
    assert prune_engine_logs(tmp_path, set(), NOW) == []
    assert prune_engine_logs(tmp_path / "no such folder", set(), NOW) == []


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges there")
def test_a_link_named_as_a_log_is_not_followed(tmp_path: Path) -> None:
    victim = _log(tmp_path / "elsewhere", "keep.txt", age_days=100)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / ENDED).symlink_to(victim)
    assert prune_engine_logs(tmp_path / "logs", set(), NOW, LogLimits(0, 0)) == []
    assert victim.read_bytes() == b"x" * 100


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(SLEEPER, start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")
def test_the_daemon_start_prunes_but_keeps_the_adopted_instances_log(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    logs = tmp_path / "logs"
    adopted_log = logs / "llama.cpp-0123456789ab.log"
    ended_log = logs / "llama.cpp-ba9876543210.log"
    long_ago = time.time() - 30 * DAY_S
    for path in (adopted_log, ended_log):
        logs.mkdir(exist_ok=True)
        path.write_text("old output\n")
        os.utime(path, (long_ago, long_ago))
    RecordStore(tmp_path / "state").save(
        [sleeper_record(sleeper, "0123456789ab", log_path=str(adopted_log))]
    )
    manager = InstanceManager(tmp_path / "state", logs, on_leftover="adopt")

    async def main() -> None:
        (adopted,) = (await manager.recover()).adopted
        assert adopted.id == "0123456789ab"
        assert adopted_log.is_file() and not ended_log.exists()
        await manager.stop(adopted.id)
        await manager.prune_logs()  # as the next start does: now it is an ended instance's

    asyncio.run(main())
    assert not adopted_log.exists()
