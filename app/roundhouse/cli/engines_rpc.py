"""`roundhouse engines rpc-server ...`: lend this machine to a llama.cpp split on another one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon

if TYPE_CHECKING:
    from rich.table import Table

    from roundhouse.api.rpc import RpcServerInfo, RpcServerList

NO_AUTH = (
    "rpc-server has no authentication: anyone who reaches {address} can run work on this "
    "machine and read what it holds. Let only the machine that splits the model reach it."
)


@click.group("rpc-server")
def rpc_server() -> None:
    """llama.cpp's RPC worker on this machine, for a model split across machines (--rpc)."""


@rpc_server.command("start")
@click.argument("address", metavar="HOST:PORT")
@click.option("--threads", "-t", type=click.IntRange(1), help="CPU threads (default: half).")
@click.option("--cache", is_flag=True, help="Keep large tensors in llama.cpp's local cache.")
@click.option("--device", "devices", multiple=True, help="A device to offer (CUDA0, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the worker as JSON.")
@click.pass_context
def start_rpc_server(
    ctx: click.Context,
    address: str,
    threads: int | None,
    cache: bool,
    devices: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run rpc-server bound to HOST:PORT only: the address the other machine reaches this one
    on (never 0.0.0.0). Give `HOST:PORT` to `engines start ... --rpc` there."""
    from roundhouse.api.rpc import RpcServerRequest
    from roundhouse.cli.output import console, err_console, fail, print_json

    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        fail(f"Give the address as HOST:PORT, such as 192.168.1.20:50052, not {address!r}.")
    request = RpcServerRequest(
        host=host.strip("[]"),
        port=int(port),
        threads=threads,
        cache=cache,
        devices=list(devices),
        owner="cli",
    )

    async def main() -> RpcServerInfo:
        async with daemon_client(ctx) as client:
            return await client.start_rpc_server(request)

    worker = run_async(main())
    if as_json:
        print_json(worker)
        return
    console.print(f"RPC worker {worker.id} listens on {worker.address} (pid {worker.pid}).")
    console.print(
        f"On the other machine: roundhouse engines start llama.cpp -m MODEL --rpc {worker.address}"
    )
    err_console.print(NO_AUTH.format(address=worker.address), highlight=False)


@rpc_server.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_rpc_servers(ctx: click.Context, as_json: bool) -> None:
    """List the rpc-servers the daemon runs: for its split instances and for other machines."""
    show_from_daemon(ctx, as_json, lambda c: c.rpc_servers(), _table)


@rpc_server.command("stop")
@click.argument("worker_id")
@click.pass_context
def stop_rpc_server(ctx: click.Context, worker_id: str) -> None:
    """Stop the rpc-server WORKER_ID (see `engines rpc-server list`)."""
    from roundhouse.cli.output import console

    async def main() -> RpcServerInfo:
        async with daemon_client(ctx) as client:
            return await client.stop_rpc_server(worker_id)

    worker = run_async(main())
    console.print(f"Stopped the RPC worker on {worker.address}.")


def _table(listed: RpcServerList) -> Table:
    from rich.table import Table

    from roundhouse.base.units import format_bytes

    table = Table(title="RPC workers", title_justify="left")
    for column in ("Id", "Address", "For", "Pid", "Free at start"):
        table.add_column(column)
    for worker in listed.rpc_servers:
        free = format_bytes(worker.free_bytes) if worker.free_bytes is not None else "—"
        table.add_row(worker.id, worker.address, worker.owner, str(worker.pid), free)
    return table
