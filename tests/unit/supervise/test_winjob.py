"""The Windows kill-on-close Job Object: its ctypes layout everywhere, its effect on Windows."""

from __future__ import annotations

import ctypes
import logging
import subprocess
import sys
import textwrap

import psutil
import pytest

from roundhouse.core.supervise import process, winjob
from roundhouse.core.supervise.winjob import (
    IO_COUNTERS,
    JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_LIMIT_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
)

sixty_four_bit = pytest.mark.skipif(
    ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout needs 8-byte pointers"
)


@sixty_four_bit
def test_basic_limit_information_has_the_x64_layout() -> None:
    # winnt.h on x64: DWORDs before a SIZE_T/ULONG_PTR are padded to 8 bytes.
    offsets = {
        name: getattr(JOBOBJECT_BASIC_LIMIT_INFORMATION, name).offset
        for name, _ in JOBOBJECT_BASIC_LIMIT_INFORMATION._fields_
    }
    assert offsets == {
        "PerProcessUserTimeLimit": 0,
        "PerJobUserTimeLimit": 8,
        "LimitFlags": 16,
        "MinimumWorkingSetSize": 24,
        "MaximumWorkingSetSize": 32,
        "ActiveProcessLimit": 40,
        "Affinity": 48,
        "PriorityClass": 56,
        "SchedulingClass": 60,
    }
    assert ctypes.sizeof(JOBOBJECT_BASIC_LIMIT_INFORMATION) == 64
    assert JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags.size == 4


@sixty_four_bit
def test_extended_limit_information_is_144_bytes_on_x64() -> None:
    assert ctypes.sizeof(IO_COUNTERS) == 48
    assert ctypes.sizeof(JOBOBJECT_EXTENDED_LIMIT_INFORMATION) == 144
    layout = JOBOBJECT_EXTENDED_LIMIT_INFORMATION
    assert layout.IoInfo.offset == 64
    assert layout.ProcessMemoryLimit.offset == 112
    assert layout.PeakJobMemoryUsed.offset == 136


def test_the_limits_ask_only_for_kill_on_close() -> None:
    info = winjob.kill_on_close_limits()
    assert info.BasicLimitInformation.LimitFlags == JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE == 0x2000
    assert JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS == 9
    # Everything else zero: no memory, time, process-count or affinity limits.
    rest = bytes(info)
    flags = JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags.offset
    assert rest[:flags] == bytes(flags)
    assert rest[flags + 4 :] == bytes(len(rest) - flags - 4)


@pytest.mark.skipif(sys.platform == "win32", reason="off Windows only")
def test_off_windows_nothing_is_attached() -> None:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        assert winjob.attach_kill_on_close_job(child.pid) is False
        assert process.attach_windows_kill_on_close_job(child.pid) is False
    assert winjob._job is None


def test_a_failure_to_join_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(pid: int) -> bool:
        raise OSError(5, "Access is denied")

    monkeypatch.setattr(process, "attach_kill_on_close_job", refuse)
    with caplog.at_level(logging.WARNING, logger=process.__name__):
        assert process.attach_windows_kill_on_close_job(1234) is False
    assert "1234" in caplog.text and "Access is denied" in caplog.text


# A daemon stand-in: it starts a sleeper, puts it in the job, and is then killed.
_DAEMON = textwrap.dedent(
    """
    import subprocess, sys, time
    from roundhouse.core.supervise.winjob import attach_kill_on_close_job
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
    )
    print(sleeper.pid, attach_kill_on_close_job(sleeper.pid), flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(sys.platform != "win32", reason="Job Objects are Windows")
def test_the_engine_dies_when_the_daemon_is_killed() -> None:
    daemon = subprocess.Popen([sys.executable, "-c", _DAEMON], stdout=subprocess.PIPE, text=True)
    sleeper: psutil.Process | None = None
    try:
        assert daemon.stdout is not None
        pid, attached = daemon.stdout.readline().split()
        sleeper = psutil.Process(int(pid))
        assert attached == "True"
        daemon.kill()  # TerminateProcess: nothing of ours runs, only the handle closes
        daemon.wait(10)
        psutil.wait_procs([sleeper], timeout=10)
        assert not sleeper.is_running()
    finally:
        daemon.kill()
        if sleeper is not None and sleeper.is_running():
            sleeper.kill()
