"""A process this daemon started, found again from what it recorded: pid, create time, argv."""

from __future__ import annotations

import psutil

# Linux derives a process's create time from the boot time, which the kernel recomputes
# from the wall clock: a clock step moves it a little. The argv is compared as well, so a
# reused pid must also match to within this and run the same command to pass as ours.
CREATE_TIME_TOLERANCE_S = 1.0


def recorded_process(
    pid: int, create_time: float | None, argv: tuple[str, ...], *, hidden_argv_is_ours: bool
) -> psutil.Process | None:
    """The process at `pid` when it still runs as the one recorded (its create time, and its
    command line where the system shows it), else None. `hidden_argv_is_ours`: whether a
    process whose command line the system hides (some systems hide other users') counts as
    ours on its create time alone."""
    if create_time is None:
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        if abs(process.create_time() - create_time) > CREATE_TIME_TOLERANCE_S:
            return None
        try:
            cmdline = process.cmdline()
        except psutil.AccessDenied:
            return process if hidden_argv_is_ours else None
        return process if tuple(cmdline) == argv else None
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        # It runs, but not as us: not one we started.
        return None
