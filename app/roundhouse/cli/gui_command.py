"""Open the desktop app (Qt is imported only here, so the other commands start fast)."""

from __future__ import annotations

import importlib.util
import os
import sys

from roundhouse.base.paths import Home

# What the app needs beyond the daemon and the commands: the `gui` extra (ADR 35).
GUI_PACKAGES = ("PySide6", "pyqtgraph", "qasync")
NO_GUI_PACKAGES = (
    "The desktop app is not installed here (its Qt packages are missing): install Roundhouse "
    "with it, `pipx install 'roundhouse[gui]'` or `pip install 'roundhouse[gui]'`, or use "
    "`roundhouse serve` and the other commands (`roundhouse --help`), which need no Qt."
)


def gui_packages_missing() -> bool:
    """True when an install without the `gui` extra lacks what the app imports."""
    for name in GUI_PACKAGES:
        try:
            if importlib.util.find_spec(name) is None:
                return True
        except (ImportError, ValueError):
            return True
    return False


def display_problem() -> str | None:
    """Why no window can open here, before Qt finds out by aborting the process."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "No graphical session was found (neither DISPLAY nor WAYLAND_DISPLAY is set), so the "
        "desktop app cannot open a window. Start it from your desktop session, or use the "
        "commands: `roundhouse serve` runs the daemon without a window, `roundhouse --help` "
        "lists the rest."
    )


def open_app(home: Home, *, tray: bool = False, quick_chat: bool = False) -> int:
    """Open the app; `tray` shows only the tray icon where there is a tray (at login);
    `quick_chat` opens quick chat as it starts (`roundhouse quick-chat` with no app running)."""
    problem = NO_GUI_PACKAGES if gui_packages_missing() else display_problem()
    if problem is None:
        try:
            from roundhouse.gui.app import run_app
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in GUI_PACKAGES:
                raise
            problem = NO_GUI_PACKAGES
        except ImportError as exc:
            problem = (
                f"The desktop app cannot start: {exc}. On Linux, install Qt's system libraries "
                "(listed in .ci/apt-packages.txt), or use the commands: `roundhouse --help`."
            )
        else:
            return int(run_app(home, tray=tray, quick_chat=quick_chat))
    # rich loads only on this path: the app's start-up does not pay for it.
    from rich.markup import escape

    from roundhouse.cli.output import fail

    fail(escape(problem))  # the hint's `roundhouse[gui]` is text, not markup
