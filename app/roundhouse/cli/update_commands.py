"""`roundhouse update check|status`: is a newer Roundhouse out (PyPI's latest release)?"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from roundhouse.api.updates import UpdateStatus

PROJECT_PAGE = "https://pypi.org/project/roundhouse/"


@click.group("update")
def update() -> None:
    """Whether a newer Roundhouse is out. The daemon asks PyPI once a day only when
    `ui.check_updates` is on; `check` asks now. Nothing but a plain GET is sent."""


def _say(status: UpdateStatus, as_json: bool, *, checked_now: bool) -> None:
    from roundhouse.cli.output import console, fail, print_json

    if checked_now and status.error:
        if as_json:
            print_json(status)
            raise SystemExit(1)
        fail(status.error)
    if as_json:
        print_json(status)
        return
    console.print(status.summary(), highlight=False, soft_wrap=True)
    if status.newer:
        console.print(f"Get it from {PROJECT_PAGE}", style="green", highlight=False)


@update.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """Ask PyPI for the latest release now (even with automatic checks off)."""
    from roundhouse.cli.daemon_link import daemon_client, run_async

    async def ask() -> UpdateStatus:
        async with daemon_client(ctx) as client:
            return await client.check_updates()

    _say(run_async(ask()), as_json, checked_now=True)


@update.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The last check's result, without asking PyPI."""
    from roundhouse.cli.daemon_link import daemon_client, run_async

    async def ask() -> UpdateStatus:
        async with daemon_client(ctx) as client:
            return await client.update_status()

    _say(run_async(ask()), as_json, checked_now=False)
