"""Ask whether a home's daemon runs, start one detached, and stop it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import psutil

from roundhouse.api.daemon import DaemonStatus
from roundhouse.base.paths import Home
from roundhouse.client.client import DaemonClient
from roundhouse.client.errors import ClientError, DaemonNotRunningError, DaemonUnreachableError
from roundhouse.client.locate import locate


async def probe_status(home: Home) -> DaemonStatus:
    """The daemon's own status, or a not-running status that says why."""
    try:
        located = locate(home)
    except DaemonNotRunningError as exc:
        return DaemonStatus(running=False, home=home.label, message=str(exc))
    async with DaemonClient(located.discovery.url, located.token) as client:
        try:
            return await client.status()
        except ClientError as exc:
            return DaemonStatus(
                running=False,
                pid=located.discovery.pid,
                url=located.discovery.url,
                home=home.label,
                message=str(exc),
            )


def daemon_command(home: Home) -> list[str]:
    """The argv that runs `roundhouse serve` for this home with this interpreter or build."""
    if getattr(sys, "frozen", False):
        argv = [sys.executable]
    else:
        argv = [sys.executable, "-m", "roundhouse"]
    if home.root is not None:
        argv += ["--home", str(home.root)]
    return [*argv, "serve"]


def spawn_daemon(home: Home) -> subprocess.Popen[bytes]:
    """Start the daemon detached, so it outlives the app that started it."""
    home.ensure()
    start_log = home.log_dir / "daemon-start.log"
    with start_log.open("ab") as log_file:
        if sys.platform == "win32":
            return subprocess.Popen(
                daemon_command(home),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                close_fds=True,
                creationflags=subprocess.DETACHED_PROCESS
                | subprocess.CREATE_NEW_PROCESS_GROUP
                | subprocess.CREATE_NO_WINDOW,
            )
        # A new session: no controlling terminal, and no SIGINT/SIGHUP from the app's.
        return subprocess.Popen(
            daemon_command(home),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            close_fds=True,
            start_new_session=True,
        )


def _start_failure(home: Home, process: subprocess.Popen[bytes]) -> str:
    start_log = home.log_dir / "daemon-start.log"
    tail = _tail(start_log)
    code = process.poll()
    how = f"exited with code {code}" if code is not None else "did not answer in time"
    return f"The Roundhouse daemon {how}. {tail}".strip()


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "Last lines of its start log: " + " | ".join(text[-lines:]) if text else ""


async def ensure_daemon(home: Home, timeout_s: float = 30.0) -> DaemonStatus:
    """The running daemon's status, starting one first when none runs."""
    status = await probe_status(home)
    if status.running:
        return status
    process = spawn_daemon(home)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = await probe_status(home)
        if status.running:
            return status
        if process.poll() is not None:
            # It may have lost a race to another daemon for this home: that one serves.
            status = await probe_status(home)
            if status.running:
                return status
            break
        await asyncio.sleep(0.1)
    raise DaemonUnreachableError(_start_failure(home, process))


async def stop_daemon(home: Home, timeout_s: float = 60.0) -> DaemonStatus:
    """Ask the daemon to stop and wait until it is gone; its last status is returned.

    The daemon stops its engines first: each may take its grace time (10 s) and a kill.
    """
    located = locate(home)
    async with DaemonClient(located.discovery.url, located.token) as client:
        last = await client.status()
        await client.shutdown()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not (await probe_status(home)).running and not _pid_alive(located.discovery.pid):
            return last
        await asyncio.sleep(0.1)
    raise DaemonUnreachableError(
        f"The daemon (pid {located.discovery.pid}) did not stop within {timeout_s:.0f} s."
    )


def _pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
