"""`roundhouse peers ...`: pair with other machines' daemons, list and remove them, and see,
start and stop what runs on one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon

if TYPE_CHECKING:
    from roundhouse.api.instances import InstanceInfo
    from roundhouse.api.peers import PeerInfo, PeerState, PeerStopped, Unpaired

DEFAULT_PORT = 11502  # api.peers.DEFAULT_PEER_PORT, without importing pydantic at load


@click.group()
def peers() -> None:
    """Machines paired with this one: their models are served through this daemon's gateway.

    Pair once: `roundhouse peers code` on one machine shows a code; `roundhouse peers add
    HOST --code CODE` on the other pairs them (the peer listener must be on where the code is
    shown: `roundhouse settings set peers.listen_host 0.0.0.0`). See docs/machines.md.
    """


@peers.command("code")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def code(ctx: click.Context, as_json: bool) -> None:
    """Open a pairing code (valid 10 minutes, once) to type on the other machine."""
    from roundhouse.cli.peers_view import code_view

    show_from_daemon(ctx, as_json, lambda c: c.open_pairing_code(), code_view)


def _address(text: str) -> tuple[str, int]:
    from roundhouse.api.peers import parse_address
    from roundhouse.cli.output import fail

    try:
        return parse_address(text)
    except ValueError as exc:
        fail(str(exc), code=2)


@peers.command("add")
@click.argument("address")
@click.option("--code", "pair_code", required=True, help="The code the other machine shows.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def add(ctx: click.Context, address: str, pair_code: str, as_json: bool) -> None:
    """Pair with the machine at ADDRESS (HOST or HOST:PORT) that shows the code."""
    from roundhouse.cli.output import console, print_json
    from roundhouse.cli.peers_view import shown_fingerprint

    host, port = _address(address)

    async def pair() -> PeerInfo:
        async with daemon_client(ctx) as client:
            return await client.pair(host, port, pair_code)

    peer = run_async(pair())
    if as_json:
        print_json(peer)
        return
    console.print(
        f"Paired with {peer.name} (id {peer.id}) at {peer.host}:{peer.port}.\n"
        f"Its fingerprint: {shown_fingerprint(peer.fingerprint)} (the same as it showed).",
        highlight=False,
    )


@peers.command("move")
@click.argument("peer_id")
@click.argument("address")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def move(ctx: click.Context, peer_id: str, address: str, as_json: bool) -> None:
    """The machine PEER_ID is now at ADDRESS (HOST or HOST:PORT), e.g. after its address
    changed: kept once it answers there with the certificate pinned when pairing."""
    from roundhouse.cli.output import console, print_json

    host, port = _address(address)

    async def ask() -> PeerInfo:
        async with daemon_client(ctx) as client:
            return await client.move_peer(peer_id, host, port)

    peer = run_async(ask())
    if as_json:
        print_json(peer)
    else:
        console.print(
            f"{peer.name} ({peer.id}) is now at {peer.host}:{peer.port}.", highlight=False
        )


@peers.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--no-check", is_flag=True, help="Do not ask each machine whether it answers.")
@click.pass_context
def list_peers(ctx: click.Context, as_json: bool, no_check: bool) -> None:
    """List the paired machines and whether each answers."""
    from roundhouse.cli.peers_view import peers_view

    show_from_daemon(ctx, as_json, lambda c: c.peers(check=not no_check), peers_view)


@peers.command("remove")
@click.argument("peer_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def remove(ctx: click.Context, peer_id: str, as_json: bool) -> None:
    """Unpair PEER_ID: removed here, and the other machine is told to remove this one."""
    from roundhouse.cli.output import console, print_json

    async def unpair() -> Unpaired:
        async with daemon_client(ctx) as client:
            return await client.unpair(peer_id)

    answer = run_async(unpair())
    if as_json:
        print_json(answer)
    else:
        console.print(answer.message, highlight=False)


@peers.command("discover")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def discover(ctx: click.Context, as_json: bool) -> None:
    """List the Roundhouse daemons that answer on the LAN (mDNS), with their fingerprints.

    Only those with peers.discovery on answer. Finding one trusts nothing: pair with
    `roundhouse peers add` and the code it shows.
    """
    from roundhouse.cli.peers_view import discovered_view

    show_from_daemon(ctx, as_json, lambda c: c.discover_peers(), discovered_view)


@peers.command("show")
@click.argument("peer_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show(ctx: click.Context, peer_id: str, as_json: bool) -> None:
    """The machine's hardware, instances, load, the models it can start, and each ready
    instance's figures now (tokens/s, memory)."""
    from roundhouse.cli.peers_view import state_view

    if as_json:
        show_from_daemon(ctx, as_json, lambda c: c.peer_state(peer_id), state_view)
        return
    from roundhouse.api.instances import InstanceStatus
    from roundhouse.api.metrics import MetricsHistory
    from roundhouse.cli.output import console
    from roundhouse.client import ClientError

    async def ask() -> tuple[PeerState, dict[str, MetricsHistory]]:
        async with daemon_client(ctx) as client:
            state = await client.peer_state(peer_id)
            figures: dict[str, MetricsHistory] = {}
            for info in state.instances:
                if info.status != InstanceStatus.READY:
                    continue
                try:
                    # The last few seconds hold the latest point.
                    figures[info.id] = await client.peer_metrics(peer_id, info.id, 10.0)
                except ClientError:
                    continue  # not one of its own (an external engine): no figures
            return state, figures

    state, figures = run_async(ask())
    console.print(state_view(state, figures))


@peers.command("start")
@click.argument("peer_id")
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def start(ctx: click.Context, peer_id: str, model: str, as_json: bool) -> None:
    """Start MODEL on the machine PEER_ID (as its gateway would); waits until it is ready."""
    from roundhouse.cli.output import console, print_json

    async def ask() -> InstanceInfo:
        async with daemon_client(ctx) as client:
            return await client.peer_start(peer_id, model)

    info = run_async(ask())
    if as_json:
        print_json(info)
    else:
        console.print(f"{model} is ready on {peer_id}: instance {info.id}.", highlight=False)


@peers.command("stop")
@click.argument("peer_id")
@click.argument("instance_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def stop(ctx: click.Context, peer_id: str, instance_id: str, as_json: bool) -> None:
    """Stop the instance INSTANCE_ID on the machine PEER_ID."""
    from roundhouse.cli.output import console, print_json

    async def ask() -> PeerStopped:
        async with daemon_client(ctx) as client:
            return await client.peer_stop(peer_id, instance_id)

    answer = run_async(ask())
    if as_json:
        print_json(answer)
    else:
        console.print(f"Stopped {instance_id} on {peer_id}.", highlight=False)
