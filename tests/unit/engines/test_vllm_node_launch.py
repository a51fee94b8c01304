"""One node's launch as a paired machine builds it again (ADR 39): the same as the plan's,
and a follower's the same wherever it is built (no API server flags chosen per machine)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from roundhouse.api.engines import LaunchParams
from roundhouse.core.engines.vllm_nodes import NodeInput, Ports, node_launch, plan_nodes
from tests.unit.engines.test_vllm_nodes import MODEL, SPEC, h100_box, node


def _nodes() -> list[NodeInput]:
    box = h100_box(2)
    return [node("a", "10.0.0.1", box), node("b", "10.0.0.2", box), node("c", "10.0.0.3", box)]


def test_each_node_built_alone_is_the_plans_node() -> None:
    nodes = _nodes()
    params = LaunchParams(model=MODEL, port=41000, max_model_len=8192)
    ports = Ports(master_port=29600)
    plan = plan_nodes(SPEC, nodes, params, ports=ports, api_key="k")
    shared = params.model_copy(update={"tensor_parallel": 2, "pipeline_parallel": 3})
    for planned, given in zip(plan.nodes, nodes, strict=True):
        key = "k" if planned.rank == 0 else None
        launch, _ = node_launch(
            SPEC, given, shared, rank=planned.rank, master_addr="10.0.0.1", ports=ports,
            api_key=key,
        )  # fmt: skip
        assert launch is not None and planned.launch is not None
        assert launch.argv == planned.launch.argv
        assert launch.env == planned.launch.env


def test_a_followers_command_has_no_chat_parsers_and_is_the_same_on_any_machine(
    tmp_path: Path,
) -> None:
    params = LaunchParams(model=MODEL, port=41000, tool_parser="hermes", reasoning_parser="qwen3")
    plan = plan_nodes(SPEC, _nodes(), params)
    head, follower = plan.nodes[0].launch, plan.nodes[1].launch
    assert head is not None and follower is not None
    assert "--tool-call-parser" in head.argv and "--enable-auto-tool-choice" in head.argv
    assert "--reasoning-parser" in head.argv
    for flag in ("--tool-call-parser", "--enable-auto-tool-choice", "--reasoning-parser"):
        assert flag not in follower.argv, flag
    assert "hermes" not in follower.argv and "qwen3" not in follower.argv
    # Built on a machine with its own models folder: the same command.
    shared = params.model_copy(update={"tensor_parallel": 2, "pipeline_parallel": 3})
    elsewhere = replace(_nodes()[1], hf_hub_cache=str(tmp_path))
    again, _ = node_launch(SPEC, elsewhere, shared, rank=1, master_addr="10.0.0.1")
    assert again is not None and again.argv == follower.argv
