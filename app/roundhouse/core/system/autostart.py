"""Start at login: the per-OS entry that opens Roundhouse in the tray when the user logs in.

Each OS has one native place, in the user's own space, that its session manager reads at
login: an XDG autostart file (Linux and other freedesktop systems), a LaunchAgent (macOS),
the HKCU Run key (Windows). Enabling writes Roundhouse's entry there; disabling removes it
and nothing else. Building an entry is pure (tests read it); writing it is separate.
"""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from roundhouse.base.files import write_atomic
from roundhouse.core.errors import RoundhouseError

# The name of the entry in each place: one per user, whichever home enabled it.
DESKTOP_FILE = "roundhouse.desktop"
LAUNCH_AGENT_LABEL = "org.roundhouse.app"
RUN_VALUE = "Roundhouse"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
# The app's option that keeps the main window closed and shows only the tray icon.
TRAY_FLAG = "--tray"
NOT_WINDOWS = "The Windows registry exists only on Windows."


class AutostartError(RoundhouseError):
    """The entry could not be written or removed: the detail names the place and the cause."""

    title = "Start at login was not changed"
    status = 500


def launch_command(
    root: Path | None,
    *,
    executable: str = sys.executable,
    frozen: bool = bool(getattr(sys, "frozen", False)),
    platform: str = sys.platform,
) -> list[str]:
    """The argv that opens the app of this home in the tray, with this interpreter or build."""
    if platform == "win32":
        # A console program would open a terminal window at each login: use the windowed
        # twin, pythonw.exe beside python.exe, or the frozen build's roundhousew.exe.
        twin = "roundhousew.exe" if frozen else "pythonw.exe"
        windowless = Path(executable).with_name(twin)
        if windowless.is_file():
            executable = str(windowless)
    argv = [executable] if frozen else [executable, "-m", "roundhouse"]
    if root is not None:
        argv += ["--home", str(root)]
    return [*argv, TRAY_FLAG]


class AutostartEntry(Protocol):
    """One OS's start-at-login entry for Roundhouse."""

    @property
    def location(self) -> str:
        """Where the entry lives, in words a user can find by hand."""
        ...

    def install(self, command: list[str]) -> None: ...

    def remove(self) -> None:
        """Remove the entry; nothing to remove is not an error."""
        ...

    def installed(self) -> bool: ...


# -- Linux and other freedesktop systems -------------------------------------------------


def _desktop_quote(arg: str) -> str:
    # The Exec key's quoting rules (Desktop Entry Specification, "The Exec key").
    if arg and not any(c in arg for c in " \t\n\"'\\><~|&;$*?#()`%"):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    escaped = escaped.replace("$", "\\$").replace("%", "%%")
    return f'"{escaped}"'


def build_desktop_entry(command: list[str]) -> str:
    """An XDG autostart file that runs `command` at login."""
    exec_line = " ".join(_desktop_quote(arg) for arg in command)
    # The desktop file format escapes backslashes in string values once more.
    exec_line = exec_line.replace("\\", "\\\\")
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=Roundhouse\n"
        "Comment=Run local language models; starts in the tray\n"
        f"Exec={exec_line}\n"
        "Icon=roundhouse\n"
        "Terminal=false\n"
        "X-GNOME-Autostart-enabled=true\n"
        "X-Roundhouse-Autostart=true\n"
    )


def xdg_config_home(env: Mapping[str, str], user_home: Path) -> Path:
    configured = env.get("XDG_CONFIG_HOME", "")
    # The spec ignores a relative path: only an absolute one counts.
    if configured and Path(configured).is_absolute():
        return Path(configured)
    return user_home / ".config"


class XdgAutostart:
    def __init__(self, config_home: Path) -> None:
        self.path = config_home / "autostart" / DESKTOP_FILE

    @property
    def location(self) -> str:
        return str(self.path)

    def install(self, command: list[str]) -> None:
        write_atomic(self.path, build_desktop_entry(command).encode("utf-8"))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def installed(self) -> bool:
        return self.path.is_file()


