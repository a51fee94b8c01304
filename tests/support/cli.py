"""The `roundhouse` command run as a process of its own, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.daemon_process import DaemonProcess


def roundhouse(
    where: Path | DaemonProcess,
    *args: str,
    columns: int = 200,
    input: str | None = None,
    stdin: int | None = None,
    env: Mapping[str, str] | None = None,
    no_color: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`roundhouse --home HOME ARGS...` for a home folder or a test daemon's home, printing
    `columns` wide. `input` is typed on its stdin; else `stdin` is a file descriptor (such as
    subprocess.DEVNULL), or the test's own when None. `env` adds to this process's."""
    if isinstance(where, DaemonProcess):
        assert where.home.root is not None
        where = where.home.root
    extra = {"COLUMNS": str(columns), **({"NO_COLOR": "1"} if no_color else {})}
    return subprocess.run(
        [sys.executable, "-m", "roundhouse", "--home", str(where), *args],
        input=input,
        stdin=None if input is not None else stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {}), **extra},
    )
