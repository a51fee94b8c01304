"""The supervisor against scripted bad engines, run as real processes."""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import time
from pathlib import Path

import pytest

from roundhouse.core.supervise import (
    EngineExitedError,
    EngineNotReadyError,
    EngineProcess,
    ExitKind,
    Listener,
    Phase,
    PortTakenError,
    Progress,
    start_engine,
)
from tests.fakes.engines import fake_plan
from tests.processes import alive, assert_nothing_left, free_port

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")


def test_port_taken_before_launch_names_the_owner(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        plan = fake_plan("never_ready.py", port)
        with pytest.raises(PortTakenError) as caught:
            asyncio.run(start_engine(plan, tmp_path / "e.log"))
    assert caught.value.owner is not None
    assert f"pid {caught.value.owner.pid}" in caught.value.detail
    assert not (tmp_path / "e.log").exists(), "nothing was started"


def test_engine_that_finds_its_port_taken_is_classified(tmp_path: Path) -> None:
    async def main() -> tuple[int, ExitKind, str]:
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            # Spawned directly: the race where the port is taken after the probe.
            proc = await EngineProcess.spawn(
                fake_plan("port_taken.py", holder.getsockname()[1]), tmp_path / "e.log"
            )
            outcome = await proc.wait()
        return proc.pid, outcome.kind, str(outcome)

    pid, kind, text = asyncio.run(main())
    assert kind == ExitKind.PORT_TAKEN
    assert "couldn't bind HTTP server socket" in text
    assert_nothing_left(pid, pid)


def test_crash_while_loading_stops_the_wait_at_once(tmp_path: Path) -> None:
    progress: list[Progress] = []
    plan = fake_plan("crash_after.py", free_port(), "1.0")
    started = time.monotonic()
    with pytest.raises(EngineExitedError) as caught:
        asyncio.run(start_engine(plan, tmp_path / "e.log", on_progress=progress.append))
    took = time.monotonic() - started
    outcome = caught.value.outcome
    assert outcome.kind == ExitKind.CRASH
    assert outcome.transient
    assert outcome.signal_name == "SIGSEGV"
    assert "about to crash" in outcome.log_tail
    assert took < 5, "the readiness wait ended with the process, not at its timeout"
    assert any(p.phase == Phase.LOADING and p.last_status.startswith("503") for p in progress)
    log = (tmp_path / "e.log").read_text(encoding="utf-8")
    assert "about to crash" in log
    pid = _pid_from_log(tmp_path / "e.log")
    assert_nothing_left(pid, pid)


def test_sigterm_ignored_means_the_tree_is_killed(tmp_path: Path) -> None:
    plan = fake_plan("ignores_sigterm.py", free_port(), stop_grace_s=0.5)

    async def main() -> tuple[int, int, ExitKind, Listener]:
        running = await start_engine(plan, tmp_path / "e.log", ready_timeout_s=20)
        proc = running.process
        assert proc.create_time is not None
        assert running.identity.model_ids == ("fake-model",)
        worker = _worker_pid(proc)
        assert alive(worker)
        started = time.monotonic()
        outcome = await proc.stop()
        assert time.monotonic() - started < 0.5 + 3
        return proc.pid, worker, outcome.kind, running.identity.listener

    pid, worker, kind, listener = asyncio.run(main())
    assert kind == ExitKind.KILLED
    assert listener in (Listener.OURS, Listener.UNVERIFIED)
    assert_nothing_left(pid, pid, worker)


def _worker_pid(proc: EngineProcess) -> int:
    for line in proc.log.tail(50):
        if match := re.search(r"worker pid (\d+)", line):
            return int(match.group(1))
    raise AssertionError(f"no worker pid in {proc.log.tail(50)}")


def test_never_ready_times_out_with_progress_and_is_stopped(tmp_path: Path) -> None:
    progress: list[Progress] = []
    plan = fake_plan("never_ready.py", free_port(), stop_grace_s=2)
    with pytest.raises(EngineNotReadyError) as caught:
        asyncio.run(
            start_engine(plan, tmp_path / "e.log", ready_timeout_s=1.0, on_progress=progress.append)
        )
    assert "503" in caught.value.detail
    assert progress[-1].phase == Phase.LOADING
    assert progress[-1].elapsed_s >= 1.0
    elapsed = [p.elapsed_s for p in progress]
    assert elapsed == sorted(elapsed)
    pid = _pid_from_log(tmp_path / "e.log")
    assert_nothing_left(pid, pid)


def _pid_from_log(path: Path) -> int:
    match = re.search(r"pid (\d+)", path.read_text(encoding="utf-8"))
    assert match, "the fakes print their pid"
    return int(match.group(1))


def test_out_of_memory_exit(tmp_path: Path) -> None:
    plan = fake_plan("oom.py", free_port())
    with pytest.raises(EngineExitedError) as caught:
        asyncio.run(start_engine(plan, tmp_path / "e.log"))
    outcome = caught.value.outcome
    assert outcome.kind == ExitKind.OUT_OF_MEMORY
    assert not outcome.transient
    assert outcome.returncode == 1
    assert "cudaMalloc failed" in str(outcome)
    pid = _pid_from_log(tmp_path / "e.log")
    assert_nothing_left(pid, pid)


def test_log_ring_is_bounded_and_secrets_never_reach_it(tmp_path: Path) -> None:
    plan = fake_plan(
        "chatty.py",
        free_port(),
        "2000",
        env={"FAKE_API_KEY": "sk-very-secret"},
        secret_env=("FAKE_API_KEY",),
    )

    async def main() -> tuple[tuple[str, ...], ExitKind]:
        proc = await EngineProcess.spawn(plan, tmp_path / "e.log", ring_lines=100)
        outcome = await proc.wait()
        return proc.log.tail(1000), outcome.kind

    tail, kind = asyncio.run(main())
    assert kind == ExitKind.CLEAN
    assert len(tail) == 100
    assert tail[-2] == "line 1999 100%"
    assert tail[-1] == "key is ***"
    log = (tmp_path / "e.log").read_text(encoding="utf-8")
    assert "sk-very-secret" not in log
    assert "line 0 100%" in log


@pytest.mark.skipif(sys.platform == "win32", reason="SIGPIPE is POSIX")
def test_engine_survives_its_output_pipe_closing() -> None:
    """What a daemon's death does to the engines it leaves for the next one to adopt."""
    from roundhouse.core.supervise.process import _spawn

    # A shell loop behaves like a native engine: SIGPIPE's default action would kill it.
    loop = "while :; do echo log line; sleep 0.02; done"
    plan = fake_plan("never_ready.py", free_port()).model_copy(update={"argv": ("sh", "-c", loop)})
    popen = _spawn(plan)
    try:
        assert popen.stdout is not None
        popen.stdout.readline()
        popen.stdout.close()  # the reader is gone, as when the daemon is killed
        time.sleep(0.5)
        assert popen.poll() is None, f"the engine died with {popen.returncode}"
    finally:
        popen.kill()
        popen.wait(timeout=10)


def test_an_engine_that_says_its_load_failed_is_stopped_at_once(tmp_path: Path) -> None:
    # mlx_lm.server keeps running and answers 503 for good when its model fails to load.
    plan = fake_plan("never_ready.py", free_port())
    plan = plan.model_copy(
        update={
            "readiness": plan.readiness.model_copy(
                update={"loading_statuses": [], "failed_statuses": [503]}
            )
        }
    )
    started = time.monotonic()
    with pytest.raises(EngineNotReadyError) as caught:
        asyncio.run(start_engine(plan, tmp_path / "e.log", ready_timeout_s=60))
    assert time.monotonic() - started < 10, "not the whole ready timeout"
    assert "could not load the model" in caught.value.detail
    assert "503" in caught.value.detail
    pid = _pid_from_log(tmp_path / "e.log")
    assert_nothing_left(pid, pid)
