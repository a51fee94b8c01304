"""Classify how an engine process ended, from its exit status and its last log lines."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class ExitKind(StrEnum):
    CLEAN = "clean"
    STOPPED = "stopped"
    KILLED = "killed"
    OUT_OF_MEMORY = "out-of-memory"
    PORT_TAKEN = "port-taken"
    BAD_MODEL = "bad-model"
    MISSING_LIBRARY = "missing-library"
    CRASH = "crash"
    ERROR = "error"


# Checked in this order: llama-server prints "failed to load model" after an allocation
# failure, so memory wins over the model file.
_PATTERNS: tuple[tuple[ExitKind, re.Pattern[str]], ...] = (
    (
        ExitKind.OUT_OF_MEMORY,
        re.compile(
            r"out of memory|failed to allocate|cudaMalloc failed|alloc_buffer: allocating .* "
            r"failed|std::bad_alloc|MemoryError|insufficient memory|not enough memory"
            r"|OutOfMemoryError|ErrorOutOfDeviceMemory",
            re.IGNORECASE,
        ),
    ),
    (
        ExitKind.PORT_TAKEN,
        re.compile(
            r"address already in use|couldn't bind HTTP server socket|EADDRINUSE"
            r"|only one usage of each socket address",
            re.IGNORECASE,
        ),
    ),
    (
        ExitKind.MISSING_LIBRARY,
        re.compile(
            r"error while loading shared libraries|ModuleNotFoundError|DLL load failed"
            r"|Library not loaded|cannot open shared object file|No module named",
        ),
    ),
    (
        ExitKind.BAD_MODEL,
        re.compile(
            r"failed to load model|invalid magic|unknown model architecture"
            r"|error loading model|not a valid GGUF|unsupported model",
            re.IGNORECASE,
        ),
    ),
)

_MESSAGES = {
    ExitKind.CLEAN: "exited normally",
    ExitKind.STOPPED: "was stopped",
    ExitKind.KILLED: "was killed",
    ExitKind.OUT_OF_MEMORY: (
        "ran out of memory: use a smaller model or quantization, a shorter context, "
        "or fewer GPU layers"
    ),
    ExitKind.PORT_TAKEN: "could not listen: another program already uses its port",
    ExitKind.BAD_MODEL: "could not load the model file: it is damaged or not supported",
    ExitKind.MISSING_LIBRARY: "could not start: a library it needs is missing",
    ExitKind.CRASH: "crashed",
    ExitKind.ERROR: "failed",
}

# Signals that mean a bug in the engine, not a property of the model or the machine.
_CRASH_SIGNALS = {
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP")
    if hasattr(signal, name)
}
# Windows NTSTATUS codes a crashing process exits with (access violation, stack overflow,
# heap corruption, abort()'s 3 is left out: it is also an ordinary exit code).
_WINDOWS_CRASH_CODES = {0xC0000005, 0xC00000FD, 0xC0000374, 0xC0000409, 0xC000001D}


@dataclass(frozen=True)
class ExitOutcome:
    """How an engine ended: kind, status, one line for a person, and the log's tail."""

    kind: ExitKind
    returncode: int | None
    message: str
    transient: bool
    by_us: bool = False
    signal_name: str | None = None
    log_tail: tuple[str, ...] = field(default=(), repr=False)

    def __str__(self) -> str:
        status = _status_words(self.returncode, self.signal_name)
        text = f"The engine {self.message} ({status})."
        if self.log_tail:
            text += "\nLast log lines:\n" + "\n".join(self.log_tail)
        return text


def _status_words(returncode: int | None, signal_name: str | None) -> str:
    if signal_name:
        return f"signal {signal_name}"
    if returncode is None:
        return "still running"
    return f"exit code {returncode}"


def _signal_of(returncode: int | None) -> int | None:
    # subprocess reports death by signal N as -N on POSIX.
    if returncode is None or returncode >= 0:
        return None
    return -returncode


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def match_log(lines: Sequence[str]) -> tuple[ExitKind, str] | None:
    """The first known failure the log shows, and the line that shows it."""
    for kind, pattern in _PATTERNS:
        for line in lines:
            if pattern.search(line):
                return kind, line.strip()
    return None


def classify_exit(
    returncode: int | None,
    log_tail: Sequence[str],
    *,
    by_us: bool = False,
    killed: bool = False,
    tail_lines: int = 20,
) -> ExitOutcome:
    """Name how a process ended; only crashes are transient (worth a restart).

    `by_us`: we asked it to stop; `killed`: it had to be killed after the grace time.
    """
    tail = tuple(log_tail[-tail_lines:])
    signo = _signal_of(returncode)
    sig_name = _signal_name(signo) if signo is not None else None

    def outcome(kind: ExitKind, message: str | None = None) -> ExitOutcome:
        return ExitOutcome(
            kind=kind,
            returncode=returncode,
            message=message or _MESSAGES[kind],
            transient=kind == ExitKind.CRASH,
            by_us=by_us,
            signal_name=sig_name,
            log_tail=tail,
        )

    if by_us:
        if killed or signo == getattr(signal, "SIGKILL", None):
            return outcome(ExitKind.KILLED, "was killed after it did not stop in time")
        return outcome(ExitKind.STOPPED)
    found = match_log(log_tail)
    if found is not None and returncode != 0:
        kind, line = found
        return outcome(kind, f"{_MESSAGES[kind]}: {line[:200]}")
    if signo is not None:
        if signo in _CRASH_SIGNALS:
            return outcome(ExitKind.CRASH)
        if signo == getattr(signal, "SIGKILL", None):
            # Nobody here sent it: on Linux that is most often the kernel's OOM killer.
            return outcome(
                ExitKind.KILLED,
                "was killed from outside (SIGKILL), often by the system when memory runs out",
            )
        return outcome(ExitKind.KILLED, f"was stopped from outside ({sig_name})")
    if returncode is not None and returncode & 0xFFFFFFFF in _WINDOWS_CRASH_CODES:
        return outcome(ExitKind.CRASH)
    if returncode == 0:
        return outcome(ExitKind.CLEAN)
    if returncode == 127:
        return outcome(ExitKind.MISSING_LIBRARY, "could not start: its program was not found")
    return outcome(ExitKind.ERROR)