# -- macOS -------------------------------------------------------------------------------


def build_launch_agent(command: list[str]) -> bytes:
    """A LaunchAgent that runs `command` once at login (and never restarts it)."""
    agent = {
        "Label": LAUNCH_AGENT_LABEL,
        "ProgramArguments": command,
        "RunAtLoad": True,
        "KeepAlive": False,
        "ProcessType": "Interactive",
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML)


class LaunchAgent:
    def __init__(self, agents_dir: Path) -> None:
        self.path = agents_dir / f"{LAUNCH_AGENT_LABEL}.plist"

    @property
    def location(self) -> str:
        return str(self.path)

    def install(self, command: list[str]) -> None:
        # launchd reads the folder at the next login: nothing to load now, the app runs.
        write_atomic(self.path, build_launch_agent(command))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def installed(self) -> bool:
        return self.path.is_file()


# -- Windows -----------------------------------------------------------------------------


class RunRegistry(Protocol):
    """The values of HKCU\\...\\Run; a fake stands in for winreg where it does not exist."""

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None:
        """Delete the value; a missing one is not an error."""
        ...


class WinregRun:
    """The real Run key of the current user, through winreg (Windows only)."""

    def get(self, name: str) -> str | None:
        if sys.platform == "win32":
            import winreg

            try:
                with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                    value, _kind = winreg.QueryValueEx(key, name)
            except FileNotFoundError:
                return None
            return str(value)
        raise OSError(NOT_WINDOWS)

    def set(self, name: str, value: str) -> None:
        if sys.platform == "win32":
            import winreg

            access = winreg.KEY_SET_VALUE
            with winreg.CreateKeyEx(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, access) as key:
                winreg.SetValueEx(key, name, 0, winreg.REG_SZ, value)
            return
        raise OSError(NOT_WINDOWS)

    def delete(self, name: str) -> None:
        if sys.platform == "win32":
            import winreg

            try:
                access = winreg.KEY_SET_VALUE
                with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, access) as key:
                    winreg.DeleteValue(key, name)
            except FileNotFoundError:
                pass
            return
        raise OSError(NOT_WINDOWS)


def build_run_value(command: list[str]) -> str:
    """The command line Windows runs at login, quoted as its C runtime parses it."""
    return subprocess.list2cmdline(command)


class RunKeyAutostart:
    def __init__(self, registry: RunRegistry) -> None:
        self.registry = registry

    @property
    def location(self) -> str:
        return f"the registry value HKEY_CURRENT_USER\\{RUN_KEY}\\{RUN_VALUE}"

    def install(self, command: list[str]) -> None:
        self.registry.set(RUN_VALUE, build_run_value(command))

    def remove(self) -> None:
        self.registry.delete(RUN_VALUE)

    def installed(self) -> bool:
        return self.registry.get(RUN_VALUE) is not None


# -- choosing and applying ---------------------------------------------------------------


def entry_for_platform(
    platform: str = sys.platform,
    env: Mapping[str, str] | None = None,
    user_home: Path | None = None,
    registry: RunRegistry | None = None,
) -> AutostartEntry:
    """The entry of this OS, in this user's places."""
    env = os.environ if env is None else env
    user_home = Path.home() if user_home is None else user_home
    if platform == "win32":
        return RunKeyAutostart(registry or WinregRun())
    if platform == "darwin":
        return LaunchAgent(user_home / "Library" / "LaunchAgents")
    return XdgAutostart(xdg_config_home(env, user_home))


def apply_autostart(enabled: bool, command: list[str], entry: AutostartEntry) -> None:
    """Write or remove the entry; a failure becomes an AutostartError in words."""
    try:
        if enabled:
            entry.install(command)
        else:
            entry.remove()
    except OSError as exc:
        cause = exc.strerror or str(exc)
        doing = "written" if enabled else "removed"
        raise AutostartError(
            f"The start-at-login entry ({entry.location}) could not be {doing}: {cause}. "
            "Check that this folder or key belongs to you and is writable, then try again."
        ) from exc
