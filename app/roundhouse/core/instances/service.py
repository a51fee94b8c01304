"""The daemon's instances as users see them: start in the background, watch, restart, stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    EngineSpec,
    InstanceOptions,
    LaunchParams,
)
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.api.instance_memory import InstanceMemory
from roundhouse.api.instances import (
    AddEndpointRequest,
    ExitInfo,
    InstanceInfo,
    InstanceLogs,
    InstanceMetrics,
    InstanceOrigin,
    InstanceStatus,
    StartRequest,
)
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.engines.attach import find_running_engines, probe_openai_endpoint
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.engines.metrics import fetch_metrics
from roundhouse.core.errors import ConflictError, NotFoundError, RoundhouseError
from roundhouse.core.instances.endpoints import EndpointStore, SavedEndpoint, endpoint_id
from roundhouse.core.instances.manager import (
    Instance,
    InstanceManager,
    new_instance_id,
    terminate_tree,
)
from roundhouse.core.instances.memory import InventoryGetter, MemoryReader
from roundhouse.core.instances.presets import PresetStore
from roundhouse.core.ports import bind_listener
from roundhouse.core.supervise import (
    EngineExitedError,
    EngineNotReadyError,
    EngineProcess,
    ExitOutcome,
    Phase,
    Progress,
    RestartPolicy,
    ensure_port_free,
)

log = logging.getLogger(__name__)

# Finds the installed engine for an id, or raises NotFoundError saying how to install it.
EngineResolver = Callable[[EngineId], Awaitable[tuple[EngineSpec, DetectedEngine]]]
# Finds engines already running that are not ours (the pids given are ours).
Scanner = Callable[[frozenset[int]], Awaitable[list[ExternalEngine]]]
# Reads, writes and deletes secrets (the OS keyring); blocking calls.
SecretGet = Callable[[str], "str | None"]
SecretSet = Callable[[str, str], None]
SecretDelete = Callable[[str], bool]
# An engine we did not start gets this long to stop after SIGTERM.
EXTERNAL_STOP_GRACE_S = 10.0


async def scan_this_machine(ours: frozenset[int]) -> list[ExternalEngine]:
    return await find_running_engines(exclude_pids=ours)


# Failed instances stay listed (with why) until dismissed; only the latest few.
MAX_FAILED_KEPT = 20
HEALTH_INTERVAL_S = 10.0
# LogCapture's file lines start with "2026-11-21 12:53:12,123 ".
_FILE_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


@dataclass
class _Entry:
    id: str
    engine: EngineId
    origin: InstanceOrigin
    status: InstanceStatus
    host: str
    port: int
    base_url: str
    started_at: float
    options: InstanceOptions | None = None
    spec: EngineSpec | None = None
    detected: DetectedEngine | None = None
    model: str | None = None
    pid: int | None = None
    argv: tuple[str, ...] = ()
    log_path: str | None = None
    ready_at: float | None = None
    progress: Progress | None = None
    restarts: int = 0
    last_exit: ExitOutcome | None = None
    error: str | None = None
    models: tuple[str, ...] = ()
    process: EngineProcess | None = None
    instance: Instance | None = None
    task: asyncio.Task[None] | None = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    ended_at: float = 0.0
    generation: int = 0
    found_by: AttachSource | None = None
    name: str | None = None
    needs_api_key: bool = False
    # An added endpoint saved with a key in the keyring: only then is the keyring read.
    has_key: bool = False
    probe_status: str | None = None
    # What the engine allocated at its last load, beside the estimate.
    memory: InstanceMemory | None = None


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
        self._memory = MemoryReader(inventory)
        self.presets = presets
        self._resolve = resolve
        self._endpoints = endpoints
        self._scanner = scanner
        self._secrets = secrets
        self._scan_lock = asyncio.Lock()
        self._new_policy = restart_policy
        self._entries: dict[str, _Entry] = {}
        self._recovered = asyncio.Event()
        self._health_task: asyncio.Task[None] | None = None
        self._closing = False
        self.health_interval_s = HEALTH_INTERVAL_S

    # -- start --------------------------------------------------------------------------

    async def start(self, request: StartRequest) -> InstanceInfo:
        """Check the request, then start the engine in the background; it is listed at once.

        Raises at once what can be known before launch: an engine that is not installed,
        options it refuses, a taken port. The rest shows in the instance's status.
        """
        await self._recovered.wait()
        if self._closing:
            raise ConflictError("The daemon is stopping; start the engine after it restarts.")
        options = self._options(request)
        spec, detected = await self._resolve(request.engine)
        port = request.port or _free_port(request.host)
        params = LaunchParams(**options.model_dump(), host=request.host, port=port)
        plan = build_launch(spec, detected, params, hf_hub_cache=self._manager.hf_cache())
        await asyncio.to_thread(ensure_port_free, request.host, port)
        entry = _Entry(
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
        )
        self._entries[entry.id] = entry
        # The user's own port is kept on restarts; a free one is chosen again if it was ours.
        entry.task = asyncio.create_task(
            self._run(entry, fixed_port=request.port is not None), name=f"instance-{entry.id}"
        )
        return self.info(entry.id)

    def _options(self, request: StartRequest) -> InstanceOptions:
        if request.preset is None:
            return request.options
        if request.options.model is None:
            raise NotFoundError("A preset belongs to a model: give the model with the preset.")
        preset = self.presets.get(request.engine, request.options.model, request.preset)
        return preset.options.model_copy(update={"model": request.options.model})

    async def _run(self, entry: _Entry, *, fixed_port: bool) -> None:
        """Start, wait for the end, restart transient failures; the entry's life in a task."""
        assert entry.spec is not None and entry.detected is not None
        assert entry.options is not None
        while True:
            entry.status = InstanceStatus.STARTING
            entry.progress = None
            entry.memory = None
            hardware = self._memory.snapshot(entry.engine)
            params = LaunchParams(**entry.options.model_dump(), host=entry.host, port=entry.port)
            try:
                try:
                    instance = await self._manager.start(
                        entry.spec,
                        entry.detected,
                        params,
                        instance_id=entry.id,
                        on_progress=lambda p: _on_progress(entry, p),
                        on_spawn=lambda p: _on_spawn(entry, p),
                    )
                except BaseException:
                    # No load to compare with: the inventory read for it is not needed.
                    if hardware is not None:
                        hardware.cancel()
                    raise
            except EngineExitedError as exc:
                outcome = exc.outcome
            except EngineNotReadyError as exc:
                self._fail(entry, exc.detail)
                return
            except RoundhouseError as exc:
                self._fail(entry, exc.detail)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug must show as a failed instance, not vanish
                log.exception("Starting instance %s failed", entry.id)
                self._fail(entry, f"Roundhouse could not start the engine: {exc}")
                return
            else:
                entry.instance = instance
                entry.status = InstanceStatus.READY
                entry.ready_at = time.time()
                entry.models = instance.engine.identity.model_ids if instance.engine else ()
                assert instance.engine is not None
                entry.memory = await self._memory.read(
                    entry.engine, entry.options, instance.engine.process.log, hardware
                )
                outcome = await instance.engine.process.wait()
                entry.instance = None
                if outcome.by_us:
                    return
                await self._manager.forget(entry.id)
            entry.last_exit = outcome
            decision = entry.policy.decide(outcome)
            log.warning(
                "Instance %s (%s) ended: %s; %s",
                entry.id,
                entry.engine.value,
                outcome.message,
                decision.reason,
            )
            if not decision.restart or self._closing:
                self._fail(entry, f"The engine {outcome.message}.")
                return
            entry.status = InstanceStatus.RESTARTING
            entry.restarts += 1
            await asyncio.sleep(decision.delay_s)
            if not fixed_port:
                entry.port = _free_port(entry.host)

    def _fail(self, entry: _Entry, why: str) -> None:
        entry.status = InstanceStatus.FAILED
        entry.error = why
        entry.ended_at = time.time()
        entry.pid = None
        failed = [e for e in self._entries.values() if e.status == InstanceStatus.FAILED]
        failed.sort(key=lambda e: e.ended_at)
        for old in failed[:-MAX_FAILED_KEPT]:
            self._entries.pop(old.id, None)

    # -- look ---------------------------------------------------------------------------

    def all(self, *, memory: bool = True) -> list[InstanceInfo]:
        """Every instance; `memory=False` skips measuring process trees (the gateway routes
        on every request and needs none of it)."""
        entries = sorted(self._entries.values(), key=lambda e: e.started_at)
        return [self.info(e.id, memory=memory) for e in entries]

    def info(self, instance_id: str, *, memory: bool = True) -> InstanceInfo:
        entry = self._entry(instance_id)
        self._check_adopted_alive(entry)
        progress = entry.progress
        last_exit = entry.last_exit
        return InstanceInfo(
            id=entry.id,
            engine=entry.engine,
            model=entry.model,
            origin=entry.origin,
            status=entry.status,
            host=entry.host,
            port=entry.port,
            url=entry.base_url,
            base_url=entry.base_url.rstrip("/") + "/v1",
            pid=entry.pid,
            started_at=entry.started_at,
            ready_at=entry.ready_at,
            waited_s=round(progress.elapsed_s, 1) if progress else None,
            probe_status=progress.last_status if progress else entry.probe_status,
            rss_bytes=(
                _tree_rss(entry.pid) if memory and entry.status != InstanceStatus.FAILED else None
            ),
            restarts=entry.restarts,
            last_exit=_exit_info(last_exit) if last_exit else None,
            error=entry.error,
            models=list(entry.models),
            options=entry.options,
            argv=list(entry.argv),
            log_path=entry.log_path,
            found_by=entry.found_by,
            name=entry.name,
            needs_api_key=entry.needs_api_key,
            memory=entry.memory,
        )

    async def metrics(self, instance_id: str) -> InstanceMetrics:
        """The engine's own metrics (tokens, requests), for engines that serve them."""
        entry = self._entry(instance_id)
        spec = entry.spec or _catalog_spec(entry.engine)
        if spec is None or spec.metrics_path is None:
            raise NotFoundError(
                f"{entry.engine.value} serves no metrics endpoint; Roundhouse measures its "
                "tokens per second at the gateway instead."
            )
        url = entry.base_url.rstrip("/") + spec.metrics_path
        values = await fetch_metrics(url, spec.metric_names)
        return InstanceMetrics(id=entry.id, url=url, values=values, fetched_at=time.time())

    def logs(self, instance_id: str, since: int = 0, limit: int = 500) -> InstanceLogs:
        """Output lines numbered after `since`: from memory, or from the log file for an
        instance an earlier daemon started (its output stopped reaching us then)."""
        entry = self._entry(instance_id)
        if entry.process is not None:
            lines, last, truncated = entry.process.log.since(since, limit)
            return InstanceLogs(
                id=entry.id,
                lines=lines,
                next=last,
                truncated=truncated,
                path=entry.log_path,
                generation=entry.generation,
            )
        lines = _read_log_file(entry.log_path)
        chosen = lines[since : since + max(limit, 0)]
        return InstanceLogs(
            id=entry.id, lines=chosen, next=since + len(chosen), path=entry.log_path
        )

    def running_pids(self) -> set[int]:
        """Pids of the engines this daemon runs (started or adopted), not external ones."""
        return {
            e.pid
            for e in self._entries.values()
            if e.pid is not None and e.origin != InstanceOrigin.EXTERNAL
        }

    def _entry(self, instance_id: str) -> _Entry:
        try:
            return self._entries[instance_id]
        except KeyError:
            raise NotFoundError(
                f"No instance has the id {instance_id!r}. List them with `roundhouse engines ps`."
            ) from None

    def _check_adopted_alive(self, entry: _Entry) -> None:
        if entry.origin != InstanceOrigin.ADOPTED or entry.status == InstanceStatus.FAILED:
            return
        if entry.pid is None or not _running(entry.pid):
            self._fail(
                entry,
                "The engine ended. An earlier Roundhouse daemon started it, so how it "
                "ended is unknown; its log file may say.",
            )

    # -- stop ---------------------------------------------------------------------------

    async def stop(self, instance_id: str, *, force: bool = False) -> InstanceInfo:
        """Stop the instance (gracefully, then its whole tree) and forget it.

        A failed one is only dismissed; an added endpoint is detached. An engine Roundhouse
        did not start is stopped only with `force` (the user confirmed). Returns its last
        state, with how it ended.
        """
        entry = self._entry(instance_id)
        if entry.origin == InstanceOrigin.EXTERNAL:
            await self._stop_external(entry, force)
        elif entry.status != InstanceStatus.FAILED:
            await self._stop_entry(entry)
        info = self.info(instance_id)
        self._entries.pop(instance_id, None)
        return info.model_copy(update={"rss_bytes": None})

    async def _stop_external(self, entry: _Entry, force: bool) -> None:
        if entry.found_by == AttachSource.USER_ENDPOINT:
            await self._forget_endpoint(entry.base_url)
            return
        who = f"pid {entry.pid}" if entry.pid else "an unknown process"
        if not force:
            raise ConflictError(
                f"Roundhouse did not start this {entry.engine.value} ({who} at "
                f"{entry.base_url}), and other programs may use it. Stop it anyway with "
                f"`roundhouse engines stop {entry.id} --force`, or confirm in the app."
            )
        if entry.pid is None:
            raise ConflictError(
                f"The process serving {entry.base_url} is not known (the system hides it), "
                "so Roundhouse cannot stop it: stop it where it was started."
            )
        entry.status = InstanceStatus.STOPPING
        try:
            process = psutil.Process(entry.pid)
        except psutil.NoSuchProcess:
            return
        except psutil.AccessDenied as exc:
            raise ConflictError(
                f"The system does not let Roundhouse stop pid {entry.pid} (another user's?)."
            ) from exc
        await terminate_tree(process, EXTERNAL_STOP_GRACE_S)

    async def restart(self, instance_id: str) -> InstanceInfo:
        """Stop it if it runs, then start it again with the same options and id."""
        entry = self._entry(instance_id)
        if entry.options is None or entry.spec is None:
            raise ConflictError(
                "Roundhouse did not start this instance in this run, so it does not know its "
                "options: stop it and start it again."
            )
        if entry.status != InstanceStatus.FAILED:
            await self._stop_entry(entry)
        entry.error = None
        entry.last_exit = None
        entry.ready_at = None
        entry.policy.reset()
        entry.started_at = time.time()
        entry.task = asyncio.create_task(
            self._run(entry, fixed_port=True), name=f"instance-{entry.id}"
        )
        return self.info(instance_id)

    async def _stop_entry(self, entry: _Entry) -> None:
        entry.status = InstanceStatus.STOPPING
        task, entry.task = entry.task, None
        if task is not None and not task.done() and entry.instance is None:
            # Still starting (or waiting to restart): start_engine stops what it spawned.
            await cancel_and_wait(task)
        with contextlib.suppress(NotFoundError):
            outcome = await self._manager.stop(entry.id)
            if outcome is not None:
                entry.last_exit = outcome
        if task is not None and not task.done():
            await task
        if entry.process is not None and entry.last_exit is None:
            entry.last_exit = entry.process.outcome()
        entry.pid = None

    async def stop_all(self) -> None:
        """Stop every instance; the daemon calls it when it stops."""
        self._closing = True
        if self._health_task is not None:
            self._health_task.cancel()
        entries = [
            e
            for e in self._entries.values()
            if e.status != InstanceStatus.FAILED and e.origin != InstanceOrigin.EXTERNAL
        ]
        results = await asyncio.gather(
            *(self._stop_entry(e) for e in entries), return_exceptions=True
        )
        for entry, result in zip(entries, results, strict=True):
            if isinstance(result, BaseException):
                log.error("Stopping instance %s failed: %s", entry.id, result)
        # Whatever the manager still holds (adopted ones not in entries): stop too.
        await self._manager.stop_all()

    # -- attach ---------------------------------------------------------------------------

    async def scan_external(self) -> list[InstanceInfo]:
        """Look again for engines that run without us, and re-probe added endpoints."""
        async with self._scan_lock:
            ours = frozenset(self.running_pids())
            found, endpoints = await asyncio.gather(self._scanner(ours), self._probe_endpoints())
            for old in [e for e in self._entries.values() if e.origin == InstanceOrigin.EXTERNAL]:
                if old.status != InstanceStatus.STOPPING:
                    self._entries.pop(old.id, None)
            # Ours again, now: an instance may have been spawned while the scan ran (a
            # just-in-time start), and one spawned but not yet recorded is still our child.
            ours = frozenset(self.running_pids())
            for engine in found:
                if engine.pid is not None and (engine.pid in ours or _is_our_child(engine.pid)):
                    continue
                self._add_external(engine)
            for saved, engine in endpoints:
                self._add_external(engine, saved)
        return [
            self.info(e.id) for e in self._entries.values() if e.origin == InstanceOrigin.EXTERNAL
        ]

    async def add_endpoint(self, request: AddEndpointRequest) -> InstanceInfo:
        """Probe an OpenAI-compatible server, remember it (its key in the keyring), list it."""
        if self._endpoints is None:
            raise ConflictError("This daemon keeps no endpoints.")
        engine = await probe_openai_endpoint(request.url, request.api_key)
        saved = SavedEndpoint(
            url=engine.base_url,
            name=request.name or engine.base_url,
            has_key=bool(request.api_key),
        )
        if request.api_key:
            setter = self._secret_fns()[1]
            await asyncio.to_thread(setter, saved.secret_name, request.api_key)
        await asyncio.to_thread(self._endpoints.save, saved)
        return self.info(self._add_external(engine, saved))

    async def endpoint_key(self, instance_id: str) -> str | None:
        """The API key of an added endpoint (for the gateway), None when it has none."""
        entry = self._entry(instance_id)
        if self._endpoints is None or entry.found_by != AttachSource.USER_ENDPOINT:
            return None
        if not entry.has_key:
            # No key was given: a machine without a keyring must still reach it.
            return None
        getter = self._secret_fns()[0]
        return await asyncio.to_thread(getter, f"endpoint:{entry.base_url}")

    async def _probe_endpoints(self) -> list[tuple[SavedEndpoint, ExternalEngine]]:
        if self._endpoints is None:
            return []
        saved = await asyncio.to_thread(self._endpoints.load)

        async def probe(endpoint: SavedEndpoint) -> tuple[SavedEndpoint, ExternalEngine]:
            try:
                key = None
                if endpoint.has_key:
                    key = await asyncio.to_thread(self._secret_fns()[0], endpoint.secret_name)
                return endpoint, await probe_openai_endpoint(endpoint.url, key)
            except RoundhouseError as exc:
                down = ExternalEngine(
                    engine=EngineId.OPENAI_COMPATIBLE,
                    base_url=endpoint.url,
                    found_by=AttachSource.USER_ENDPOINT,
                    healthy=False,
                    status=exc.detail,
                )
                return endpoint, down

        return list(await asyncio.gather(*(probe(e) for e in saved)))

    async def _forget_endpoint(self, url: str) -> None:
        assert self._endpoints is not None
        saved = {e.url: e for e in await asyncio.to_thread(self._endpoints.load)}
        endpoint = saved.get(url)
        await asyncio.to_thread(self._endpoints.remove, url)
        if endpoint is not None and endpoint.has_key:
            with contextlib.suppress(RoundhouseError):
                await asyncio.to_thread(self._secret_fns()[2], endpoint.secret_name)

    def _secret_fns(self) -> tuple[SecretGet, SecretSet, SecretDelete]:
        if self._secrets is not None:
            return self._secrets
        from roundhouse.core import secrets

        return (secrets.get_secret, secrets.set_secret, secrets.delete_secret)

    def _add_external(self, engine: ExternalEngine, saved: SavedEndpoint | None = None) -> str:
        entry_id = endpoint_id(engine.base_url)
        host, _, port = engine.base_url.split("://", 1)[1].split("/", 1)[0].rpartition(":")
        self._entries[entry_id] = _Entry(
            id=entry_id,
            engine=engine.engine,
            origin=InstanceOrigin.EXTERNAL,
            status=InstanceStatus.READY if engine.healthy else InstanceStatus.UNHEALTHY,
            host=host.strip("[]") or "?",
            port=int(port)
            if port.isdigit()
            else (443 if engine.base_url.startswith("https") else 80),
            base_url=engine.base_url,
            started_at=time.time(),
            model=engine.model_ids[0] if engine.model_ids else None,
            models=tuple(engine.model_ids),
            pid=engine.pid,
            argv=tuple(engine.cmdline),
            found_by=engine.found_by,
            name=saved.name if saved else engine.process_name,
            needs_api_key=engine.needs_api_key,
            has_key=saved.has_key if saved else False,
            probe_status=engine.status or None,
        )
        return entry_id

    # -- recover ------------------------------------------------------------------------

    async def recover(self) -> None:
        """Adopt or reap what an earlier daemon left, as the settings say; then accept starts."""
        try:
            recovery = await self._manager.recover()
            for instance in recovery.adopted:
                record = instance.record
                healthy = instance.healthy is not False
                self._entries[record.id] = _Entry(
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
        self._health_task = asyncio.create_task(self._watch_health(), name="instance-health")

    async def _watch_health(self) -> None:
        """Probe serving instances now and then: an engine can hang, or (mlx_lm.server) say
        ready before its model loaded and then fail without exiting; adopted ones send no
        exit to us at all."""
        while not self._closing:
            await asyncio.sleep(self.health_interval_s)
            for entry in list(self._entries.values()):
                self._check_adopted_alive(entry)
                if entry.origin == InstanceOrigin.EXTERNAL:
                    continue  # a scan refreshes those
                if entry.status not in (InstanceStatus.READY, InstanceStatus.UNHEALTHY):
                    continue
                with contextlib.suppress(NotFoundError):
                    healthy = await self._manager.check_health(entry.id)
                    # It may have been stopped while the probe ran.
                    if entry.status in (InstanceStatus.READY, InstanceStatus.UNHEALTHY):
                        entry.status = InstanceStatus.READY if healthy else InstanceStatus.UNHEALTHY


def _catalog_spec(engine: EngineId) -> EngineSpec | None:
    try:
        return load_catalog().spec(engine)
    except KeyError:
        return None


def _on_progress(entry: _Entry, progress: Progress) -> None:
    entry.progress = progress
    if progress.phase == Phase.LOADING and entry.status == InstanceStatus.STARTING:
        entry.status = InstanceStatus.LOADING


def _on_spawn(entry: _Entry, process: EngineProcess) -> None:
    entry.process = process
    entry.generation += 1
    entry.pid = process.pid
    entry.log_path = str(process.log.path)


def _is_our_child(pid: int) -> bool:
    """Whether `pid` descends from this daemon: then we started it, whatever our records
    say yet."""
    try:
        return any(parent.pid == os.getpid() for parent in psutil.Process(pid).parents())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _free_port(host: str) -> int:
    listener = bind_listener(host, 0)
    try:
        port: int = listener.getsockname()[1]
        return port
    finally:
        listener.close()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree_rss(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        root = psutil.Process(pid)
        total = root.memory_info().rss
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return int(total)
    except psutil.Error:
        return None


def _exit_info(outcome: ExitOutcome) -> ExitInfo:
    return ExitInfo(
        kind=outcome.kind.value,
        message=outcome.message,
        returncode=outcome.returncode,
        signal_name=outcome.signal_name,
        transient=outcome.transient,
        by_us=outcome.by_us,
        log_tail=list(outcome.log_tail),
    )


def _read_log_file(path: str | None, keep: int = 2000) -> list[str]:
    if path is None:
        return []
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as handle:
            tail = deque(handle, maxlen=keep)
    except OSError:
        return []
    return [_FILE_STAMP.sub("", line.rstrip("\r\n"), count=1) for line in tail]
