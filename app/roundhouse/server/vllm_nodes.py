"""Plan vLLM across machines for the API: the nodes given, this machine's facts, the planner."""

from __future__ import annotations

from pathlib import Path

from roundhouse.api.engine_nodes import NodeCommand, VllmNodesPlan, VllmNodesRequest
from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.common import is_local_path
from roundhouse.core.engines.vllm_nodes import (
    MultiNodePlan,
    NodeInput,
    Ports,
    describe,
    plan_nodes,
)
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra.ports import free_port
from roundhouse.core.models.library.places import hub_cache_dir
from roundhouse.server.services import DaemonServices

# Another machine's vLLM as its own PATH finds it; the pairing will tell the real one.
ELSEWHERE = DetectedEngine(
    id=EngineId.VLLM, found_by=FoundBy.PATH, path="vllm", where="on that machine's PATH"
)


def model_here(model: str, hub_cache: Path) -> bool:
    """Whether this machine holds `model`: a folder or file, or a repository in its Hub cache."""
    if is_local_path(model):
        return Path(model).expanduser().exists()
    return (hub_cache / ("models--" + model.replace("/", "--"))).is_dir()


async def plan_answer(services: DaemonServices, request: VllmNodesRequest) -> VllmNodesPlan:
    """Every node's command for `request`, or InvalidInputError with every reason in words."""
    overview = await services.engines()
    spec = overview.catalog.spec(EngineId.VLLM)
    here = next((d for d in overview.detection.found if d.id is EngineId.VLLM), None)
    inventory = await services.inventory()
    model = request.options.model
    if not model:
        raise InvalidInputError("Choose a model for vLLM.")
    hub = hub_cache_dir(services.settings.models_dir)
    nodes: list[NodeInput] = []
    for given in request.nodes:
        local = given.inventory is None
        if local and here is None:
            raise InvalidInputError(
                f"vLLM is not installed on this machine ({given.name}): install it with "
                "`roundhouse engines install vllm`, or give that node's recorded hardware."
            )
        detected = here if local and here is not None else ELSEWHERE
        has_model = given.has_model
        if has_model is None:
            has_model = model_here(model, hub) if local else True
        nodes.append(
            NodeInput(
                name=given.name,
                address=given.address,
                inventory=given.inventory or inventory,
                has_model=has_model,
                detected=detected,
                interface=given.interface,
                hf_hub_cache=str(hub) if local else None,
            )
        )
    port = request.port or free_port("127.0.0.1")
    params = LaunchParams(**request.options.model_dump(), port=port)
    plan = plan_nodes(
        spec,
        nodes,
        params,
        executor=request.executor,
        ports=Ports(master_port=request.master_port, ray_port=request.ray_port),
    )
    return as_answer(plan)


def as_answer(plan: MultiNodePlan) -> VllmNodesPlan:
    commands = [
        NodeCommand(
            rank=node.rank,
            name=node.name,
            address=node.address,
            role=node.role.value,
            serves_api=node.serves_api,
            argv=list(node.launch.argv) if node.launch else [],
            env=node.launch.redacted_env() if node.launch else {},
            ray_command=list(node.ray_command),
        )
        for node in plan.nodes
    ]
    return VllmNodesPlan(
        executor=plan.executor,
        tensor_parallel=plan.tensor_parallel,
        pipeline_parallel=plan.pipeline_parallel,
        gpu_name=plan.gpu_name,
        master_addr=plan.master_addr,
        master_port=plan.master_port,
        nodes=commands,
        start_order=list(plan.start_order),
        stop_order=list(plan.stop_order),
        notes=list(plan.notes),
        lines=describe(plan),
    )
