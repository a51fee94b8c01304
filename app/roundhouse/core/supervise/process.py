"""Run one engine process in its own process group, capture its output, stop its whole tree."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TypeVar

import psutil

from roundhouse.api.engines import LaunchPlan
from roundhouse.core.supervise.exits import ExitOutcome, classify_exit
from roundhouse.core.supervise.logcapture import LogCapture
from roundhouse.core.supervise.winjob import attach_kill_on_close_job

log = logging.getLogger(__name__)

# How long the output may keep flowing after the process ended (a grandchild holding the
# pipe): past this the outcome is classified with what was read so far.
DRAIN_TIMEOUT_S = 2.0
REAP_TIMEOUT_S = 5.0

_T = TypeVar("_T")


def attach_windows_kill_on_close_job(pid: int) -> bool:
    """Put `pid` in the daemon's Job Object with kill-on-close; whether it is in it now.

    False off Windows, and on Windows when the job cannot be joined (logged): the engine
    then outlives a daemon that dies without stopping it, and the pid-file reaper is the
    fallback.
    """
    try:
        return attach_kill_on_close_job(pid)
    except OSError as exc:
        log.warning("Engine pid %d is not in a kill-on-close job: %s", pid, exc)
        return False


def _spawn(plan: LaunchPlan) -> subprocess.Popen[bytes]:
    # Windows: its own group, so CTRL_BREAK reaches the engine and not us. POSIX: its own
    # session and group, so our terminal's Ctrl-C does not reach it and one killpg reaches
    # everything it started.
    windows = sys.platform == "win32"
    flags: int = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if windows else 0
    return subprocess.Popen(
        list(plan.argv),  # a list, never a shell
        env={**os.environ, **plan.env},
        cwd=plan.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        creationflags=flags,
        start_new_session=not windows,
        # Python ignores SIGPIPE and, by default, restores it for children. Keeping it
        # ignored means an engine whose daemon died (closing the read end of its output
        # pipe) gets EPIPE on its next log line instead of being killed: an engine that a
        # restarted daemon is to adopt must survive its first write.
        restore_signals=False,
    )


def _spawn_in_job(plan: LaunchPlan) -> tuple[subprocess.Popen[bytes], bool]:
    popen = _spawn(plan)
    # At once, in the spawning thread: what the engine starts from now on joins the job
    # with it; a worker it started before this line would not.
    in_job = sys.platform == "win32" and attach_windows_kill_on_close_job(popen.pid)
    return popen, in_job


class EngineProcess:
    """A started engine: its pid and create time, its output, its exit, and how to stop it."""

    def __init__(
        self,
        plan: LaunchPlan,
        popen: subprocess.Popen[bytes],
        log: LogCapture,
        *,
        in_job_object: bool = False,
    ) -> None:
        self.plan = plan
        self.log = log
        self._popen = popen
        self.pid = popen.pid
        self.started_at = time.time()
        self._psutil: psutil.Process | None
        try:
            self._psutil = psutil.Process(popen.pid)
            # With the pid, the create time tells a later daemon whether a pid is still ours.
            self.create_time: float | None = self._psutil.create_time()
        except psutil.NoSuchProcess:
            self._psutil, self.create_time = None, None
        # Windows: in the daemon's kill-on-close job, so it dies with the daemon.
        self.in_job_object = in_job_object
        loop = asyncio.get_running_loop()
        self._exit: asyncio.Future[int] = loop.create_future()
        self._drained: asyncio.Future[None] = loop.create_future()
        self._stopping = False
        self._killed = False
        # Threads, not the event loop, block on the pipe and on wait(): nothing here stalls
        # the loop, and no executor thread is held for an engine's lifetime.
        threading.Thread(
            target=self._pump, args=(loop,), name=f"engine-{self.pid}-log", daemon=True
        ).start()
        threading.Thread(
            target=self._wait, args=(loop,), name=f"engine-{self.pid}-wait", daemon=True
        ).start()

    @classmethod
    async def spawn(
        cls,
        plan: LaunchPlan,
        log_path: Path,
        *,
        ring_lines: int = 500,
        log_max_bytes: int = 5 * 1024 * 1024,
        log_backups: int = 3,
    ) -> EngineProcess:
        """Start `plan.argv` (no shell) with the environment updated by `plan.env`."""
        secrets = [plan.env[name] for name in plan.secret_env if name in plan.env]
        log = LogCapture(
            log_path,
            ring_lines=ring_lines,
            max_bytes=log_max_bytes,
            backups=log_backups,
            secrets=secrets,
        )
        # What Roundhouse chose for the user (parsers, formats) and why, ahead of the
        # engine's own lines, where the log view and a failed start's tail show it.
        log.add_lines([f"[roundhouse] {note}" for note in plan.notes])
        try:
            popen, in_job = await asyncio.to_thread(_spawn_in_job, plan)
        except BaseException:
            log.close()
            raise
        return cls(plan, popen, log, in_job_object=in_job)

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._popen.stdout is not None
        try:
            self.log.pump(self._popen.stdout)
        finally:
            _settle(loop, self._drained, None)

    def _wait(self, loop: asyncio.AbstractEventLoop) -> None:
        _settle(loop, self._exit, self._popen.wait())

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode if self._exit.done() else None

    @property
    def exited(self) -> asyncio.Future[int]:
        """Done with the exit code once the process has ended."""
        return self._exit

    async def wait(self) -> ExitOutcome:
        """Wait for the process to end; how it ended, with its last log lines."""
        await asyncio.shield(self._exit)
        await self._drain()
        # The ring keeps the tail; only the file is closed.
        self.log.close()
        return self.outcome()

    def outcome(self) -> ExitOutcome:
        return classify_exit(
            self.returncode, self.log.tail(50), by_us=self._stopping, killed=self._killed
        )

    async def _drain(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drained), DRAIN_TIMEOUT_S)

    def _tree(self) -> list[psutil.Process]:
        if self._psutil is None:
            return []
        try:
            return [self._psutil, *self._psutil.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _graceful(self) -> None:
        if sys.platform == "win32":
            os.kill(self.pid, signal.CTRL_BREAK_EVENT)
        else:
            # The whole group, as a terminal's Ctrl-C or systemd would: engines with
            # worker processes expect their workers to hear it too.
            os.killpg(self.pid, signal.SIGTERM)

    async def stop(self, grace_s: float | None = None) -> ExitOutcome:
        """Ask the engine to stop, wait `grace_s` (the plan's), then kill its whole tree."""
        grace = self.plan.stop_grace_s if grace_s is None else grace_s
        tree = self._tree()
        if not self._exit.done():
            self._stopping = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self._graceful()
            try:
                await asyncio.wait_for(asyncio.shield(self._exit), grace)
            except TimeoutError:
                self._killed = True
        # Also after a graceful exit: workers it left behind must not keep VRAM.
        await self.kill_tree(tree)
        return await self.wait()

    async def kill_tree(self, known: list[psutil.Process] | None = None) -> None:
        """SIGKILL the process group and every known descendant, and reap them."""
        tree = {p.pid: p for p in [*(known or []), *self._tree()]}
        if sys.platform != "win32":
            # Reaches children that were reparented away from the tree, but not ones that
            # left the group with setsid; those are in `tree` when they were seen.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        for proc in tree.values():
            # psutil refuses to signal a pid that was reused by another process.
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                proc.kill()
        others = [p for p in tree.values() if p.pid != self.pid]
        await asyncio.to_thread(psutil.wait_procs, others, REAP_TIMEOUT_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._exit), REAP_TIMEOUT_S)


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[_T], value: _T) -> None:
    def settle() -> None:
        if not future.done():
            future.set_result(value)

    # The loop may be gone when a test's asyncio.run ended first; nothing waits then.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)
