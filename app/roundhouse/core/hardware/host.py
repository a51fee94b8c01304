"""What the inventory may ask of a machine, and the real machine answering it."""

from __future__ import annotations

import ctypes
import importlib
import logging
import platform
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import psutil

log = logging.getLogger(__name__)

RegistryValue = str | int | bytes


class HostReader(Protocol):
    """The questions the inventory asks; every answer is None when the machine cannot tell.

    Parsers only ever see these answers, so a recorded machine (RecordedHost) exercises
    each platform's parsing on any other platform.
    """

    @property
    def system(self) -> str:
        """As platform.system(): "Linux", "Darwin" or "Windows"."""
        ...

    @property
    def machine(self) -> str:
        """As platform.machine(): "x86_64", "AMD64", "arm64", "aarch64"..."""
        ...

    @property
    def os_version(self) -> str: ...

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> str | None:
        """The command's stdout, or None when it is missing, fails or times out."""
        ...

    def read_text(self, path: str) -> str | None: ...

    def list_dir(self, path: str) -> list[str] | None: ...

    def registry_subkeys(self, key: str) -> list[str] | None:
        """Windows: names of the subkeys of e.g. r"HKLM\\SYSTEM\\...\\Class\\{guid}"."""
        ...

    def registry_values(self, key: str) -> dict[str, RegistryValue] | None:
        """Windows: the values of one registry key, by name."""
        ...

    def processor_feature(self, feature: int) -> bool | None:
        """Windows: kernel32.IsProcessorFeaturePresent(feature)."""
        ...

    def cpu_count(self, logical: bool) -> int | None: ...


_HIVES = {"HKLM": "HKEY_LOCAL_MACHINE", "HKEY_LOCAL_MACHINE": "HKEY_LOCAL_MACHINE"}


class LocalHost:
    """The machine this process runs on. Never raises for a missing tool or file."""

    def __init__(self) -> None:
        self.system = platform.system()
        self.machine = platform.machine()

    @property
    def os_version(self) -> str:
        if self.system == "Darwin":
            return f"macOS {platform.mac_ver()[0]}"
        if self.system == "Windows":
            return f"Windows {platform.release()} ({platform.version()})"
        pretty = _os_release_name(self.read_text("/etc/os-release"))
        kernel = f"kernel {platform.release()}"
        return f"{pretty} ({kernel})" if pretty else kernel

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> str | None:
        exe = shutil.which(argv[0])
        # macOS tools live in /usr/sbin, which a GUI app's PATH often lacks.
        if exe is None and Path("/usr/sbin", argv[0]).exists():
            exe = str(Path("/usr/sbin", argv[0]))
        if exe is None:
            return None
        try:
            done = subprocess.run(
                [exe, *argv[1:]],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("%s failed: %s", argv[0], exc)
            return None
        return done.stdout if done.returncode == 0 else None

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(p.name for p in Path(path).iterdir())
        except OSError:
            return None

    def registry_subkeys(self, key: str) -> list[str] | None:
        opened = self._open_key(key)
        if opened is None:
            return None
        winreg, handle = opened
        names: list[str] = []
        try:
            with handle:
                count = winreg.QueryInfoKey(handle)[0]
                names = [winreg.EnumKey(handle, i) for i in range(count)]
        except OSError:
            return None
        return names

    def registry_values(self, key: str) -> dict[str, RegistryValue] | None:
        opened = self._open_key(key)
        if opened is None:
            return None
        winreg, handle = opened
        values: dict[str, RegistryValue] = {}
        try:
            with handle:
                count = winreg.QueryInfoKey(handle)[1]
                for i in range(count):
                    name, data, _kind = winreg.EnumValue(handle, i)
                    if isinstance(data, str | int | bytes):
                        values[name] = data
        except OSError:
            return None
        return values

    def processor_feature(self, feature: int) -> bool | None:
        if self.system != "Windows":
            return None
        try:
            # windll exists only on Windows; getattr keeps this importable elsewhere.
            kernel32 = getattr(ctypes, "windll").kernel32  # noqa: B009
            return bool(kernel32.IsProcessorFeaturePresent(feature))
        except (AttributeError, OSError):
            return None

    def cpu_count(self, logical: bool) -> int | None:
        return psutil.cpu_count(logical=logical)

    def _open_key(self, key: str) -> tuple[Any, Any] | None:
        if self.system != "Windows":
            return None
        hive, _, sub = key.partition("\\")
        if _HIVES.get(hive.upper()) != "HKEY_LOCAL_MACHINE":
            return None
        try:
            # winreg is Windows-only; imported by name so type checks pass everywhere.
            winreg = importlib.import_module("winreg")
            return winreg, winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, sub)
        except (ImportError, OSError):
            return None


def _os_release_name(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"') or None
    return None


def is_wsl(host: HostReader) -> bool:
    """True inside Windows Subsystem for Linux, where NVIDIA's library is in /usr/lib/wsl/lib."""
    if host.system != "Linux":
        return False
    release = host.read_text("/proc/sys/kernel/osrelease") or ""
    return "microsoft" in release.lower()


def normalize_arch(machine: str) -> str:
    """One spelling per architecture: x86_64 and arm64."""
    lowered = machine.lower()
    if lowered in ("amd64", "x86_64", "x64"):
        return "x86_64"
    if lowered in ("arm64", "aarch64", "armv8", "arm64e"):
        return "arm64"
    return lowered or "unknown"
