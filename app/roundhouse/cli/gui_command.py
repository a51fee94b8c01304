"""Open the desktop app (Qt is imported only here, so the other commands start fast)."""

from __future__ import annotations

from roundhouse.base.paths import Home


def open_app(home: Home) -> int:
    try:
        from roundhouse.gui.app import run_app
    except ImportError as exc:
        # rich loads only on this path: the app's start-up does not pay for it.
        from roundhouse.cli.output import fail

        fail(
            f"The desktop app cannot start: {exc}. On Linux, install Qt's system libraries "
            "(see the README), or use the commands: `roundhouse --help`."
        )
    return int(run_app(home))
