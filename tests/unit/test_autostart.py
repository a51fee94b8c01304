"""Start at login, per OS: the entry each writes, where, and that disabling leaves nothing.

The macOS and Windows writers run here on Linux with their target injected: the LaunchAgent
folder is a temp dir (its plist read back with plistlib), and the Run key is a FAKE
registry (a dict behind the RunRegistry protocol), since winreg exists only on Windows.
"""

from __future__ import annotations

import plistlib
import shlex
from pathlib import Path

import pytest

from roundhouse.cli.launch import TRAY_FLAG as LAUNCHER_TRAY_FLAG
from roundhouse.core.system.autostart import (
    DESKTOP_FILE,
    LAUNCH_AGENT_LABEL,
    RUN_VALUE,
    TRAY_FLAG,
    AutostartError,
    LaunchAgent,
    RunKeyAutostart,
    XdgAutostart,
    apply_autostart,
    build_desktop_entry,
    build_run_value,
    entry_for_platform,
    launch_command,
)

COMMAND = ["/opt/py env/bin/python", "-m", "roundhouse", "--home", "/home/me/дом 50%", "--tray"]


class FakeRunRegistry:
    """FAKE: stands in for HKCU\\...\\Run (winreg exists only on Windows)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


def test_the_command_opens_the_app_of_this_home_in_the_tray() -> None:
    assert TRAY_FLAG == LAUNCHER_TRAY_FLAG, "the launcher must accept what the entry runs"
    assert launch_command(None, executable="/v/bin/python", frozen=False, platform="linux") == [
        "/v/bin/python",
        "-m",
        "roundhouse",
        "--tray",
    ]
    home = Path("/h")
    assert launch_command(home, executable="/Apps/Roundhouse", frozen=True, platform="darwin") == [
        "/Apps/Roundhouse",
        "--home",
        str(home),
        "--tray",
    ]


def test_windows_prefers_pythonw_so_no_console_opens(tmp_path: Path) -> None:
    python = tmp_path / "python.exe"
    python.touch()
    assert launch_command(None, executable=str(python), frozen=False, platform="win32")[0] == (
        str(python)
    )
    (tmp_path / "pythonw.exe").touch()
    assert launch_command(None, executable=str(python), frozen=False, platform="win32")[0] == (
        str(tmp_path / "pythonw.exe")
    )


def test_a_frozen_windows_build_uses_its_windowed_twin(tmp_path: Path) -> None:
    app = tmp_path / "roundhouse.exe"
    app.touch()
    assert launch_command(None, executable=str(app), frozen=True, platform="win32") == [
        str(app),
        "--tray",
    ]
    (tmp_path / "roundhousew.exe").touch()
    assert launch_command(None, executable=str(app), frozen=True, platform="win32") == [
        str(tmp_path / "roundhousew.exe"),
        "--tray",
    ]


def test_linux_writes_an_xdg_autostart_file_and_removes_it(tmp_path: Path) -> None:
    config = tmp_path / "config home"
    entry = entry_for_platform("linux", env={"XDG_CONFIG_HOME": str(config)}, user_home=tmp_path)
    assert isinstance(entry, XdgAutostart)
    assert entry.path == config / "autostart" / DESKTOP_FILE
    assert not entry.installed()

    apply_autostart(True, COMMAND, entry)
    assert entry.installed()
    text = entry.path.read_text(encoding="utf-8")
    assert text.startswith("[Desktop Entry]\n")
    fields = dict(line.split("=", 1) for line in text.splitlines()[1:])
    assert fields["Type"] == "Application"
    assert fields["Terminal"] == "false"
    # The Exec value un-escaped (string escapes, then %%), then split as the spec quotes.
    exec_value = fields["Exec"].replace("\\\\", "\\").replace("%%", "%")
    assert shlex.split(exec_value) == COMMAND

    apply_autostart(True, COMMAND, entry)  # enabling again rewrites, never duplicates
    assert [p.name for p in entry.path.parent.iterdir()] == [DESKTOP_FILE]
    apply_autostart(False, COMMAND, entry)
    assert not entry.path.exists()
    assert list(entry.path.parent.iterdir()) == []
    apply_autostart(False, COMMAND, entry)  # nothing to remove is fine


def test_linux_without_xdg_config_home_uses_dot_config(tmp_path: Path) -> None:
    for env in ({}, {"XDG_CONFIG_HOME": ""}, {"XDG_CONFIG_HOME": "relative/ignored"}):
        entry = entry_for_platform("linux", env=env, user_home=tmp_path)
        assert isinstance(entry, XdgAutostart)
        assert entry.path == tmp_path / ".config" / "autostart" / DESKTOP_FILE


def test_desktop_entry_quotes_what_the_spec_reserves() -> None:
    line = next(
        x for x in build_desktop_entry(["/a b/py", 'say "hi"', "$HOME"]).splitlines() if "Exec" in x
    )
    assert line == 'Exec="/a b/py" "say \\\\"hi\\\\"" "\\\\$HOME"'


def test_macos_writes_a_launch_agent_run_at_load(tmp_path: Path) -> None:
    entry = entry_for_platform("darwin", env={}, user_home=tmp_path)
    assert isinstance(entry, LaunchAgent)
    assert entry.path == tmp_path / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"

    apply_autostart(True, COMMAND, entry)
    agent = plistlib.loads(entry.path.read_bytes())
    assert agent["Label"] == LAUNCH_AGENT_LABEL
    assert agent["ProgramArguments"] == COMMAND
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] is False, "quitting the app must not start it again"

    apply_autostart(False, COMMAND, entry)
    assert list(entry.path.parent.iterdir()) == []


def test_windows_sets_the_run_value_and_deletes_it() -> None:
    registry = FakeRunRegistry()
    entry = entry_for_platform("win32", registry=registry)
    assert isinstance(entry, RunKeyAutostart)
    assert "HKEY_CURRENT_USER" in entry.location

    command = [r"C:\Users\Me Too\venv\Scripts\pythonw.exe", "-m", "roundhouse", "--tray"]
    apply_autostart(True, command, entry)
    assert registry.values == {
        RUN_VALUE: r'"C:\Users\Me Too\venv\Scripts\pythonw.exe" -m roundhouse --tray'
    }
    assert registry.values[RUN_VALUE] == build_run_value(command)
    assert entry.installed()
    apply_autostart(False, command, entry)
    assert registry.values == {}
    assert not entry.installed()


def test_a_failure_is_said_in_words(tmp_path: Path) -> None:
    blocked = tmp_path / "config"
    # A file where the autostart folder should be: no folder can be made there.
    blocked.mkdir()
    (blocked / "autostart").write_text("not a folder", encoding="utf-8")
    entry = XdgAutostart(blocked)
    with pytest.raises(AutostartError) as raised:
        apply_autostart(True, COMMAND, entry)
    detail = raised.value.detail
    assert str(entry.path) in detail and "could not be written" in detail
    assert raised.value.title == "Start at login was not changed"
