"""Nodes of another machine's vLLM group run here: by owner, kept with their exit, stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from roundhouse.api.engines import LaunchPlan
from roundhouse.core.errors import ConflictError, NotFoundError
from roundhouse.core.supervise import EngineProcess, ExitOutcome

log = logging.getLogger(__name__)

# A node whose flags its vLLM refuses ends at once: waited for before answering, so the
# head hears it from the start call rather than from the watch.
EARLY_EXIT_S = 0.5
# Ended nodes are kept until their owner reads them or stops them; only the latest few.
MAX_ENDED_KEPT = 20


@dataclass
class HostedNode:
    """One node run here for a paired machine (`owner`, its peer id)."""

    id: str
    owner: str
    group: str
    rank: int
    process: EngineProcess
    started_at: float

    @property
    def running(self) -> bool:
        return not self.process.exited.done()


class HostedNodes:
    """The nodes paired machines asked this one to run; each visible to its owner only."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._nodes: dict[str, HostedNode] = {}

    def all(self) -> list[HostedNode]:
        return sorted(self._nodes.values(), key=lambda n: n.started_at)

    async def start(self, owner: str, group: str, rank: int, launch: LaunchPlan) -> HostedNode:
        """Run `launch` (built here, never taken from the network) as node `rank` of `group`."""
        taken = [n for n in self._nodes.values() if n.group == group and n.rank == rank]
        if any(n.running for n in taken):
            raise ConflictError(f"Node {rank} of group {group} runs here already.")
        for old in taken:
            self._nodes.pop(old.id, None)
        await asyncio.to_thread(self._log_dir.mkdir, parents=True, exist_ok=True)
        # Named as the instances' logs are (`<name>-<12 hex>.log`): pruned as theirs are.
        log_path = self._log_dir / f"vllm-node{rank}-{group}.log"
        process = await EngineProcess.spawn(launch, log_path)
        node = HostedNode(uuid.uuid4().hex[:12], owner, group, rank, process, time.time())
        self._nodes[node.id] = node
        self._prune()
        log.info(
            "Node %d of %s's vLLM group %s runs here (pid %d)", rank, owner, group, node.process.pid
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.exited), EARLY_EXIT_S)
        return node

    def log_names(self) -> set[str]:
        """The log file names of the nodes kept here (never pruned while kept)."""
        return {node.process.log.path.name for node in self._nodes.values()}

    def get(self, owner: str, node_id: str) -> HostedNode:
        """The node if `owner` started it; another machine's node is not found, not refused."""
        node = self._nodes.get(node_id)
        if node is None or node.owner != owner:
            raise NotFoundError(f"This machine runs no node {node_id!r} for the caller.")
        return node

    async def wait(self, owner: str, node_id: str, timeout_s: float) -> HostedNode:
        """The node once it ended, or after `timeout_s` while it runs."""
        node = self.get(owner, node_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(node.process.exited), timeout_s)
        if not node.running:
            await node.process.wait()  # its last lines read, for the outcome's tail
        return node

    async def stop(self, owner: str, node_id: str) -> tuple[HostedNode, ExitOutcome]:
        """Stop the node (gracefully, then its tree) and forget it."""
        node = self.get(owner, node_id)
        outcome = await node.process.stop()
        self._nodes.pop(node.id, None)
        return node, outcome

    async def stop_owned(self, owner: str) -> None:
        """Stop every node `owner` started (it unpaired, or is forgotten)."""
        await self._stop([n for n in self._nodes.values() if n.owner == owner])

    def keep_only(self, owners: set[str]) -> None:
        """Stop, in the background, the nodes of machines no longer paired."""
        gone = [n for n in self._nodes.values() if n.owner not in owners]
        if gone:
            for node in gone:
                log.info(
                    "Stopping node %d of group %s: its machine is unpaired", node.rank, node.group
                )
            task = asyncio.get_running_loop().create_task(self._stop(gone), name="unpaired-nodes")
            _background.add(task)
            task.add_done_callback(_background.discard)

    async def stop_all(self) -> None:
        await self._stop(list(self._nodes.values()))

    async def _stop(self, nodes: list[HostedNode]) -> None:
        for node in nodes:
            self._nodes.pop(node.id, None)
        results = await asyncio.gather(*(n.process.stop() for n in nodes), return_exceptions=True)
        for node, result in zip(nodes, results, strict=True):
            if isinstance(result, BaseException):
                log.error("Stopping node %d of group %s failed: %s", node.rank, node.group, result)

    def _prune(self) -> None:
        ended = [n for n in self._nodes.values() if not n.running]
        ended.sort(key=lambda n: n.started_at)
        for node in ended[:-MAX_ENDED_KEPT]:
            self._nodes.pop(node.id, None)


# Tasks started from a plain callback: held so they are not collected while they run.
_background: set[asyncio.Task[None]] = set()
