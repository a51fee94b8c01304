"""The daemon's instances as users see them: start in the background, watch, restart, stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    EngineSpec,
    InstanceOptions,
    LaunchParams,
)
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceLogs,
    InstanceMetrics,
    InstanceOrigin,
    InstanceStatus,
    LogCount,
    LogCounts,
    StartRequest,
)
from roundhouse.api.rpc import RpcServerInfo, RpcServerRequest
from roundhouse.core.engines.launch import build_launch, keyless
from roundhouse.core.engines.rpc import RpcAddress
from roundhouse.core.engines.vllm_nodes import MultiNodePlan
from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError
from roundhouse.core.infra.ports import free_port
from roundhouse.core.instances.endpoints import EndpointStore
from roundhouse.core.instances.entries import InstanceEntry, InstanceTable
from roundhouse.core.instances.external import (
    ExternalInstances,
    Scanner,
    SecretDelete,
    SecretGet,
    SecretSet,
    scan_this_machine,
)
from roundhouse.core.instances.group_life import run_group
from roundhouse.core.instances.hosted_nodes import HostedNodes
from roundhouse.core.instances.keys import auth_headers
from roundhouse.core.instances.manager import InstanceManager, new_instance_id
from roundhouse.core.instances.memory import InventoryGetter
from roundhouse.core.instances.node_group import NodeStarter
from roundhouse.core.instances.presets import PresetStore
from roundhouse.core.instances.readouts import read_logs, read_metrics
from roundhouse.core.instances.remote_rpc import RemoteRpcWorkers
from roundhouse.core.instances.rpc_workers import RpcWorker, no_rpc_server
from roundhouse.core.instances.runner import InstanceRunner
from roundhouse.core.supervise import RestartPolicy, ensure_port_free

log = logging.getLogger(__name__)

# Finds the installed engine for an id, or raises NotFoundError saying how to install it.
EngineResolver = Callable[[EngineId], Awaitable[tuple[EngineSpec, DetectedEngine]]]

HEALTH_INTERVAL_S = 10.0


class InstanceService:
    """Every instance the daemon knows: started, starting, adopted, and recently failed."""

    def __init__(
        self,
        manager: InstanceManager,
        presets: PresetStore,
        resolve: EngineResolver,
        *,
        restart_policy: Callable[[], RestartPolicy] = RestartPolicy,
        endpoints: EndpointStore | None = None,
        scanner: Scanner = scan_this_machine,
        secrets: tuple[SecretGet, SecretSet, SecretDelete] | None = None,
        inventory: InventoryGetter | None = None,
    ) -> None:
        self._manager = manager
        self._table = InstanceTable()
        self._runner = InstanceRunner(manager, self._table, inventory)
        self.presets = presets
        self._resolve = resolve
        self._external = ExternalInstances(
            self._table, endpoints=endpoints, scanner=scanner, secrets=secrets
        )
        self._new_policy = restart_policy
        self._recovered = asyncio.Event()
        self._health_task: asyncio.Task[None] | None = None
        self.health_interval_s = HEALTH_INTERVAL_S
        # Touched whenever an instance comes, goes or changes what it shows.
        self.changes = self._table.changes
        # Touched when an engine this daemon runs writes output (see log_counts).
        self.log_changes = self._table.log_changes

    # -- start --------------------------------------------------------------------------

    async def start(self, request: StartRequest) -> InstanceInfo:
        """Check the request, then start the engine in the background; it is listed at once.

        Raises at once what can be known before launch: an engine that is not installed,
        options it refuses, a taken port. The rest shows in the instance's status.
        """
        await self._recovered.wait()
        if self._runner.closing:
            raise ConflictError("The daemon is stopping; start the engine after it restarts.")
        options = self._options(request)
        self._manager.check_across(request.engine, options.across)
        spec, detected = await self._resolve(request.engine)
        port = request.port or free_port(request.host, browser_blocked=keyless(request.engine))
        params = LaunchParams(**options.model_dump(), host=request.host, port=port)
        plan = build_launch(spec, detected, params, hf_hub_cache=self._manager.hf_cache())
        await asyncio.to_thread(ensure_port_free, request.host, port)
        entry = InstanceEntry(
            id=new_instance_id(),
            engine=request.engine,
            origin=InstanceOrigin.STARTED,
            status=InstanceStatus.STARTING,
            host=request.host,
            port=port,
            base_url=plan.base_url,
            started_at=time.time(),
            options=options,
            spec=spec,
            detected=detected,
            model=options.model,
            argv=plan.argv,
            policy=self._new_policy(),
            launch_note=request.launch_note,
        )
        self._table.entries[entry.id] = entry
        # The user's own port is kept on restarts; a free one is chosen again if it was ours.
        self._runner.launch(entry, fixed_port=request.port is not None)
        self.changes.touch()
        return self.info(entry.id)

    # -- vLLM across machines (ADR 39) ---------------------------------------------------

    def group_id(self) -> tuple[str, str]:
        """A new instance id for a group, and the key its head will answer (planned with it)."""
        instance_id = new_instance_id()
        return instance_id, self._manager.engine_key(instance_id)

    async def start_group(
        self,
        instance_id: str,
        plan: MultiNodePlan,
        options: InstanceOptions,
        start_node: NodeStarter,
        *,
        name: str,
        note: str,
    ) -> InstanceInfo:
        """List the group as one instance at once and start its nodes in the background; it
        fails as one when any node ends, and stopping it stops every node."""
        await self._recovered.wait()
        if self._runner.closing:
            raise ConflictError("The daemon is stopping; start the engine after it restarts.")
        head = plan.head.launch
        if head is None:
            raise ValueError("the head node must run vLLM")
        await asyncio.to_thread(ensure_port_free, head.host, head.port)
        entry = InstanceEntry(
            id=instance_id,
            engine=EngineId.VLLM,
            origin=InstanceOrigin.STARTED,
            status=InstanceStatus.STARTING,
            host=head.host,
            port=head.port,
            base_url=head.base_url,
            started_at=time.time(),
            # No spec: a restart asks for a new start (the machines may have changed).
            options=options,
            model=options.model,
            argv=head.argv,
            name=name,
            launch_note=note,
        )
        self._table.entries[entry.id] = entry
        entry.task = asyncio.create_task(
            run_group(
                entry,
                self._table,
                plan,
                self._manager.log_dir / f"vllm-{instance_id}",
                start_node,
                headers=auth_headers(self._manager.engine_key(instance_id)),
                ready_timeout_s=self._manager.ready_timeout_s(),
                on_spawn=lambda process: self._runner.spawned(entry, process),
            ),
            name=f"instance-{entry.id}",
        )
        self.changes.touch()
        return self.info(entry.id)

    def borrow_rpc_with(self, remote: RemoteRpcWorkers) -> None:
        """Let llama.cpp instances here split across paired machines (ADR 40)."""
        self._manager.remote_rpc = remote

    @property
    def hosted_nodes(self) -> HostedNodes:
        """The nodes paired machines run here (their groups' followers)."""
        return self._manager.hosted_nodes

    def _options(self, request: StartRequest) -> InstanceOptions:
        if request.preset is None:
            return request.options
        if request.options.model is None:
            raise NotFoundError("A preset belongs to a model: give the model with the preset.")
        preset = self.presets.get(request.engine, request.options.model, request.preset)
        return preset.options.model_copy(update={"model": request.options.model})

    # -- look ---------------------------------------------------------------------------

    def all(self, *, memory: bool = True) -> list[InstanceInfo]:
        """Every instance; `memory=False` skips measuring process trees (the gateway routes
        on every request and needs none of it)."""
        entries = sorted(self._table.entries.values(), key=lambda e: e.started_at)
        return [self.info(e.id, memory=memory) for e in entries]

    def info(self, instance_id: str, *, memory: bool = True) -> InstanceInfo:
        return self._table.info(instance_id, memory=memory)

    async def metrics(self, instance_id: str) -> InstanceMetrics:
        """The engine's own metrics (tokens, requests), for engines that serve them."""
        return await read_metrics(
            self._table.get(instance_id), await self.upstream_key(instance_id)
        )

    def logs(self, instance_id: str, since: int = 0, limit: int = 500) -> InstanceLogs:
        """Output lines numbered after `since`: from memory, or from the log file for an
        instance an earlier daemon started (its output stopped reaching us then)."""
        return read_logs(self._table.get(instance_id), since, limit)

    def log_counts(self) -> LogCounts:
        """How many lines each engine this daemon runs has written (counts, not lines)."""
        return LogCounts(
            instances=[
                LogCount(id=entry.id, generation=entry.generation, lines=entry.process.log.count)
                for entry in self._table.entries.values()
                if entry.process is not None
            ]
        )

    def running_pids(self) -> set[int]:
        """Pids of the engines this daemon runs (started or adopted), not external ones."""
        return self._table.running_pids()

    # -- stop ---------------------------------------------------------------------------

    async def stop(self, instance_id: str, *, force: bool = False) -> InstanceInfo:
        """Stop the instance (gracefully, then its whole tree) and forget it.

        A failed one is only dismissed; an added endpoint is detached. An engine Roundhouse
        did not start is stopped only with `force` (the user confirmed). Returns its last
        state, with how it ended.
        """
        entry = self._table.get(instance_id)
        if entry.origin == InstanceOrigin.EXTERNAL:
            await self._external.stop(entry, force)
        elif entry.status != InstanceStatus.FAILED:
            await self._runner.stop(entry)
        info = self.info(instance_id)
        self._table.entries.pop(instance_id, None)
        self.changes.touch()
        return info.model_copy(update={"rss_bytes": None})

    async def restart(self, instance_id: str) -> InstanceInfo:
        """Stop it if it runs, then start it again with the same options and id."""
        entry = self._table.get(instance_id)
        if entry.spec is None and entry.origin == InstanceOrigin.STARTED and entry.name:
            raise ConflictError(
                "An instance across machines starts anew: stop it and start it again with "
                "`roundhouse engines across` (the machines may have changed since)."
            )
        if entry.options is None or entry.spec is None:
            raise ConflictError(
                "Roundhouse did not start this instance in this run, so it does not know its "
                "options: stop it and start it again."
            )
        if entry.status != InstanceStatus.FAILED:
            await self._runner.stop(entry)
        entry.error = None
        entry.last_exit = None
        entry.ready_at = None
        entry.policy.reset()
        entry.started_at = time.time()
        self._runner.launch(entry, fixed_port=True)
        return self.info(instance_id)

    async def stop_all(self) -> None:
        """Stop every instance; the daemon calls it when it stops."""
        self._runner.closing = True
        if self._health_task is not None:
            self._health_task.cancel()
        entries = [
            e
            for e in self._table.entries.values()
            if e.status != InstanceStatus.FAILED and e.origin != InstanceOrigin.EXTERNAL
        ]
        results = await asyncio.gather(
            *(self._runner.stop(e) for e in entries), return_exceptions=True
        )
        for entry, result in zip(entries, results, strict=True):
            if isinstance(result, BaseException):
                log.error("Stopping instance %s failed: %s", entry.id, result)
        # Whatever the manager still holds (adopted ones not in entries): stop too.
        await self._manager.stop_all()

    # -- RPC workers (llama.cpp's split across machines, ADR 36) ---------------------------

    def rpc_servers(self) -> list[RpcServerInfo]:
        return [_rpc_info(w) for w in self._manager.rpc_workers.list()]

    async def start_rpc_server(self, request: RpcServerRequest) -> RpcServerInfo:
        """Run rpc-server bound to the request's address only, for another machine's instance
        (a paired peer's) to use; it answers once the port accepts."""
        if self._runner.closing:
            raise ConflictError("The daemon is stopping; start the RPC worker after it restarts.")
        _, detected = await self._resolve(EngineId.LLAMA_CPP)
        if not detected.rpc_server:
            raise InvalidInputError(no_rpc_server(detected))
        worker = await self._manager.rpc_workers.start(
            detected.rpc_server,
            RpcAddress(request.host, request.port),
            owner=request.owner,
            threads=request.threads,
            cache=request.cache,
            devices=request.devices,
        )
        return _rpc_info(worker)

    async def stop_rpc_server(self, worker_id: str) -> RpcServerInfo:
        info = _rpc_info(self._manager.rpc_workers.get(worker_id))
        await self._manager.rpc_workers.stop(worker_id)
        return info

    async def stop_rpc_servers_of(self, owner: str) -> None:
        """Stop every worker started for `owner` (a peer unpaired, its instance stopped)."""
        await self._manager.rpc_workers.stop_owned(owner)

    # -- attach ---------------------------------------------------------------------------

    async def scan_external(self) -> list[InstanceInfo]:
        """Look again for engines that run without us, and re-probe added endpoints."""
        return await self._external.scan()

    async def add_endpoint(self, request: AddEndpointRequest) -> InstanceInfo:
        """Probe an OpenAI-compatible server, remember it (its key in the keyring), list it."""
        return await self._external.add_endpoint(request)

    async def upstream_key(self, instance_id: str) -> str | None:
        """The key requests to the instance carry: the engine's own for those Roundhouse
        started (ADR 21), an added endpoint's from the keyring; None when it has none."""
        entry = self._table.get(instance_id)
        if entry.origin == InstanceOrigin.EXTERNAL:
            return await self._external.endpoint_key(instance_id)
        return self._manager.engine_key(instance_id)

    async def check_health(self, instance_id: str) -> bool | None:
        """Whether an engine this daemon runs answers its readiness probe now; None for one
        it does not run (a scan, or its own machine, says how that one is)."""
        try:
            return await self._manager.check_health(instance_id)
        except NotFoundError:
            return None

    async def allow_presets(self, instance_id: str, allowed: bool) -> InstanceInfo:
        """Let an engine Roundhouse did not start serve the models presets start, or not."""
        return await self._external.allow_presets(instance_id, allowed)

    def left_out(self) -> list[str]:
        """Why the last scan left engines out (another user's, beyond loopback), in words."""
        return list(self._external.left_out)

    # -- recover ------------------------------------------------------------------------

    async def recover(self) -> None:
        """Adopt or reap what an earlier daemon left, as the settings say; then accept starts."""
        try:
            recovery = await self._manager.recover()
            for instance in recovery.adopted:
                record = instance.record
                healthy = instance.healthy is not False
                self._table.entries[record.id] = InstanceEntry(
                    id=record.id,
                    engine=record.engine,
                    origin=InstanceOrigin.ADOPTED,
                    status=InstanceStatus.READY if healthy else InstanceStatus.UNHEALTHY,
                    host=record.host,
                    port=record.port,
                    base_url=record.base_url,
                    started_at=record.started_at,
                    model=record.model,
                    pid=record.pid,
                    argv=record.argv,
                    log_path=record.log_path,
                    instance=instance,
                )
            if recovery.adopted or recovery.reaped:
                log.info(
                    "Engines left by an earlier daemon: %d adopted, %d stopped",
                    len(recovery.adopted),
                    len(recovery.reaped),
                )
        except Exception:
            log.exception("Recovering the engines of an earlier daemon failed")
        finally:
            self._recovered.set()
            self.changes.touch()
        self._health_task = asyncio.create_task(self._watch_health(), name="instance-health")

    async def _watch_health(self) -> None:
        """Probe serving instances now and then: an engine can hang, or (mlx_lm.server) say
        ready before its model loaded and then fail without exiting; adopted ones send no
        exit to us at all."""
        while not self._runner.closing:
            await asyncio.sleep(self.health_interval_s)
            for entry in list(self._table.entries.values()):
                self._table.check_adopted_alive(entry)
                if entry.origin == InstanceOrigin.EXTERNAL:
                    continue  # a scan refreshes those
                if entry.status not in (InstanceStatus.READY, InstanceStatus.UNHEALTHY):
                    continue
                with contextlib.suppress(NotFoundError):
                    healthy = await self._manager.check_health(entry.id)
                    # It may have been stopped while the probe ran.
                    if entry.status in (InstanceStatus.READY, InstanceStatus.UNHEALTHY):
                        status = InstanceStatus.READY if healthy else InstanceStatus.UNHEALTHY
                        if status != entry.status:
                            entry.status = status
                            self.changes.touch()


def _rpc_info(worker: RpcWorker) -> RpcServerInfo:
    return RpcServerInfo(
        id=worker.id,
        host=worker.address.host,
        port=worker.address.port,
        address=str(worker.address),
        owner=worker.owner,
        pid=worker.pid,
        started_at=worker.started_at,
        free_bytes=worker.free_bytes,
        total_bytes=worker.total_bytes,
    )
