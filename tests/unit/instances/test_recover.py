"""Recovery at daemon start: stale records dropped, ours reaped or adopted, by pid and time."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import psutil
import pytest

from roundhouse.core.errors import NotFoundError
from roundhouse.core.instances import (
    InstanceManager,
    InstanceRecord,
    InstanceState,
    OnLeftover,
    RecordStore,
)
from roundhouse.core.instances.manager import find_process
from tests.processes import alive, assert_nothing_left, free_port
from tests.unit.instances.test_records import record

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")

SLEEPER = (sys.executable, "-c", "import time; time.sleep(60)")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own session, as the supervisor starts engines."""
    proc = subprocess.Popen(SLEEPER, start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def sleeper_record(
    proc: subprocess.Popen[bytes], instance_id: str = "s1", **changes: object
) -> InstanceRecord:
    port = free_port()
    fields: dict[str, object] = {
        "pid": proc.pid,
        "create_time": psutil.Process(proc.pid).create_time(),
        "argv": SLEEPER,
        "port": port,
        "probe_url": f"http://127.0.0.1:{port}/health",
        "stop_grace_s": 2.0,
        **changes,
    }
    return record(instance_id, **fields)


def manager(tmp_path: Path, on_leftover: OnLeftover) -> InstanceManager:
    return InstanceManager(tmp_path / "state", tmp_path / "logs", on_leftover=on_leftover)


def test_stale_records_are_dropped_and_nothing_is_signalled(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    gone = subprocess.Popen(SLEEPER)
    gone.kill()
    gone.wait()
    real = sleeper_record(sleeper)
    assert real.create_time is not None
    stale = [
        # The same pid, another create time: the pid was reused by another process.
        sleeper_record(sleeper, "reused", create_time=real.create_time - 3600),
        # The same pid and time, another command.
        sleeper_record(sleeper, "other-argv", argv=("llama-server", "-m", "x.gguf")),
        # No create time was known: it can never be shown to be ours.
        sleeper_record(sleeper, "no-time", create_time=None),
        record("ended", pid=gone.pid),
    ]
    RecordStore(tmp_path / "state").save(stale)

    recovery = asyncio.run(manager(tmp_path, "reap").recover())

    assert [r.id for r in recovery.stale] == [r.id for r in stale]
    assert recovery.reaped == () and recovery.adopted == ()
    assert alive(sleeper.pid)
    assert RecordStore(tmp_path / "state").load() == []


def test_reap_stops_our_leftover_and_its_group(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    RecordStore(tmp_path / "state").save([sleeper_record(sleeper)])
    recovery = asyncio.run(manager(tmp_path, "reap").recover())
    assert [r.id for r in recovery.reaped] == ["s1"]
    sleeper.wait(timeout=5)
    assert_nothing_left(sleeper.pid, sleeper.pid)
    assert RecordStore(tmp_path / "state").load() == []


def test_reap_kills_a_leftover_that_ignores_sigterm(tmp_path: Path) -> None:
    argv = (
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)",
    )
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        stubborn = record(
            "stubborn",
            pid=proc.pid,
            create_time=psutil.Process(proc.pid).create_time(),
            argv=argv,
            stop_grace_s=0.3,
        )
        RecordStore(tmp_path / "state").save([stubborn])
        started = time.monotonic()
        asyncio.run(manager(tmp_path, "reap").recover())
        took = time.monotonic() - started
        # It outlived the grace time, then was killed (psutil reaped it: no status left).
        assert 0.3 <= took < 5
        assert_nothing_left(proc.pid, proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_adopt_keeps_it_listed_and_stop_ends_it(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    RecordStore(tmp_path / "state").save([sleeper_record(sleeper)])

    async def main() -> None:
        instances = manager(tmp_path, "adopt")
        recovery = await instances.recover()
        (adopted,) = recovery.adopted
        assert adopted.state == InstanceState.ADOPTED and adopted.engine is None
        # Nothing answers on its port: adopted, but reported as not healthy.
        assert adopted.healthy is False
        assert instances.list() == [adopted]
        assert [r.id for r in RecordStore(tmp_path / "state").load()] == ["s1"]
        assert await instances.stop("s1") is None
        assert instances.list() == []
        with pytest.raises(NotFoundError):
            await instances.stop("s1")

    asyncio.run(main())
    sleeper.wait(timeout=5)
    assert_nothing_left(sleeper.pid, sleeper.pid)
    assert RecordStore(tmp_path / "state").load() == []


def test_find_process_never_claims_our_own_process() -> None:
    me = psutil.Process()
    assert find_process(record(pid=os.getpid(), create_time=me.create_time())) is None


def test_on_leftover_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="adopt"):
        manager(tmp_path, cast(OnLeftover, "keep"))


def test_a_process_its_parent_has_not_reaped_counts_as_stopped(tmp_path: Path) -> None:
    """An engine that exited on SIGTERM but whose parent (not us) has not reaped it yet is a
    zombie: stopping it must not wait the whole grace time."""
    from roundhouse.core.instances.manager import terminate_tree

    pid_file = tmp_path / "child.pid"
    parent_code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)  # never reaps the child\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code])
    try:
        deadline = time.monotonic() + 10
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        child = psutil.Process(int(pid_file.read_text()))
        started = time.monotonic()
        asyncio.run(terminate_tree(child, grace_s=10))
        assert time.monotonic() - started < 5
        assert child.status() == psutil.STATUS_ZOMBIE
    finally:
        parent.kill()
        parent.wait()
