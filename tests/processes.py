"""Process helpers for tests that run real engine processes: free ports, nothing left behind."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

import psutil


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_nothing_left(pgid: int, *pids: int, timeout_s: float = 5.0) -> None:
    """No process of the engine's group, nor any of `pids`, is still running."""

    def left() -> list[int]:
        found = [pid for pid in pids if alive(pid)]
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == pgid and alive(proc.pid):
                    found.append(proc.pid)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        return found

    deadline = time.monotonic() + timeout_s
    while (remaining := left()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert remaining == [], f"left running: {remaining}"


def wait_for(check: Callable[[], bool], what: str, within_s: float = 10.0) -> None:
    """Poll `check` until it holds; fail the test after `within_s` seconds, naming `what`."""
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)
