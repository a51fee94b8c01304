"""A vLLM group across machines as one instance: its entry follows the group from start to end."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from roundhouse.api.instances import InstanceStatus
from roundhouse.core.engines.vllm_nodes import MultiNodePlan, NodePlan
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.instances.entries import InstanceEntry, InstanceTable
from roundhouse.core.instances.node_group import NodeHandle, NodeStarter, RunningGroup, start_group
from roundhouse.core.supervise import EngineProcess

log = logging.getLogger(__name__)


async def run_group(
    entry: InstanceEntry,
    table: InstanceTable,
    plan: MultiNodePlan,
    log_dir: Path,
    start_node: NodeStarter,
    *,
    headers: dict[str, str],
    ready_timeout_s: float,
    on_spawn: Callable[[EngineProcess], None],
) -> None:
    """Start the group, mark the entry ready, and fail it when any node ends; a cancel (the
    user stopped it) stops every node, here and on the paired machines."""

    async def starting(node: NodePlan, log_path: Path) -> NodeHandle:
        handle = await start_node(node, log_path)
        if node.rank == plan.head.rank and isinstance(handle, EngineProcess):
            on_spawn(handle)  # the head's log is the instance's
        return handle

    group: RunningGroup | None = None
    try:
        try:
            group = await start_group(
                plan, log_dir, start_node=starting, headers=headers, ready_timeout_s=ready_timeout_s
            )
        except RoundhouseError as exc:
            table.fail(entry, exc.detail)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must show as a failed instance, not vanish
            log.exception("Starting the vLLM group %s failed", entry.id)
            table.fail(entry, f"Roundhouse could not start the nodes: {exc}")
            return
        entry.status = InstanceStatus.READY
        entry.ready_at = time.time()
        if group.identity is not None:
            entry.models = group.identity.model_ids
        table.changes.touch()
        end = await group.wait()
        if end.by_us:
            return
        entry.last_exit = end.outcomes[end.first.rank]
        log.warning("vLLM group %s ended: %s", entry.id, end.error().detail)
        table.fail(entry, end.error().detail)
    except asyncio.CancelledError:
        if group is not None:
            # Stopping must finish even though this task is being cancelled.
            await asyncio.shield(group.stop())
        raise
