"""vLLM across paired machines: the head's start (facts from each peer, the plan, the group as
one instance) and the peer's side (its facts; a node built here, run only if it is the one
the head planned)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

from roundhouse.api.engine_nodes import (
    PeerNode,
    PeerNodeFacts,
    PeerNodeStart,
    VllmAcrossAnswer,
    VllmAcrossRequest,
    VllmExecutor,
)
from roundhouse.api.engines import DetectedEngine, EngineId, LaunchParams
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.ray_cluster import check_cluster
from roundhouse.core.engines.vllm_nodes import (
    MultiNodePlan,
    NodeInput,
    Ports,
    accelerators,
    node_launch,
    plan_nodes,
    ray_address,
)
from roundhouse.core.errors import ConflictError, InvalidInputError, RoundhouseError
from roundhouse.core.infra.ports import free_port
from roundhouse.core.instances.entries import exit_info
from roundhouse.core.instances.hosted_nodes import HostedNode
from roundhouse.core.instances.remote_nodes import NODES_PATH, group_starter
from roundhouse.core.models.library.places import hub_cache_dir
from roundhouse.core.peers.client import PeerClient, PeerError
from roundhouse.core.peers.store import Peer
from roundhouse.server.services import DaemonServices
from roundhouse.server.vllm_nodes import as_answer, model_here


class NodeRefusedError(RoundhouseError):
    """A paired machine asked for a node this one will not run as asked."""

    title = "Refused"
    status = 403


# -- the peer's side ----------------------------------------------------------------------


async def _vllm_here(services: DaemonServices) -> DetectedEngine | None:
    overview = await services.engines()
    return next((d for d in overview.detection.found if d.id is EngineId.VLLM), None)


async def node_facts(services: DaemonServices, model: str) -> PeerNodeFacts:
    """What this machine offers a paired machine's vLLM group for `model`."""
    return PeerNodeFacts(
        name=services.peers.name,
        hardware=await services.inventory(),
        vllm=await _vllm_here(services),
        has_model=model_here(model, hub_cache_dir(services.settings.models_dir)),
    )


async def start_node(
    services: DaemonServices, owner: str, came_from: str, reached_at: str, asked: PeerNodeStart
) -> HostedNode:
    """Build node `asked.rank` here from this machine's own vLLM and the request's fields, and
    run it only if its command is exactly `asked.argv`: a paired machine chooses which node
    of which group, never the program or its arguments. `came_from` is the caller's address
    (the head's rendezvous must be there); `reached_at` is this machine's address it called."""
    name = services.peers.name
    here = await _vllm_here(services)
    if here is None:
        raise ConflictError(
            f"vLLM is not installed on {name}: install it there (`roundhouse engines install "
            "vllm`) before it can run a node."
        )
    model = asked.options.model or ""
    if not model_here(model, hub_cache_dir(services.settings.models_dir)):
        raise ConflictError(f"{name} does not have {model}: download it there first.")
    if asked.options.extra_args:
        raise NodeRefusedError(
            "A paired machine runs a node with the named options only; extra arguments are "
            "not taken from another machine."
        )
    if asked.master_addr != came_from:
        raise NodeRefusedError(
            f"The head's rendezvous address {asked.master_addr} is not the address the request "
            f"came from ({came_from}); a node joins only the machine that asks for it."
        )
    if asked.address != reached_at:
        raise NodeRefusedError(
            f"The node's address {asked.address} is not this machine's address the request "
            f"reached ({reached_at})."
        )
    inventory = await services.inventory()
    node = NodeInput(
        name=name,
        address=asked.address,
        inventory=inventory,
        has_model=True,
        detected=here,
        interface=asked.interface,
    )
    spec = (await services.engines()).catalog.spec(EngineId.VLLM)
    tp = len(accelerators(inventory)) or 1
    try:
        shared = LaunchParams(**asked.options.model_dump(), port=asked.port).model_copy(
            update={"tensor_parallel": tp, "pipeline_parallel": asked.nnodes}
        )
        launch, _ = node_launch(
            spec,
            node,
            shared,
            rank=asked.rank,
            master_addr=asked.master_addr,
            ports=Ports(master_port=asked.master_port),
        )
    except ValueError as exc:
        raise InvalidInputError(f"The node's options are not ones vLLM takes here: {exc}") from exc
    if launch is None or list(launch.argv) != asked.argv:
        raise NodeRefusedError(
            f"The command asked for is not the one {name} builds for node {asked.rank} with its "
            "own vLLM, so it was not run. Update Roundhouse on both machines to the same "
            "version, and check that vLLM is the same there."
        )
    hub = hub_cache_dir(services.settings.models_dir)
    env = {**launch.env, "HF_HUB_CACHE": str(hub)}
    return await services.instances.hosted_nodes.start(
        owner, asked.group, asked.rank, launch.model_copy(update={"env": env})
    )


def node_answer(node: HostedNode) -> PeerNode:
    ended = None if node.running else exit_info(node.process.outcome())
    return PeerNode(
        id=node.id,
        group=node.group,
        rank=node.rank,
        pid=node.process.pid,
        running=node.running,
        exit=ended,
    )


# -- the head's side ----------------------------------------------------------------------


def _chosen(services: DaemonServices, wanted: list[str]) -> list[Peer]:
    paired = services.peers.store.list()
    chosen: list[Peer] = []
    for want in wanted:
        found = [p for p in paired if p.id == want] or [
            p for p in paired if p.name.casefold() == want.casefold()
        ]
        if not found:
            raise InvalidInputError(
                f"No paired machine is called {want!r}: `roundhouse peers list` shows them."
            )
        if len(found) > 1:
            raise InvalidInputError(
                f"Several paired machines are called {want!r}: name it by its id."
            )
        chosen.append(found[0])
    return chosen


