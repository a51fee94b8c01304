"""Start, list, stop engine instances, and find at daemon start the ones a dead daemon left."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

import httpx
import psutil

from roundhouse.api.engines import DetectedEngine, EngineId, EngineSpec, LaunchParams
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.engines.rpc import parse_rpc_list
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.instances.hosted_nodes import HostedNodes
from roundhouse.core.instances.keys import EngineKeys, auth_headers
from roundhouse.core.instances.logprune import DEFAULT_LIMITS, LogLimits, prune_engine_logs
from roundhouse.core.instances.records import InstanceRecord, RecordStore
from roundhouse.core.instances.remote_rpc import RemoteRpcWorkers
from roundhouse.core.instances.rpc_workers import RpcWorkers, accepts, no_rpc_server
from roundhouse.core.supervise import EngineProcess, ExitOutcome, RunningEngine, start_engine
from roundhouse.core.supervise.process import REAP_TIMEOUT_S
from roundhouse.core.supervise.readiness import ProgressCallback
from roundhouse.core.supervise.recorded import recorded_process
from roundhouse.core.supervise.supervisor import DEFAULT_READY_TIMEOUT_S

log = logging.getLogger(__name__)

OnLeftover = Literal["adopt", "reap"]

HEALTH_TIMEOUT_S = 5.0


class InstanceState(StrEnum):
    # Started by this daemon: its output is captured and its exit observed.
    RUNNING = "running"
    # Started by an earlier daemon that died: still serving, but its stdout went with that
    # daemon (the pipe's read end is closed), so no log lines and no exit status reach us.
    ADOPTED = "adopted"


@dataclass
class Instance:
    record: InstanceRecord
    state: InstanceState
    # Only for RUNNING: the process we spawned, with its log and exit.
    engine: RunningEngine | None = None
    # Only for ADOPTED: the last health probe's answer (None: not probed yet).
    healthy: bool | None = None
    _process: psutil.Process | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def pid(self) -> int:
        return self.record.pid


@dataclass(frozen=True)
class Recovery:
    """What `recover` did with each record it found."""

    adopted: tuple[Instance, ...] = ()
    reaped: tuple[InstanceRecord, ...] = ()
    # The pid is gone or belongs to another process now: only the record was dropped.
    stale: tuple[InstanceRecord, ...] = ()


class InstanceManager:
    """The engine instances of one daemon, persisted in `state_dir`, logging into `log_dir`.

    `on_leftover` says what `recover` does with engines an earlier daemon left running:
    "adopt" keeps them serving, "reap" stops them.
    """

    def __init__(
        self,
        state_dir: Path,
        log_dir: Path,
        *,
        on_leftover: OnLeftover,
        ready_timeout_s: float | Callable[[], float] = DEFAULT_READY_TIMEOUT_S,
        hf_hub_cache: Path | None = None,
        media_domains: Callable[[], Sequence[str]] = tuple,
        keys: EngineKeys | None = None,
        log_limits: LogLimits = DEFAULT_LIMITS,
        rpc_workers: RpcWorkers | None = None,
    ) -> None:
        if on_leftover not in ("adopt", "reap"):
            raise ValueError(f"on_leftover must be 'adopt' or 'reap', not {on_leftover!r}")
        self._store = RecordStore(state_dir)
        self._log_dir = log_dir
        self._log_limits = log_limits
        # Log file names of starts not yet recorded: pruning must not take them either.
        self._starting: set[str] = set()
        self._on_leftover = on_leftover
        # A callable is read at each start: a changed setting applies to the next start.
        self._ready_timeout_s = (
            ready_timeout_s if callable(ready_timeout_s) else (lambda: ready_timeout_s)
        )
        # Where engines that read the Hugging Face cache find models (Roundhouse's models
        # folder); it is created, as mlx_lm.server cannot list models without it.
        self._hf_hub_cache = hf_hub_cache
        # The hosts engines that can be told may fetch media from, read at each start.
        self._media_domains = media_domains
        self._instances: dict[str, Instance] = {}
        self._save_lock = asyncio.Lock()
        # Every engine this daemon starts answers only its instance's key (ADR 21).
        self._keys = keys or EngineKeys(state_dir)
        # The rpc-servers of split instances (ADR 36), and those the API started for a peer.
        self.rpc_workers = rpc_workers or RpcWorkers(log_dir, state_dir)
        # The vLLM nodes paired machines asked this one to run (ADR 39).
        self.hosted_nodes = HostedNodes(log_dir)
        # The rpc-servers paired machines lend to instances here (ADR 40); set by the
        # composition root, which knows the paired machines.
        self.remote_rpc: RemoteRpcWorkers | None = None

    async def start(
        self,
        spec: EngineSpec,
        detected: DetectedEngine,
        params: LaunchParams,
        *,
        on_progress: ProgressCallback | None = None,
        instance_id: str | None = None,
        on_spawn: Callable[[EngineProcess], None] | None = None,
    ) -> Instance:
        """Start an instance, wait until it serves, and record it before returning it.

        `instance_id` keeps the id of an instance being restarted; None makes a new one.
        Raises what `build_launch` and `start_engine` raise; nothing is left running then.
        """
        instance_id = instance_id or new_instance_id()
        key = await asyncio.to_thread(self._keys.key_for, instance_id)
        # Paired machines' workers first (ADR 40): their relays become --rpc addresses.
        params = await self._borrow_rpc(instance_id, spec, params)
        try:
            plan = build_launch(
                spec,
                detected,
                params,
                api_key=key,
                hf_hub_cache=self.hf_cache(),
                media_domains=self._media_domains(),
            )
        except BaseException:
            await self._release_workers(instance_id)
            raise
        log_path = self._log_dir / f"{plan.engine.value}-{instance_id}.log"
        self._starting.add(log_path.name)
        try:
            await self.prune_logs()
            # The workers first: llama-server connects to each one as it loads.
            await self._start_rpc_workers(instance_id, detected, params)
            running = await start_engine(
                plan,
                log_path,
                ready_timeout_s=self._ready_timeout_s(),
                headers=auth_headers(key),
                on_progress=on_progress,
                on_spawn=on_spawn,
            )
        except BaseException:
            # A failed or cancelled start leaves no worker behind either.
            await self._release_workers(instance_id)
            raise
        finally:
            self._starting.discard(log_path.name)
        process = running.process
        record = InstanceRecord(
            id=instance_id,
            engine=plan.engine,
            model=params.model,
            host=plan.host,
            port=plan.port,
            pid=process.pid,
            create_time=process.create_time,
            argv=plan.argv,
            log_path=str(log_path),
            started_at=process.started_at,
            base_url=plan.base_url,
            probe_url=plan.probe_url,
            ready_status=plan.readiness.ready_status,
            stop_grace_s=plan.stop_grace_s,
        )
        instance = Instance(record, InstanceState.RUNNING, engine=running)
        self._instances[instance_id] = instance
        try:
            await self._save()
        except BaseException:
            # An engine no record names would outlive a crash unseen: never run one.
            self._instances.pop(instance_id, None)
            with contextlib.suppress(Exception):
                await process.stop()
            await self._release_workers(instance_id)
            raise
        return instance

    def check_across(self, engine: EngineId, across: Sequence[str]) -> None:
        """Refuse at once, in words, a split across machines this daemon cannot make."""
        if not across:
            return
        if engine is not EngineId.LLAMA_CPP:
            raise InvalidInputError(
                "Only llama.cpp splits a model across paired machines by RPC, not "
                f"{engine.value}: for vLLM use `roundhouse engines across vllm`."
            )
        if self.remote_rpc is None:
            raise InvalidInputError("This daemon has no paired machines to split across.")
        self.remote_rpc.check(across)

    async def _borrow_rpc(
        self, instance_id: str, spec: EngineSpec, params: LaunchParams
    ) -> LaunchParams:
        if not params.across:
            return params
        self.check_across(spec.id, params.across)
        assert self.remote_rpc is not None
        return await self.remote_rpc.lease(instance_id, params)

    async def _release_workers(self, instance_id: str) -> None:
        """Stop the instance's own workers and give back those paired machines lent it."""
        await self.rpc_workers.stop_owned(instance_id)
        if self.remote_rpc is not None:
            await self.remote_rpc.release(instance_id)

    async def _start_rpc_workers(
        self, instance_id: str, detected: DetectedEngine, params: LaunchParams
    ) -> None:
        """Start an rpc-server on each of the instance's loopback RPC addresses that nothing
        listens on yet; one that answers (the user's own, another machine's) is used as is."""
        for address in parse_rpc_list(params.rpc):
            if not address.loopback or await asyncio.to_thread(accepts, address):
                continue
            if not detected.rpc_server:
                raise InvalidInputError(no_rpc_server(detected))
            await self.rpc_workers.start(detected.rpc_server, address, owner=instance_id)

    @property
    def log_dir(self) -> Path:
        return self._log_dir

    def ready_timeout_s(self) -> float:
        return self._ready_timeout_s()

    def engine_key(self, instance_id: str) -> str:
        """The key the instance's engine was started with (its id's, from the seed)."""
        return self._keys.key_for(instance_id)

    def hf_cache(self) -> str | None:
        if self._hf_hub_cache is None:
            return None
        try:
            self._hf_hub_cache.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("Cannot create the models folder %s: %s", self._hf_hub_cache, exc)
            return None
        return str(self._hf_hub_cache)

    def list(self) -> list[Instance]:
        return sorted(self._instances.values(), key=lambda i: i.record.started_at)

    def get(self, instance_id: str) -> Instance:
        try:
            return self._instances[instance_id]
        except KeyError:
            raise NotFoundError(f"No running instance has the id {instance_id!r}.") from None

    async def stop(self, instance_id: str, grace_s: float | None = None) -> ExitOutcome | None:
        """Stop the instance (gracefully, then kill its tree) and drop its record.

        Returns how it ended; None for an adopted one, whose exit status only its parent
        (the dead daemon, now init) could read.
        """
        instance = self.get(instance_id)
        grace = instance.record.stop_grace_s if grace_s is None else grace_s
        outcome: ExitOutcome | None = None
        if instance.engine is not None:
            outcome = await instance.engine.process.stop(grace)
        elif instance._process is not None:
            await terminate_tree(instance._process, grace)
        # After llama-server: it holds a connection to each worker until it ends.
        await self._release_workers(instance_id)
        self._instances.pop(instance_id, None)
        await self._save()
        return outcome

    async def forget(self, instance_id: str) -> None:
        """Drop the record of an instance that ended on its own, and stop its workers."""
        await self._release_workers(instance_id)
        if self._instances.pop(instance_id, None) is not None:
            await self._save()

    async def stop_all(self, grace_s: float | None = None) -> None:
        ids = list(self._instances)
        results = await asyncio.gather(
            *(self.stop(i, grace_s) for i in ids), return_exceptions=True
        )
        # Also those the API started for a peer: the daemon leaves no worker behind.
        await self.rpc_workers.stop_all()
        if self.remote_rpc is not None:
            await self.remote_rpc.release_all()
        await self.hosted_nodes.stop_all()
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]

    async def check_health(self, instance_id: str) -> bool:
        """Whether the instance answers its readiness probe as ready now."""
        instance = self.get(instance_id)
        async with httpx.AsyncClient(
            trust_env=False, verify=False
        ) as http:  # plain http on loopback
            instance.healthy = await probe_health(
                instance.record, http, self.engine_key(instance_id)
            )
        return instance.healthy

    async def recover(self) -> Recovery:
        """At daemon start: adopt or reap the engines the records name; drop stale records.

        A record names our engine only while its pid runs with the recorded create time
        and argv; otherwise the pid ended or was reused, and only the record goes.
        """
        adopted: list[Instance] = []
        reaped: list[InstanceRecord] = []
        stale: list[InstanceRecord] = []
        records = await asyncio.to_thread(self._store.load)
        for record in records:
            if record.id in self._instances:
                continue
            process = await asyncio.to_thread(find_process, record)
            if process is None:
                stale.append(record)
            elif self._on_leftover == "reap":
                log.info(
                    "Stopping engine %s (pid %s) left by an earlier run", record.id, record.pid
                )
                await terminate_tree(process, record.stop_grace_s)
                reaped.append(record)
            else:
                instance = Instance(record, InstanceState.ADOPTED, _process=process)
                self._instances[record.id] = instance
                adopted.append(instance)
        if adopted:
            async with httpx.AsyncClient(
                trust_env=False, verify=False
            ) as http:  # plain http on loopback
                healths = await asyncio.gather(
                    *(probe_health(i.record, http, self.engine_key(i.id)) for i in adopted)
                )
            for instance, healthy in zip(adopted, healths, strict=True):
                instance.healthy = healthy
                if not healthy:
                    log.warning(
                        "Adopted engine %s (pid %s) does not answer %s as ready",
                        instance.id,
                        instance.pid,
                        instance.record.probe_url,
                    )
        await self._save()
        # The workers of the instances kept serve on; those of any other are ended.
        await self.rpc_workers.recover({i.id for i in adopted})
        await self.prune_logs()  # the instances kept running are known now
        return Recovery(tuple(adopted), tuple(reaped), tuple(stale))

    async def prune_logs(self) -> None:
        """Delete the logs of instances no longer running past the age and size limits
        (docs/troubleshooting.md); never those of the instances running or starting."""
        keep = {Path(i.record.log_path).name for i in self._instances.values()} | self._starting
        keep |= self.hosted_nodes.log_names()
        await asyncio.to_thread(
            prune_engine_logs, self._log_dir, keep, time.time(), self._log_limits
        )

    async def _save(self) -> None:
        # One writer at a time, each writing what is current when it gets the lock.
        async with self._save_lock:
            records = [i.record for i in self.list()]
            await asyncio.to_thread(self._store.save, records)


