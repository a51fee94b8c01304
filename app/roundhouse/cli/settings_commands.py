"""`roundhouse settings show|set`: the daemon's settings by dotted key (gateway.idle_ttl_s)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from roundhouse.cli.daemon_link import show_from_daemon

if TYPE_CHECKING:
    from roundhouse.api.settings import Settings

# pydantic and the schemas load in the commands: `roundhouse` alone must start fast.


@click.group("settings")
def settings() -> None:
    """The daemon's settings: show them, or set one by its dotted key."""


@settings.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show(ctx: click.Context, as_json: bool) -> None:
    """Show every setting with its value."""
    from roundhouse.cli.settings_keys import settings_view

    show_from_daemon(ctx, as_json, lambda c: c.settings(), settings_view)


# Unknown options are values: `settings set gateway.idle_ttl_s -5` is then refused in words.
@settings.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@click.pass_context
def set_(ctx: click.Context, key: str, value: str) -> None:
    """Set KEY (e.g. gateway.idle_ttl_s) to VALUE; lists are comma-separated
    (gateway.cors_origins http://a,http://b), an empty VALUE clears an optional one."""
    from roundhouse.cli.daemon_link import daemon_client, run_async
    from roundhouse.cli.output import console, fail
    from roundhouse.cli.settings_keys import (
        AT_RESTART,
        SettingError,
        apply_setting,
        field_of,
        shown,
    )

    async def change() -> Settings:
        async with daemon_client(ctx) as client:
            new = apply_setting(await client.settings(), key, value)
            return await client.put_settings(new)

    try:
        parts, _ = field_of(key.strip())  # a wrong key is said before asking the daemon
        saved = run_async(change())
    except SettingError as exc:
        fail(str(exc), code=2)
    now: Any = saved.model_dump(mode="json")
    for part in parts:
        now = now[part]
    note = " (counts when the daemon restarts)" if key.strip() in AT_RESTART else ""
    console.print(f"{key.strip()} = {shown(now)}{note}", highlight=False)
