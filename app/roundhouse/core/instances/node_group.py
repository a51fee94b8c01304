"""One instance on several nodes: started in the plan's order, watched as one, stopped together."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from roundhouse.core.engines.vllm_nodes import MultiNodePlan, NodePlan
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.supervise import (
    EngineNotReadyError,
    EngineProcess,
    ExitOutcome,
    Identity,
    Progress,
    ensure_port_free,
)
from roundhouse.core.supervise.readiness import (
    ProbeFailed,
    ProbeTimeout,
    ProcessEnded,
    check_identity,
    wait_ready,
)
from roundhouse.core.supervise.supervisor import DEFAULT_READY_TIMEOUT_S


class NodeHandle(Protocol):
    """A started node, here or on a paired machine: its exit, and how to stop it."""

    pid: int

    @property
    def exited(self) -> asyncio.Future[int]: ...

    async def stop(self, grace_s: float | None = None) -> ExitOutcome: ...

    async def wait(self) -> ExitOutcome: ...


# Starts one node where it lives: `node.name` and `node.address` say where; `log_path` is
# this machine's file for what the node prints.
NodeStarter = Callable[[NodePlan, Path], Awaitable[NodeHandle]]


async def start_node_here(node: NodePlan, log_path: Path) -> NodeHandle:
    """Start one node on this machine (several nodes may share it, as the tests do)."""
    if node.launch is None:
        raise ValueError(f"node {node.rank} runs nothing that Roundhouse starts")
    return await EngineProcess.spawn(node.launch, log_path)


class NodeLostError(RoundhouseError):
    """A node ended while the instance started or served; the others have been stopped."""

    title = "A node of the instance stopped"
    status = 502

    def __init__(self, node: NodePlan, outcome: ExitOutcome, *, starting: bool) -> None:
        when = "while the instance started" if starting else "while the instance served"
        super().__init__(
            f"Node {node.rank} ({node.name}, the {node.role.value}) ended {when}, so the "
            f"model cannot run; the other nodes have been stopped. {outcome}"
        )
        self.node = node
        self.outcome = outcome


@dataclass(frozen=True)
class GroupEnd:
    """How a running group ended: the node that went first, and every node's outcome."""

    first: NodePlan
    outcomes: dict[int, ExitOutcome]
    by_us: bool

    def error(self) -> NodeLostError:
        return NodeLostError(self.first, self.outcomes[self.first.rank], starting=False)


class RunningGroup:
    """Every node of one instance; `end` settles when the first node ends."""

    def __init__(self, plan: MultiNodePlan, handles: dict[int, NodeHandle]) -> None:
        self.plan = plan
        self.handles = handles
        self.ready: Progress | None = None
        self.identity: Identity | None = None
        self._stopping = False

    @property
    def head(self) -> NodeHandle:
        return self.handles[self.plan.head.rank]

    def first_exit(self) -> asyncio.Future[int]:
        """Done with the rank of the first node to end."""
        loop = asyncio.get_running_loop()
        first: asyncio.Future[int] = loop.create_future()
        for rank, handle in self.handles.items():

            def settle(_: asyncio.Future[int], rank: int = rank) -> None:
                if not first.done():
                    first.set_result(rank)

            handle.exited.add_done_callback(settle)
        return first

    async def stop(self) -> dict[int, ExitOutcome]:
        """Stop every node together (signalled in the plan's stop order, awaited as one)."""
        self._stopping = True
        ranks = [r for r in self.plan.stop_order if r in self.handles]
        results = await asyncio.gather(*(self.handles[r].stop() for r in ranks))
        return dict(zip(ranks, results, strict=True))

    async def wait(self) -> GroupEnd:
        """Wait until a node ends; then stop the others and say how each one ended."""
        rank = await self.first_exit()
        stopped_by_us = self._stopping
        outcomes = await self.stop()
        return GroupEnd(self.plan.nodes[rank], outcomes, by_us=stopped_by_us)


async def start_group(
    plan: MultiNodePlan,
    log_dir: Path,
    *,
    start_node: NodeStarter = start_node_here,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    poll_s: float = 0.1,
    headers: dict[str, str] | None = None,
) -> RunningGroup:
    """Start every node in the plan's order and return once the head serves the model.

    The head's API port is checked first; followers start after the head (whose rank 0
    holds the rendezvous) and the head answers only once they all joined. If any node ends
    or the head is not ready in time, every node started is stopped before the error is
    raised: NodeLostError, or the supervisor's EngineNotReadyError.
    """
    head = plan.head
    if head.launch is None:
        raise ValueError("the head node must run vLLM")
    ensure_port_free(head.launch.host, head.launch.port)
    await asyncio.to_thread(log_dir.mkdir, parents=True, exist_ok=True)
    handles: dict[int, NodeHandle] = {}
    group = RunningGroup(plan, handles)
    first: asyncio.Future[int] | None = None
    try:
        for rank in plan.start_order:
            node = plan.nodes[rank]
            if node.launch is None:  # a Ray worker: the user's cluster runs it
                continue
            handles[rank] = await start_node(node, log_dir / f"node-{rank}.log")
        first = group.first_exit()
        async with httpx.AsyncClient(trust_env=False, verify=False, headers=headers) as http:
            group.ready = await wait_ready(
                head.launch, first, http, timeout_s=ready_timeout_s, poll_s=poll_s
            )
            group.identity = await check_identity(head.launch, group.head.pid, http)
    except ProcessEnded:
        assert first is not None
        rank = first.result()
        outcomes = await group.stop()
        raise NodeLostError(plan.nodes[rank], outcomes[rank], starting=True) from None
    except (ProbeFailed, ProbeTimeout) as exc:
        await group.stop()
        raise EngineNotReadyError(
            f"vLLM across {len(plan.nodes)} machines was not ready (last answer: "
            f"{exc.last.last_status}); every node has been stopped. A large model on a slow "
            "disk or network may need a longer start timeout."
        ) from None
    except BaseException:
        # Cancellation, identity, a node that could not start: nothing may be left.
        with contextlib.suppress(Exception):
            await group.stop()
        raise
    return group
