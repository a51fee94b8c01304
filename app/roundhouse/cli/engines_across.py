"""`roundhouse engines across vllm`: one model across machines, every node's command planned."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundhouse.cli.daemon_link import daemon_client, run_async

if TYPE_CHECKING:
    from roundhouse.api.engine_nodes import NodeGiven, VllmNodesPlan
    from roundhouse.api.hardware import HardwareInventory


def _pairs(values: tuple[str, ...], option: str, what: str) -> dict[str, str]:
    from roundhouse.cli.output import fail

    pairs: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            fail(f"{option} takes NAME={what}, not {value!r}.")
        pairs[name] = rest
    return pairs


def _inventory(name: str, path: str) -> HardwareInventory:
    from pydantic import ValidationError

    from roundhouse.api.hardware import HardwareInventory
    from roundhouse.cli.output import fail

    try:
        return HardwareInventory.model_validate(json.loads(Path(path).read_text("utf-8")))
    except OSError as exc:
        fail(f"The hardware of {name} cannot be read from {path} ({exc.strerror}).")
    except (ValueError, ValidationError):
        fail(
            f"{path} is not a machine's hardware: save it on {name} with "
            "`roundhouse hw --json > FILE`."
        )


def _nodes(opts: dict[str, Any]) -> list[NodeGiven]:
    from roundhouse.api.engine_nodes import NodeGiven
    from roundhouse.cli.output import fail

    hardware = _pairs(opts["hardware"], "--hardware", "FILE")
    interfaces = _pairs(opts["interface"], "--interface", "INTERFACE")
    without = set(opts["without_model"])
    nodes: list[NodeGiven] = []
    for value in opts["node"]:
        name, sep, address = value.partition("@")
        if not sep or not name or not address:
            fail(
                f"--node takes NAME@ADDRESS (the address the other machines reach), not {value!r}."
            )
        inventory = _inventory(name, hardware[name]) if name in hardware else None
        nodes.append(
            NodeGiven(
                name=name,
                address=address,
                inventory=inventory,
                has_model=False if name in without else None,
                interface=interfaces.get(name),
            )
        )
    named = {n.name for n in nodes}
    for option, names in (("--hardware", hardware), ("--interface", interfaces), (
        "--without-model", without)):  # fmt: skip
        unknown = sorted(set(names) - named)
        if unknown:
            fail(f"{option} names {', '.join(unknown)}, which no --node gives.")
    return nodes


@click.command()
@click.argument("engine", type=click.Choice(["vllm"]))
@click.argument("model_arg", metavar="[MODEL]", required=False)
@click.option("--model", "-m", help="A Hugging Face repo id or a model folder.")
@click.option(
    "--peers",
    metavar="PEER,...",
    help="Paired machines (names or ids) to run the other nodes on, this machine being the "
    "head; started as one instance unless --plan.",
)
@click.option(
    "--node",
    multiple=True,
    metavar="NAME@ADDRESS",
    help="Plan only: a machine and the address the others reach it at; the first is the "
    "head, which serves the API. Give one per machine.",
)
@click.option(
    "--hardware",
    multiple=True,
    metavar="NAME=FILE",
    help="Another machine's hardware, saved there with `roundhouse hw --json > FILE` "
    "(a node without it is this machine).",
)
@click.option(
    "--without-model",
    multiple=True,
    metavar="NAME",
    help="Machine NAME lacks the model (this machine's own nodes are looked up here).",
)
@click.option(
    "--interface",
    multiple=True,
    metavar="NAME=INTERFACE",
    help="The network interface of NAME that reaches the others (GLOO/NCCL_SOCKET_IFNAME).",
)
@click.option(
    "--executor",
    type=click.Choice(["mp", "ray"]),
    default="mp",
    show_default=True,
    help="vLLM's own launcher (Roundhouse starts vLLM on every machine), or a Ray cluster "
    "you run already (vLLM starts here only; Ray runs the workers).",
)
@click.option(
    "--ray-port",
    type=click.IntRange(1, 65535),
    default=6379,
    show_default=True,
    help="With --executor ray: the port of the Ray head (`ray start --head --port`).",
)
@click.option(
    "--master-port",
    type=click.IntRange(1, 65535),
    default=29501,
    show_default=True,
    help="The head's rendezvous port (torch.distributed) the other nodes connect to.",
)
@click.option("--port", type=click.IntRange(1, 65535), help="The head's API port.")
@click.option("--served-name", help="Name the model is served as.")
@click.option("--max-model-len", type=click.IntRange(1), help="Context length.")
@click.option(
    "--gpu-memory-utilization",
    type=click.FloatRange(0, 1, min_open=True),
    help="The share of each GPU's memory vLLM may take (0-1).",
)
@click.option("--extra-arg", "extra_args", multiple=True, help="Pass one more argument as is.")
@click.option("--plan", is_flag=True, help="Print every node's command; start nothing.")
@click.option("--no-wait", is_flag=True, help="With --peers: return once it is listed.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def across(ctx: click.Context, /, engine: str, **opts: Any) -> None:
    """Split one model across machines with vLLM: tensor parallel inside each machine,
    pipeline parallel across them.

    With --peers, this machine is the head and the paired machines run the other nodes: the
    whole is one instance (`roundhouse engines ps`, stopped with `roundhouse engines stop`).
    Checks that every machine has the same GPUs, a CUDA or ROCm GPU, vLLM and the model,
    and says which machine and why not otherwise. With --executor ray, vLLM runs here only
    and the Ray cluster you run (checked first) runs its workers; Roundhouse does not start
    or stop Ray.
    """
    from pydantic import ValidationError

    from roundhouse.api.engine_nodes import VllmExecutor, VllmNodesRequest
    from roundhouse.api.engines import InstanceOptions
    from roundhouse.cli.output import fail, print_json

    model = opts["model_arg"] or opts["model"]
    if not model:
        fail("Name the model: `roundhouse engines across vllm MODEL --peers PEER,...`.")
    if opts["model_arg"] and opts["model"] and opts["model_arg"] != opts["model"]:
        fail("Name the model once: as MODEL or with --model.")
    if bool(opts["peers"]) == bool(opts["node"]):
        fail(
            "Give the paired machines with --peers PEER,... (this machine is the head), or, to "
            "plan for machines that are not paired, each machine with --node NAME@ADDRESS."
        )
    try:
        options = InstanceOptions(
            model=model,
            served_name=opts["served_name"],
            max_model_len=opts["max_model_len"],
            gpu_memory_utilization=opts["gpu_memory_utilization"],
            extra_args=tuple(opts["extra_args"]),
        )
    except ValidationError as exc:
        fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    if opts["peers"]:
        _across_peers(ctx, options, opts)
        return
    if not opts["plan"]:
        fail(
            "Machines given with --node are planned only (add --plan): pair them "
            "(`roundhouse peers add`) and give them with --peers to start it from here."
        )
    try:
        request = VllmNodesRequest(
            options=options,
            nodes=_nodes(opts),
            executor=VllmExecutor(opts["executor"]),
            master_port=opts["master_port"],
            ray_port=opts["ray_port"],
            port=opts["port"],
        )
    except ValidationError as exc:
        fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))

    async def main() -> VllmNodesPlan:
        async with daemon_client(ctx) as client:
            return await client.plan_vllm_nodes(request)

    plan = run_async(main())
    if opts["as_json"]:
        print_json(plan)
        return
    _show(plan)


def _across_peers(ctx: click.Context, options: Any, opts: dict[str, Any]) -> None:
    """Plan or start the model here (the head) and on the paired machines."""
    from roundhouse.api.engine_nodes import VllmAcrossAnswer, VllmAcrossRequest, VllmExecutor
    from roundhouse.api.instances import InstanceStatus
    from roundhouse.cli.engines_start import _wait_ready
    from roundhouse.cli.output import console, err_console, fail, print_json

    if opts["hardware"] or opts["without_model"] or opts["interface"]:
        fail(
            "With --peers, each machine's hardware, vLLM and models come from the machine "
            "itself: leave out --hardware, --without-model and --interface."
        )
    peers = [p.strip() for p in opts["peers"].split(",") if p.strip()]
    executor = VllmExecutor(opts["executor"])
    request = VllmAcrossRequest(
        options=options,
        peers=peers,
        executor=executor,
        ray_port=opts["ray_port"],
        master_port=opts["master_port"],
        port=opts["port"],
        plan_only=opts["plan"],
    )

    async def main() -> VllmAcrossAnswer:
        async with daemon_client(ctx) as client:
            answer = await client.start_vllm_across(request)
            if answer.instance is None or opts["no_wait"]:
                return answer
            try:
                info = await _wait_ready(client, answer.instance, opts["as_json"])
            except (KeyboardInterrupt, asyncio.CancelledError):
                await client.stop_instance(answer.instance.id)
                raise
            return answer.model_copy(update={"instance": info})

    answer = run_async(main())
    if opts["as_json"]:
        print_json(answer if answer.instance is not None else answer.plan)
        return
    if answer.instance is None:
        _show(answer.plan)
        return
    info = answer.instance
    if info.status == InstanceStatus.FAILED:
        err_console.print(f"[bold red]Error:[/] {info.error}", highlight=False)
        err_console.print(
            f"The instance stays listed as failed; dismiss it with "
            f"`roundhouse engines stop {info.id}`.",
            highlight=False,
        )
        raise SystemExit(1)
    console.print(
        f"Instance [bold]{info.id}[/] ({info.status.value}): {info.name}", highlight=False
    )
    if executor is VllmExecutor.RAY:
        console.print(
            "It is served through this machine's gateway; `roundhouse engines stop "
            f"{info.id}` stops vLLM here. Your Ray cluster runs its workers on the other "
            "machines and keeps running: Roundhouse does not start or stop Ray (`ray stop` "
            "on each machine ends it).",
            highlight=False,
        )
        return
    console.print(
        "It is served through this machine's gateway; stop every node with "
        f"`roundhouse engines stop {info.id}`.",
        highlight=False,
    )


def _show(plan: VllmNodesPlan) -> None:
    from roundhouse.cli.output import console

    console.print(
        f"vLLM on {len(plan.nodes)} machines: tensor parallel {plan.tensor_parallel} "
        f"({plan.gpu_name}) x pipeline parallel {plan.pipeline_parallel}, "
        f"the {plan.executor.value} executor.",
        highlight=False,
    )
    if plan.executor.value == "ray":
        console.print("First run the Ray lines on their machines, then vLLM on the head.")
    else:
        console.print(
            "Run each node's command on its machine, in this order; the head answers once "
            "every other node has joined. Stop them together.",
            highlight=False,
        )
    for line in plan.lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