def _address_toward(host: str, port: int) -> str:
    """This machine's address on the route to host:port (what that machine reaches it at)."""
    info = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(info[0], socket.SOCK_DGRAM) as probe:
        probe.connect(info[4])
        address: str = probe.getsockname()[0]
    return address


async def _facts(services: DaemonServices, peer: Peer, model: str) -> PeerNodeFacts:
    try:
        async with services.peers.client(peer.id) as client:
            reply = await client.request("GET", f"{NODES_PATH}/vllm", params={"model": model})
        return PeerNodeFacts.model_validate(reply)
    except PeerError as exc:
        if exc.status == 404:
            raise PeerError(
                f"{peer.name} runs a Roundhouse without vLLM across machines: update it to "
                "this machine's version."
            ) from exc
        raise PeerError(
            f"{peer.name} could not be asked for its GPUs and model: {exc.detail}"
        ) from exc
    except ValueError as exc:
        raise PeerError(
            f"{peer.name} answered in a form this version does not read: update Roundhouse "
            "on both machines to the same version."
        ) from exc


async def start_across(services: DaemonServices, request: VllmAcrossRequest) -> VllmAcrossAnswer:
    """Plan `request` across this machine (the head) and the paired machines, and unless only
    the plan is asked for, start it as one instance. Refusals name each machine and why."""
    model = request.options.model
    if not model:
        raise InvalidInputError("Choose a model for vLLM.")
    if request.options.extra_args:
        raise InvalidInputError(
            "Extra arguments are not sent to other machines: use the named options "
            "(context length, GPU memory share, served name) instead."
        )
    peers = _chosen(services, request.peers)
    if len({p.id for p in peers}) != len(peers):
        raise InvalidInputError("A machine is listed twice: name each machine once.")
    here = await _vllm_here(services)
    name = services.peers.name
    problems: list[str] = []
    if here is None:
        problems.append(
            f"vLLM is not installed on this machine ({name}): install it with `roundhouse "
            "engines install vllm`."
        )
    facts = await asyncio.gather(*(_facts(services, p, model) for p in peers))
    for peer, fact in zip(peers, facts, strict=True):
        if fact.vllm is None:
            problems.append(f"vLLM is not installed on {peer.name}: install it there.")
    if problems:
        raise InvalidInputError(
            "vLLM cannot run this model across these machines: " + " ".join(problems)
        )
    assert here is not None
    hub = hub_cache_dir(services.settings.models_dir)
    head_address = await asyncio.to_thread(_address_toward, peers[0].host, peers[0].port)
    nodes = [
        NodeInput(
            name=name,
            address=head_address,
            inventory=await services.inventory(),
            has_model=model_here(model, hub),
            detected=here,
            hf_hub_cache=str(hub),
        )
    ]
    for peer, fact in zip(peers, facts, strict=True):
        assert fact.vllm is not None
        nodes.append(
            NodeInput(
                name=peer.name,
                address=peer.host,
                inventory=fact.hardware,
                has_model=fact.has_model,
                detected=fact.vllm,
            )
        )
    spec = (await services.engines()).catalog.spec(EngineId.VLLM)
    instance_id, key = services.instances.group_id()
    port = request.port or free_port("127.0.0.1")
    params = LaunchParams(**request.options.model_dump(), port=port)
    ports = Ports(master_port=request.master_port, ray_port=request.ray_port)
    plan = plan_nodes(spec, nodes, params, executor=request.executor, ports=ports, api_key=key)
    answer = as_answer(plan)
    if request.plan_only:
        return VllmAcrossAnswer(plan=answer)
    machines = ", ".join(node.name for node in plan.nodes)
    if request.executor is VllmExecutor.RAY:
        await _ray_cluster_answers(plan, here, ports)
        # Ray runs the workers on the other machines: only the head runs here, and nothing
        # is started or stopped on the paired machines (their `ray start` is the user's).
        starter = group_starter(plan, request.options, instance_id, {})
        workers = ", ".join(node.name for node in plan.followers)
        info = await services.instances.start_group(
            instance_id,
            plan,
            request.options,
            starter,
            name=f"vLLM across {machines}",
            note=f"{plan.notes[0]}; vLLM runs on {name}, which serves the API; the Ray "
            f"cluster runs its workers on {workers} (Roundhouse does not start or stop Ray)",
        )
        return VllmAcrossAnswer(plan=answer, instance=info)
    clients: dict[int, Callable[[], PeerClient]] = {
        rank: _client_of(services, peer) for rank, peer in enumerate(peers, start=1)
    }
    starter = group_starter(plan, request.options, instance_id, clients)
    info = await services.instances.start_group(
        instance_id,
        plan,
        request.options,
        starter,
        name=f"vLLM across {machines}",
        note=f"{plan.notes[0]}; nodes: {machines} (the head, {name}, serves the API)",
    )
    return VllmAcrossAnswer(plan=answer, instance=info)


async def _ray_cluster_answers(plan: MultiNodePlan, here: DetectedEngine, ports: Ports) -> None:
    """Refuse, with the `ray start` line of each machine, unless the Ray cluster vLLM will
    join (RAY_ADDRESS, the head's GCS port) answers with every machine and enough GPUs."""
    starts = [
        f"on {node.name}: {' '.join(node.ray_command)}" for node in plan.nodes if node.ray_command
    ]
    await asyncio.to_thread(
        check_cluster,
        LocalEngineHost(),
        here,
        ray_address(plan.master_addr, ports.ray_port),
        machines=len(plan.nodes),
        gpus_needed=plan.tensor_parallel * plan.pipeline_parallel,
        start_lines=starts,
    )


def _client_of(services: DaemonServices, peer: Peer) -> Callable[[], PeerClient]:
    return lambda: services.peers.client(peer.id)
