"""The `roundhouse` entry point: opens the app straight away, or hands over to the CLI."""

from __future__ import annotations

import os
import sys

from roundhouse.base.paths import HOME_ENV

TRAY_FLAG = "--tray"


def app_launch_home(argv: list[str]) -> str | bool | None:
    """The home of a plain app launch (`roundhouse`, `roundhouse --home DIR`), else False.

    Opening the app is the path a user waits on, so it skips the CLI framework; every other
    form of the command, --help included, goes through click.
    """
    if not argv:
        return os.environ.get(HOME_ENV) or None
    if len(argv) == 2 and argv[0] == "--home" and argv[1] and not argv[1].startswith("-"):
        return argv[1]
    if len(argv) == 1 and argv[0].startswith("--home=") and len(argv[0]) > len("--home="):
        return argv[0].removeprefix("--home=")
    return False


def main() -> None:
    args = sys.argv[1:]
    # `--tray` (what the start-at-login entry runs) opens the app with its window closed.
    tray = TRAY_FLAG in args
    home = app_launch_home([arg for arg in args if arg != TRAY_FLAG])
    if home is False:
        from roundhouse.cli.main import cli

        cli(prog_name="roundhouse")
        return
    from roundhouse.base.paths import resolve_home
    from roundhouse.cli.gui_command import open_app

    assert home is None or isinstance(home, str)
    raise SystemExit(open_app(resolve_home(home), tray=tray))