def new_instance_id() -> str:
    return uuid.uuid4().hex[:12]


def find_process(record: InstanceRecord) -> psutil.Process | None:
    """The record's process if it still runs as the one we started, else None. Some systems
    hide other users' command lines: there the create time must do."""
    return recorded_process(record.pid, record.create_time, record.argv, hidden_argv_is_ours=True)


async def probe_health(record: InstanceRecord, http: httpx.AsyncClient, key: str) -> bool:
    try:
        response = await http.get(
            record.probe_url, headers=auth_headers(key), timeout=HEALTH_TIMEOUT_S
        )
    except httpx.HTTPError:
        return False
    return response.status_code == record.ready_status


async def terminate_tree(process: psutil.Process, grace_s: float) -> None:
    """Stop a process that is not our child, and all it started: gracefully, then kill.

    We started it in its own session, so on POSIX its process group also reaches workers
    that were reparented away from the tree.
    """
    try:
        tree = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    group = _own_group(process)
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
    for proc in tree:
        # psutil refuses to signal a pid that was reused by another process.
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.terminate()
    alive = await _wait_gone(tree, grace_s)
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.kill()
    alive = await _wait_gone(alive, REAP_TIMEOUT_S)
    for proc in alive:
        log.warning("Engine process %s did not end after SIGKILL", proc.pid)


async def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Those of `procs` still running after `timeout_s`.

    A process that exited but that its parent has not reaped yet (a zombie) counts as gone:
    it holds no memory or port, and only its parent, not us, can reap it.
    """
    deadline = time.monotonic() + timeout_s
    pending = list(procs)
    while True:
        pending = await asyncio.to_thread(_still_running, pending)
        if not pending or time.monotonic() >= deadline:
            return pending
        await asyncio.sleep(0.05)


def _still_running(procs: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in procs if _running(p)]


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _own_group(process: psutil.Process) -> int | None:
    """The process's group when it leads one of its own (never ours), else None."""
    if sys.platform == "win32":
        return None
    try:
        group = os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None
    if group != process.pid or group == os.getpgrp() or not process.is_running():
        return None
    return group
