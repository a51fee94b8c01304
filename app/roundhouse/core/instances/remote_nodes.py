"""A node of this machine's vLLM group on a paired machine: started, watched, stopped there."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from roundhouse.api.engine_nodes import PeerNode, PeerNodeStart
from roundhouse.api.engines import InstanceOptions
from roundhouse.api.instances import ExitInfo
from roundhouse.core.engines.vllm_nodes import MultiNodePlan, NodePlan
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.instances.node_group import NodeHandle, NodeStarter, start_node_here
from roundhouse.core.peers.client import PEER_PREFIX, PeerClient, PeerError
from roundhouse.core.supervise import ExitKind, ExitOutcome

log = logging.getLogger(__name__)

NODES_PATH = f"{PEER_PREFIX}/nodes"
# The peer answers a watch after this long while the node runs (well within the client's
# read timeout), so a machine that went away is noticed within a round or two.
WATCH_S = 10.0
# Watches that fail in a row before the node counts as lost (a blip is retried).
LOST_AFTER = 3
RETRY_S = 1.0
# What asking a paired machine may end in besides an answer: said in words, never raised
# out of the watch (a watch that died would leave a lost node unnoticed).
_FAILURES = (RoundhouseError, ValueError, httpx.HTTPError, OSError)


def outcome_of(info: ExitInfo) -> ExitOutcome:
    try:
        kind = ExitKind(info.kind)
    except ValueError:
        kind = ExitKind.ERROR
    return ExitOutcome(
        kind=kind,
        returncode=info.returncode,
        message=info.message,
        transient=info.transient,
        by_us=info.by_us,
        signal_name=info.signal_name,
        log_tail=tuple(info.log_tail),
    )


@dataclass(frozen=True)
class LostOutcome(ExitOutcome):
    """A node whose machine stopped answering: how it ended there is not known."""

    def __str__(self) -> str:
        return f"The node {self.message}."


def _lost(name: str, why: str) -> ExitOutcome:
    return LostOutcome(
        kind=ExitKind.ERROR,
        returncode=None,
        message=f"could not be reached on {name} any more: {why}",
        transient=False,
    )


class RemoteNode:
    """NodeHandle of a node on a paired machine; `open_client` makes a client to it."""

    def __init__(self, open_client: Callable[[], PeerClient], name: str, answer: PeerNode):
        self._open = open_client
        self._name = name
        self.id = answer.id
        self.pid = answer.pid
        loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = loop.create_future()
        self._outcome: ExitOutcome | None = None
        self._stopping = False
        self._stopped: ExitOutcome | None = None
        if answer.exit is not None:
            self._settle(outcome_of(answer.exit))
            self._watch: asyncio.Task[None] | None = None
        else:
            self._watch = loop.create_task(self._follow(), name=f"node-{self.id}")

    @property
    def exited(self) -> asyncio.Future[int]:
        return self._exited

    def _settle(self, outcome: ExitOutcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
        if not self._exited.done():
            code = outcome.returncode if outcome.returncode is not None else -1
            self._exited.set_result(code)

    async def _follow(self) -> None:
        failures = 0
        path = f"{NODES_PATH}/{self.id}"
        while not self._exited.done():
            try:
                async with self._open() as client:
                    reply = await client.request("GET", path, params={"wait": WATCH_S})
                node = PeerNode.model_validate(reply)
                failures = 0
            except _FAILURES as exc:
                if self._stopping:
                    return
                failures += 1
                if failures >= LOST_AFTER:
                    detail = exc.detail if isinstance(exc, RoundhouseError) else str(exc)
                    self._settle(_lost(self._name, detail))
                    return
                await asyncio.sleep(RETRY_S)
                continue
            if node.exit is not None:
                self._settle(outcome_of(node.exit))

    async def stop(self, grace_s: float | None = None) -> ExitOutcome:
        """Stop the node there; its outcome (or, unreachable, why it is not known). Once
        stopped, asking again answers the same."""
        if self._stopped is not None:
            return self._stopped
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._exited.done() and self._outcome is not None and not self._outcome.by_us:
            # Ended by itself: ask the peer to forget it too, keep how it ended.
            with contextlib.suppress(*_FAILURES):
                async with self._open() as client:
                    await client.request("DELETE", f"{NODES_PATH}/{self.id}")
            self._stopped = self._outcome
            return self._outcome
        try:
            async with self._open() as client:
                reply = await client.request("DELETE", f"{NODES_PATH}/{self.id}")
            node = PeerNode.model_validate(reply)
            outcome = outcome_of(node.exit) if node.exit else _lost(self._name, "no exit")
        except _FAILURES as exc:
            detail = exc.detail if isinstance(exc, RoundhouseError) else str(exc)
            log.warning("Stopping node %s on %s: %s", self.id, self._name, detail)
            outcome = _lost(self._name, detail)
        self._outcome = self._stopped = outcome
        self._settle(outcome)
        return outcome

    async def wait(self) -> ExitOutcome:
        await asyncio.shield(self._exited)
        assert self._outcome is not None
        return self._outcome


def group_starter(
    plan: MultiNodePlan,
    options: InstanceOptions,
    group: str,
    clients: dict[int, Callable[[], PeerClient]],
    interfaces: dict[int, str | None] | None = None,
) -> NodeStarter:
    """Starts each node where it lives: ranks in `clients` on their paired machine, the
    rest here. A peer runs a node only once it built the same command itself."""

    async def start(node: NodePlan, log_path: Path) -> NodeHandle:
        open_client = clients.get(node.rank)
        if open_client is None:
            return await start_node_here(node, log_path)
        assert node.launch is not None
        head = plan.head.launch
        assert head is not None
        asked = PeerNodeStart(
            group=group,
            rank=node.rank,
            nnodes=len(plan.nodes),
            master_addr=plan.master_addr,
            master_port=plan.master_port,
            address=node.address,
            interface=(interfaces or {}).get(node.rank),
            port=head.port,
            options=options,
            argv=list(node.launch.argv),
        )
        try:
            async with open_client() as client:
                reply = await client.request(
                    "POST", f"{NODES_PATH}/vllm", json=asked.model_dump(mode="json")
                )
        except PeerError as exc:
            raise PeerError(f"{node.name} did not start node {node.rank}: {exc.detail}") from exc
        return RemoteNode(open_client, node.name, PeerNode.model_validate(reply))

    return start
