"""Windows Job Object with kill-on-close: engines die with the daemon, however it ends."""

from __future__ import annotations

import ctypes
import sys
import threading

# Plain fixed-width ctypes, not ctypes.wintypes: there DWORD is c_ulong, 8 bytes on Linux,
# and the layout tests that run on Linux must see the Windows sizes.
DWORD = ctypes.c_uint32
LARGE_INTEGER = ctypes.c_int64
ULONGLONG = ctypes.c_uint64
SIZE_T = ctypes.c_size_t
ULONG_PTR = ctypes.c_size_t

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
# JOBOBJECTINFOCLASS.JobObjectExtendedLimitInformation
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
PROCESS_TERMINATE = 0x0001
PROCESS_SET_QUOTA = 0x0100


class JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", LARGE_INTEGER),
        ("PerJobUserTimeLimit", LARGE_INTEGER),
        ("LimitFlags", DWORD),
        ("MinimumWorkingSetSize", SIZE_T),
        ("MaximumWorkingSetSize", SIZE_T),
        ("ActiveProcessLimit", DWORD),
        ("Affinity", ULONG_PTR),
        ("PriorityClass", DWORD),
        ("SchedulingClass", DWORD),
    )


class IO_COUNTERS(ctypes.Structure):
    _fields_ = (
        ("ReadOperationCount", ULONGLONG),
        ("WriteOperationCount", ULONGLONG),
        ("OtherOperationCount", ULONGLONG),
        ("ReadTransferCount", ULONGLONG),
        ("WriteTransferCount", ULONGLONG),
        ("OtherTransferCount", ULONGLONG),
    )


class JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("BasicLimitInformation", JOBOBJECT_BASIC_LIMIT_INFORMATION),
        ("IoInfo", IO_COUNTERS),
        ("ProcessMemoryLimit", SIZE_T),
        ("JobMemoryLimit", SIZE_T),
        ("PeakProcessMemoryUsed", SIZE_T),
        ("PeakJobMemoryUsed", SIZE_T),
    )


def kill_on_close_limits() -> JOBOBJECT_EXTENDED_LIMIT_INFORMATION:
    """The limits the daemon's job is given: only kill-on-close, nothing else restricted."""
    info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION()
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    return info


# The daemon's one job handle, created at first use and never closed: the handle is the
# whole mechanism. When the daemon ends in any way (a crash, End task, TerminateProcess)
# Windows closes it, and kill-on-close ends every process in the job.
_job: int | None = None
_job_lock = threading.Lock()


def attach_kill_on_close_job(pid: int) -> bool:
    """Put process `pid` in the daemon's kill-on-close job; False off Windows.

    Processes that `pid` starts afterwards are in the job too. One it started before this
    call is not: callers attach right after spawning, before an engine starts workers.
    Raises OSError (with the Windows error) when the job cannot be made or joined, e.g. on
    Windows 7, where a process already in a job cannot join another.
    """
    if sys.platform == "win32":
        _assign(_daemon_job(), pid)
        return True
    else:  # not a fall-through: mypy would call it unreachable when checking for Windows
        return False


if sys.platform == "win32":
    _kernel32_dll: ctypes.WinDLL | None = None

    def _kernel32() -> ctypes.WinDLL:
        global _kernel32_dll
        if _kernel32_dll is None:
            # Our own instance with its own prototypes: setting argtypes on the shared
            # ctypes.windll.kernel32 would change them for every other user in the process.
            dll = ctypes.WinDLL("kernel32", use_last_error=True)
            handle, ptr = ctypes.c_void_p, ctypes.c_void_p
            dll.CreateJobObjectW.argtypes = (ptr, ctypes.c_wchar_p)
            dll.CreateJobObjectW.restype = handle
            dll.SetInformationJobObject.argtypes = (handle, ctypes.c_int, ptr, DWORD)
            dll.SetInformationJobObject.restype = ctypes.c_int
            dll.OpenProcess.argtypes = (DWORD, ctypes.c_int, DWORD)
            dll.OpenProcess.restype = handle
            dll.AssignProcessToJobObject.argtypes = (handle, handle)
            dll.AssignProcessToJobObject.restype = ctypes.c_int
            dll.CloseHandle.argtypes = (handle,)
            dll.CloseHandle.restype = ctypes.c_int
            _kernel32_dll = dll
        return _kernel32_dll

    def _assign(job: int, pid: int) -> None:
        kernel32 = _kernel32()
        # The caller still holds the child's Popen handle: Windows cannot have reused `pid`.
        process = kernel32.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, False, pid)
        if not process:
            raise ctypes.WinError(ctypes.get_last_error())
        try:
            if not kernel32.AssignProcessToJobObject(job, process):
                raise ctypes.WinError(ctypes.get_last_error())
        finally:
            kernel32.CloseHandle(process)

    def _daemon_job() -> int:
        global _job
        with _job_lock:
            if _job is not None:
                return _job
            kernel32 = _kernel32()
            # No security attributes: the handle is not inheritable. An engine that
            # inherited it would keep its own job open, and kill-on-close would never fire.
            job: int | None = kernel32.CreateJobObjectW(None, None)
            if not job:
                raise ctypes.WinError(ctypes.get_last_error())
            info = kill_on_close_limits()
            if not kernel32.SetInformationJobObject(
                job,
                JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                ctypes.byref(info),
                ctypes.sizeof(info),
            ):
                error = ctypes.get_last_error()
                kernel32.CloseHandle(job)
                raise ctypes.WinError(error)
            _job = job
            return job
