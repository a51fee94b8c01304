"""`roundhouse quick-chat`: open quick chat in the running app, or start the app with it open
(what a desktop's own shortcut runs where the app cannot hold a global key, as on Wayland)."""

from __future__ import annotations

import click

from roundhouse.cli.daemon_link import home_of


@click.command("quick-chat")
@click.pass_context
def quick_chat(ctx: click.Context) -> None:
    """Open quick chat: in the running app, else start the app with it (in the tray)."""
    from roundhouse.base.app_channel import OK, ChannelError, ask_app

    home = home_of(ctx)
    try:
        answer = ask_app(home)
    except (ChannelError, OSError) as exc:
        from rich.markup import escape

        from roundhouse.cli.output import fail

        fail(escape(f"Quick chat could not be asked for: {exc}"))
    if answer == OK:
        raise SystemExit(0)
    if answer is not None:
        from rich.markup import escape

        from roundhouse.cli.output import fail

        fail(
            escape(
                f"The running app did not open quick chat (it answered {answer!r}): it may be "
                "an older Roundhouse; quit it and run `roundhouse quick-chat` again."
            )
        )
    from roundhouse.cli.gui_command import open_app

    raise SystemExit(open_app(home, tray=True, quick_chat=True))
