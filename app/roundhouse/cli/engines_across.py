"""`roundhouse engines across vllm`: one model across machines, every node's command planned."""

from __future__ import annotations

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
@click.option("--model", "-m", required=True, help="A Hugging Face repo id or a model folder.")
@click.option(
    "--node",
    multiple=True,
    required=True,
    metavar="NAME@ADDRESS",
    help="A machine and the address the others reach it at; the first is the head, which "
    "serves the API. Give one per machine.",
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
    help="vLLM's own launcher, or a Ray cluster you run already.",
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
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def across(ctx: click.Context, /, engine: str, **opts: Any) -> None:
    """Split one model across machines with vLLM: tensor parallel inside each machine,
    pipeline parallel across them.

    Checks that every machine has the same GPUs, a CUDA or ROCm GPU and the model, and
    says why not otherwise.
    """
    from pydantic import ValidationError

    from roundhouse.api.engine_nodes import VllmExecutor, VllmNodesRequest
    from roundhouse.api.engines import InstanceOptions
    from roundhouse.cli.output import fail, print_json

    if not opts["plan"]:
        fail(
            "Starting vLLM across machines from here comes with paired machines; for now add "
            "--plan to print every node's command, and run each on its machine in the "
            "order shown."
        )
    try:
        request = VllmNodesRequest(
            options=InstanceOptions(
                model=opts["model"],
                served_name=opts["served_name"],
                max_model_len=opts["max_model_len"],
                gpu_memory_utilization=opts["gpu_memory_utilization"],
                extra_args=tuple(opts["extra_args"]),
            ),
            nodes=_nodes(opts),
            executor=VllmExecutor(opts["executor"]),
            master_port=opts["master_port"],
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
